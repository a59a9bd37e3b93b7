"""One file's indexing work, run in a worker process: its bytes read and hashed, its
text, passages and the bodies the full-text index stores. Module-level and picklable
on purpose; what travels back is plain tuples and strings, the least a pipe carries."""

from __future__ import annotations

import hashlib
import logging
import pickle
import re
import struct
import sys
from pathlib import Path
from typing import IO, Any, Final, NamedTuple

from ._passages import split
from ._pdf import pdfium_available
from ._read import extract_data, read_bytes
from ._symbols import with_symbols
from ._terms import cjk_terms, has_cjk

__all__ = [
    "HEADING_SEPARATOR",
    "READY",
    "Job",
    "Prepared",
    "Work",
    "prepare",
    "read_frame",
    "run_job",
    "write_frame",
]

_HEADER: Final = struct.Struct(">Q")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
READY: Final = "ready"
"""A worker's first answer: it has started and is waiting for files."""
HEADING_SEPARATOR: Final = "\x1f"
"""Between the headings of a passage's heading path in the index."""

SpanRow = tuple[int, int, int, int, int | None, str | None]
"""A passage: start and end in the text, first and last line of the file, page, and
its heading path (joined by ``HEADING_SEPARATOR``; ``None``: under no heading)."""


class Prepared(NamedTuple):
    """A file ready for the index."""

    kind: str
    """markdown, text, html, pdf or metadata."""
    title: str
    """The document's title."""
    text: str
    """The extracted text."""
    spans: list[SpanRow]
    """Its passages."""
    bodies: list[str | None]
    """Each passage's indexed body (``None``: the passage's text as it is, not sent
    twice)."""


Work = tuple[str, Prepared | str]
"""The SHA-256 of the file's bytes (``""`` when they could not be read), and the file
prepared or why it is skipped."""
Job = tuple[str, str | None, bytes | None, str, str]
"""``(path, root, data, kind, name)``: a file to prepare; ``data`` ``None``: read it
(below ``root``, without following links)."""


def index_body(passage: str) -> str:
    """What the full-text index holds of a passage: Japanese or Chinese as words (or
    bigrams), and the synthetic terms of its option names and symbols (``_symbols``)."""
    body = cjk_terms(passage) if has_cjk(passage) else passage
    return with_symbols(body, passage)


def prepare(data: bytes, kind: str, name: str) -> Prepared | str:
    """Extract, split and prepare one file's bytes, or why not; never raises."""
    extracted = extract_data(data, kind, name)
    if isinstance(extracted, str):
        return extracted
    # a lone surrogate (from a PDF's broken UTF-16) cannot be stored: shown as U+FFFD
    text = _SURROGATE.sub("\ufffd", extracted.text)
    title = _SURROGATE.sub("\ufffd", extracted.title)
    try:
        spans = split(
            text,
            extracted.pages,
            headings=extracted.headings,
            anchors=extracted.anchors,
            blocks=extracted.blocks,
        )
    except Exception as exc:  # a failure skips the file
        return f"extractor failed ({type(exc).__name__} while splitting)"
    rows: list[SpanRow] = [
        (
            span.start,
            span.end,
            span.line_start,
            span.line_end,
            span.page,
            HEADING_SEPARATOR.join(span.headings) or None,
        )
        for span in spans
    ]
    bodies: list[str | None] = [None] * len(spans)
    for number, span in enumerate(spans):
        passage = text[span.start : span.end]
        body = index_body(passage)
        bodies[number] = None if body == passage else body
    return Prepared(extracted.kind, title, text, rows, bodies)


def run_job(job: Job) -> Work:
    """Read (unless given), hash and prepare one file; never raises."""
    path, root, data, kind, name = job
    if data is None:
        try:
            data = read_bytes(Path(path), Path(root) if root is not None else None)
        except OSError as exc:
            return "", f"cannot read it ({exc})"
    return hashlib.sha256(data).hexdigest(), prepare(data, kind, name)


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
    pdfium_available()  # its import is part of starting, not of the first file's time
    write_frame(outbox, READY)
    while True:
        try:
            job = read_frame(inbox)
        except EOFError:
            return
        write_frame(outbox, run_job(job))


if __name__ == "__main__":
    # run from the package's module, not this ``__main__`` copy: what is pickled back
    # must name classes the parent can import
    from research_fsm.documents._work import _serve as serve

    serve()
