"""One file's indexing work, run in a worker process: its text, passages and the
bodies the full-text index stores. Module-level and picklable on purpose."""

from __future__ import annotations

import logging
import pickle
import struct
import sys
from typing import IO, Any, Final

from ._passages import Span, split
from ._read import Extracted, extract_data
from ._terms import cjk_bigrams

__all__ = ["Work", "prepare", "read_frame", "write_frame"]

_HEADER: Final = struct.Struct(">Q")

Work = tuple[Extracted | str, list[Span], list[str | None]]
"""The text (or why the file is skipped), its passages, and each passage's indexed body
(``None``: the passage's text as it is, nothing sent twice)."""


def prepare(data: bytes, kind: str, name: str) -> Work:
    """Extract, split and prepare one file; never raises for a bad file."""
    extracted = extract_data(data, kind, name)
    if isinstance(extracted, str):
        return extracted, [], []
    try:
        spans = split(
            extracted.text,
            extracted.pages,
            headings=extracted.headings,
            anchors=extracted.anchors,
        )
    except Exception as exc:  # a failure skips the file
        return f"extractor failed ({type(exc).__name__} while splitting)", [], []
    bodies: list[str | None] = []
    for span in spans:
        passage = extracted.text[span.start : span.end]
        body = cjk_bigrams(passage)
        bodies.append(None if body == passage else body)
    return extracted, spans, bodies


def write_frame(stream: IO[bytes], value: object) -> None:
    """``value`` pickled, after its length."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next value written by ``write_frame``; ``EOFError`` when the pipe closed."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the worker's pipe closed")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the worker's pipe closed")
    return pickle.loads(data)


def _serve() -> None:
    """A worker process: jobs in on stdin, answers out on stdout, until stdin closes."""
    logging.disable(logging.CRITICAL)  # pypdf's warnings about damaged files
    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the answers' pipe
    while True:
        try:
            data, kind, name = read_frame(inbox)
        except EOFError:
            return
        write_frame(outbox, prepare(data, kind, name))


if __name__ == "__main__":
    _serve()
