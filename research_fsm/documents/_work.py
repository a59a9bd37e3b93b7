"""One file's indexing work, run in a worker process: its text, passages and the
bodies the full-text index stores. Module-level and picklable on purpose."""

from __future__ import annotations

from ._passages import Span, split
from ._read import Extracted, extract_data
from ._terms import cjk_bigrams

__all__ = ["Work", "prepare"]

Work = tuple[Extracted | str, list[Span], list[str]]
"""The text (or why the file is skipped), its passages, and each passage's indexed body."""


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
    bodies = [cjk_bigrams(extracted.text[span.start : span.end]) for span in spans]
    return extracted, spans, bodies
