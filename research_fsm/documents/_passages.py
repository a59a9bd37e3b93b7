"""Extracted text split into passages that keep their place in the file."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_CHARS", "MIN_CHARS", "Span", "split"]

MIN_CHARS: Final = 600
"""A passage grows paragraph by paragraph until it has at least this many characters."""
MAX_CHARS: Final = 1200
"""A passage never has more (a longer paragraph is cut at sentence ends)."""
SECTION_CHARS: Final = 300
"""A heading starts a new passage once the current one has this many characters."""
_PARAGRAPH: Final = re.compile(r"\n\s*\n")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_HEADING: Final = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_NEWLINE: Final = re.compile("\n")
_CLEAN_BREAK: Final = re.compile(r"(?<=[.!?:;。！？])\n|\n(?=\s*(?:[•◦▪‣*-]|\d{1,3}[.)])\s)")
"""A line break after a sentence's end or before a list item: where a long run of lines
(a PDF page, a man page) is best cut in two."""
_FENCE: Final = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.M)


@dataclass(frozen=True, slots=True)
class Span:
    """A passage's place: ``text[start:end]``, the file's lines, page and headings."""

    start: int
    end: int
    line_start: int
    line_end: int
    page: int | None
    headings: tuple[str, ...]


def _pieces(text: str) -> list[tuple[int, int]]:
    """Paragraphs (and sentences of over-long paragraphs) as (start, end), trimmed; a
    fenced code block with empty lines in it stays one piece."""
    found: list[tuple[int, int]] = []
    block_start = 0
    fences = [m.start() for m in _FENCE.finditer(text)]  # each on a line of its own
    for match in [*_PARAGRAPH.finditer(text), None]:
        end = match.start() if match is not None else len(text)
        if fences and (bisect_left(fences, end) - bisect_left(fences, block_start)) % 2:
            continue  # inside a code block: the paragraph goes on
        found += _cut(text, block_start, end)
        if match is not None:
            block_start = match.end()
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
            pieces += _hard(
                text, position, match.start() if match.start() > position else match.end()
            )
            position = match.end()
    pieces += _hard(text, position, end)
    return [(a, b) for a, b in pieces if b > a]


def _hard(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``start``-``end`` cut into pieces of at most ``MAX_CHARS``, each cut in its second
    half at the last line break ending a sentence or starting a list item, else the last
    line break, else the last space: never inside a word."""
    pieces: list[tuple[int, int]] = []
    while end - start > MAX_CHARS:
        limit = start + MAX_CHARS
        half = start + MAX_CHARS // 2
        cut = -1
        for found in _CLEAN_BREAK.finditer(text, half, limit):
            cut = found.end()  # the last line ending a sentence or starting an item
        if cut < 0:
            cut = text.rfind("\n", half, limit)
        if cut < 0:
            cut = max(text.rfind(" ", half, limit), text.rfind("\t", half, limit))
        if cut < 0:
            cut = limit  # no space in half a passage: a word that long is cut where it must be
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append((start, end))
    return pieces


def _paths(headings: list[tuple[int, int, str]]) -> list[tuple[str, ...]]:
    """Each heading's path: the headings it sits under, outermost first, and itself."""
    stack: list[tuple[int, str]] = []
    paths = []
    for _, level, title in headings:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title[:200]))
        paths.append(tuple(t for _, t in stack))
    return paths


def split(
    text: str,
    pages: list[int] | None = None,
    *,
    headings: list[tuple[int, int, str]] | None = None,
    anchors: list[tuple[int, int]] | None = None,
    blocks: list[tuple[int, int]] | None = None,
) -> list[Span]:
    """``text`` as passages of about ``MIN_CHARS``-``MAX_CHARS`` characters, a new one at
    a heading once the current one has ``SECTION_CHARS``. ``pages`` holds each page's
    start offset (PDFs); ``headings`` ``(offset, level, title)`` (default: the Markdown
    ``#`` lines); ``anchors`` ``(offset, line in the file)`` when the text's lines are
    not the file's; ``blocks`` the paragraphs' ``(start, end)`` when the extractor
    knows them (default: found at blank lines)."""
    newlines = [] if anchors else [m.start() for m in _NEWLINE.finditer(text)]
    if headings is None:
        headings = [(m.start(), len(m.group(1)), m.group(2)) for m in _HEADING.finditer(text)]
    heading_at = [at for at, _, _ in headings]
    heading_starts = set(heading_at)
    paths = _paths(headings)
    anchor_at = [at for at, _ in anchors] if anchors else []

    def line(offset: int) -> int:
        if anchors:
            index = bisect_right(anchor_at, offset) - 1
            return anchors[max(index, 0)][1]
        return bisect_right(newlines, offset - 1) + 1

    spans: list[Span] = []
    group_start = group_end = -1  # the passage being grown: from its first piece's start
    body = False  # the group holds more than headings

    def flush() -> None:
        nonlocal body, group_start
        if group_start < 0:
            return
        index = bisect_right(heading_at, group_start) - 1
        page = bisect_right(pages, group_start) if pages else None
        path = paths[index] if index >= 0 else ()
        spans.append(
            Span(group_start, group_end, line(group_start), line(group_end - 1), page, path)
        )
        group_start = -1
        body = False

    if blocks is None:
        pieces = _pieces(text)
    else:
        pieces = []
        for start, end in blocks:
            if end - start > MAX_CHARS:
                pieces += _cut(text, start, end)
            else:
                pieces.append((start, end))
    for start, end in pieces:
        at_heading = start in heading_starts
        if group_start >= 0 and (
            end - group_start > MAX_CHARS
            or (pages and bisect_right(pages, group_start) != bisect_right(pages, start))
            or (at_heading and body and group_end - group_start >= SECTION_CHARS)
        ):
            flush()
        if group_start < 0:
            group_start = start
        group_end = end
        body = body or not at_heading
        if end - group_start >= MIN_CHARS:
            flush()
    flush()
    return spans
