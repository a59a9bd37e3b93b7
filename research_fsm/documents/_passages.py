"""Extracted text split into passages that keep their place in the file."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_CHARS", "MIN_CHARS", "Span", "split"]

MIN_CHARS: Final = 600
"""A passage grows paragraph by paragraph until it has at least this many characters."""
MAX_CHARS: Final = 1200
"""A passage never has more (a longer paragraph is cut at sentence ends)."""
_PARAGRAPH: Final = re.compile(r"\n\s*\n")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_HEADING: Final = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


@dataclass(frozen=True, slots=True)
class Span:
    """A passage's place: ``text[start:end]``, lines, page and heading."""

    start: int
    end: int
    line_start: int
    line_end: int
    page: int | None
    heading: str | None


def _pieces(text: str) -> list[tuple[int, int]]:
    """Paragraphs (and sentences of over-long paragraphs) as (start, end), trimmed."""
    found: list[tuple[int, int]] = []
    position = 0
    for match in [*_PARAGRAPH.finditer(text), None]:
        end = match.start() if match is not None else len(text)
        found += _cut(text, position, end)
        if match is not None:
            position = match.end()
    return found


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start <= MAX_CHARS:
        return [(start, end)] if end > start else []
    pieces: list[tuple[int, int]] = []
    position = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.end() - position >= MIN_CHARS:
            pieces += _hard(position, match.start() if match.start() > position else match.end())
            position = match.end()
    pieces += _hard(position, end)
    return [(a, b) for a, b in pieces if b > a]


def _hard(start: int, end: int) -> list[tuple[int, int]]:
    return [(a, min(a + MAX_CHARS, end)) for a in range(start, end, MAX_CHARS)]


def split(text: str, pages: list[int] | None = None) -> list[Span]:
    """``text`` as passages of about ``MIN_CHARS``-``MAX_CHARS`` characters;
    ``pages`` holds each page's start offset (PDFs)."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    headings = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)]
    spans: list[Span] = []
    group: list[tuple[int, int]] = []

    def flush() -> None:
        if not group:
            return
        start, end = group[0][0], group[-1][1]
        before = [title for at, title in headings if at <= start]
        page = bisect_right(pages, start) if pages else None
        spans.append(
            Span(
                start,
                end,
                bisect_right(newlines, start - 1) + 1,
                bisect_right(newlines, end - 1) + 1,
                page,
                before[-1][:200] if before else None,
            )
        )
        group.clear()

    for start, end in _pieces(text):
        crosses_page = (
            pages and group and bisect_right(pages, group[0][0]) != bisect_right(pages, start)
        )
        if group and (end - group[0][0] > MAX_CHARS or crosses_page):
            flush()
        group.append((start, end))
        if end - group[0][0] >= MIN_CHARS:
            flush()
    flush()
    return spans
