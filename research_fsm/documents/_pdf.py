"""PDF text: **pdfium** (``pypdfium2``, whose wheel ships the library), else **pypdf**.

pdfium places words by where the glyphs are drawn, so kerned words stay whole ("you",
not pypdf's "Y ou") and ligature glyphs come out as their letters ("fi"); it reads
a manual several times faster. Its text is cleaned: lines end in ``\\n``, a word it
marks as hyphenated across a line end (U+FFFE) is joined, any ligature character
left is written out, control and private-use characters are dropped; running headers
and footers (a line at the edge of many pages) are dropped. Each page ends
in a blank line and starts a new passage. The title is the document's metadata title,
else the largest line of the first page, else its outline's first entry, else the file
name; the outline's entries are the passages' headings. A PDF in which pdfium finds no
text at all is read by pypdf too (which names a filter it cannot decode). Without
``pypdfium2`` the pages are read by pypdf, as before (the index says so once).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import io
import re
from typing import Any, Final

from ._types import Extracted

__all__ = [
    "ENGINE",
    "pdf_text",
    "pdfium_available",
    "pdfium_installed",
    "without_running_lines",
]

_LIGATURES: Final = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
_DROPPED: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f\ue000-\uf8ff\ufeff\uffff]")
"""Control characters, private-use glyphs (a font's unmapped ligatures), BOMs."""
_SOFT_HYPHEN_EOL: Final = re.compile("\ufffe[ \t]*\n[ \t]*")
_SPACES_AT_EOL: Final = re.compile(r"[ \t]+\n")
_SECTION_LABEL: Final = re.compile(r"^[A-Z][A-Z ]{1,20}$")
_MAN_NAME: Final = re.compile(r"^NAME\n(\S[^\n]{0,150}? [-\u2010-\u2014] [^\n]{3,150})$", re.M)
_RUNNING_HEADER: Final = 200
"""Characters of a page before its first outline entry's line that may be a running
header (the entry then heads the whole page)."""
RUNNING_SHARE: Final = 0.25
"""Share of a document's pages whose first or last lines hold the same line (numbers
aside) for it to be a running header or footer: dropped from every page."""
RUNNING_PAGES: Final = 3
"""...and at least this many pages."""
_EDGE_LINES: Final = 2
"""Lines at the top and at the bottom of a page where running headers and footers are."""
_MAX_OUTLINE: Final = 5_000
"""Outline entries read at most (a hostile file's outline can be endless)."""
ENGINE: Final = "pdfium"
"""The extractor used when ``pypdfium2`` can be imported (else ``pypdf``)."""


@functools.cache
def pdfium_available() -> bool:
    """Whether ``pypdfium2`` can be imported (PDFs are read by pdfium, else by pypdf);
    imports it."""
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        return False
    return True


def pdfium_installed() -> bool:
    """Whether ``pypdfium2`` is installed, without importing it (a quick check for a
    process that reads no PDF itself)."""
    return importlib.util.find_spec("pypdfium2") is not None


def clean(text: str) -> str:
    """pdfium's page text as plain lines (see the module's docstring)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SOFT_HYPHEN_EOL.sub("", text).replace("\ufffe", "-")
    text = _DROPPED.sub("", text.translate(_LIGATURES))
    return _SPACES_AT_EOL.sub("\n", text).strip()


def _edge_key(line: str) -> str:
    """A line as a running header repeats it: numbers (the page's) as one mark, spacing
    and case ignored."""
    return re.sub(r"\d+", "#", " ".join(line.split()).lower())


def _edges(lines: list[str]) -> list[int]:
    """The indexes of the first and last ``_EDGE_LINES`` non-blank lines of a page."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:]))


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running headers and footers: a line among the first or
    last lines of at least ``RUNNING_SHARE`` of the pages (and ``RUNNING_PAGES``), page
    numbers aside ("James, Schaffter PRODUCING PDFS WITH GROFF AND MOM", "-6-",
    "gnuplot 5.4 303"), is dropped where it is at a page's edge (a line the body repeats
    elsewhere stays)."""
    split = [page.split("\n") for page in pages]
    seen: dict[str, int] = {}
    for lines in split:
        for key in {_edge_key(lines[i]) for i in _edges(lines)}:
            seen[key] = seen.get(key, 0) + 1
    least = max(RUNNING_PAGES, RUNNING_SHARE * len(pages))
    running = {key for key, count in seen.items() if count >= least}
    if not running:
        return pages
    out = []
    for lines in split:
        dropped = {i for i in _edges(lines) if _edge_key(lines[i]) in running}
        out.append("\n".join(line for i, line in enumerate(lines) if i not in dropped).strip())
    return out


def _plausible(title: str) -> str:
    title = " ".join(title.split())
    if len(title) < 3 or not re.search(r"[^\W\d_]{2}", title) or title.startswith("# "):
        return ""
    lowered = title.lower()
    if lowered in {"untitled", "title", "document", "slide 1"} or lowered.endswith(
        (".dvi", ".tex", ".doc", ".docx", ".pdf", ".ps", ".indd")
    ):
        return ""
    return title[:200]


def _largest_line(textpage: Any, raw: str) -> str:
    """The first page's line set in the largest type (up to three such lines in a row)."""
    import pypdfium2.raw as pdfium_c

    count = pdfium_c.FPDFText_CountChars(textpage.raw)
    if count != len(raw) or count > 20_000:
        return ""  # characters outside the BMP: offsets would not match
    lines: list[tuple[float, str]] = []
    start = 0
    for end in [*(m.start() for m in re.finditer("\n", raw)), len(raw)]:
        line = raw[start:end].strip()
        if re.search(r"[^\W\d_]{2}", line):
            size = max(
                (pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in range(start, end)),
                default=0.0,
            )
            lines.append((round(size, 1), line))
        start = end + 1
    if not lines:
        return ""
    largest = max(size for size, _ in lines)
    if largest <= min(size for size, _ in lines):
        return ""  # one size on the whole page: no heading stands out
    first = next(n for n, (size, _) in enumerate(lines) if size == largest)
    taken = [lines[first][1]]
    for size, line in lines[first + 1 : first + 3]:
        if size != largest:
            break
        taken.append(line)
    title = _plausible(clean(" ".join(taken)))
    if _SECTION_LABEL.match(title) or len(title) > 120 or re.search(r"[.;:,]$", title):
        return ""  # a section's label (NAME, CONTENTS) or a sentence, not a title
    return title


def _man_name(text: str) -> str:
    """A manual page's purpose line, ``groff - a short reference ...``, after its
    ``NAME`` heading on the first page."""
    match = _MAN_NAME.search(text[:3000])
    return _plausible(" ".join(match.group(1).split())) if match else ""


def _outline(document: Any) -> list[tuple[int, int, str]]:
    """``(level, page index, title)`` of the outline's entries that point at a page."""
    entries: list[tuple[int, int, str]] = []
    try:
        for number, mark in enumerate(document.get_toc()):
            if number >= _MAX_OUTLINE:
                break
            destination = mark.get_dest()
            index = destination.get_index() if destination is not None else None
            title = " ".join(clean(mark.get_title() or "").split())
            if index is not None and index >= 0 and title:
                entries.append((mark.level, index, title[:200]))
    except Exception:  # a damaged outline: the text is still read
        return entries
    return entries


def _place(text: str, entries: list[tuple[int, str]]) -> tuple[str, list[tuple[int, int, str]]]:
    """A page's text with its outline ``entries`` (level, title) placed: a blank line
    before each entry's line, so a passage starts there (the first entry of the page
    is placed at the page's start when only a running header comes before it, or when
    its title is not found), and ``(offset, level, title)`` of each."""
    placed: list[tuple[int, int, str]] = []
    last = 0
    for number, (level, title) in enumerate(entries):
        at = text.lower().find(title.lower()[:60], last)
        if at < 0:
            placed.append((last, level + 1, title))
            continue
        line = text.rfind("\n", 0, at) + 1
        if number == 0 and line <= _RUNNING_HEADER:
            line = 0
        elif line > last and not text.startswith("\n", line - 2):
            text = f"{text[:line]}\n{text[line:]}"
            line += 1
        placed.append((line, level + 1, title))
        last = line
    return text, placed


def _pdfium(data: bytes, name: str) -> Extracted | str:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            return "encrypted PDF"
        return f"unreadable PDF ({' '.join(message.split())[:120]})"
    try:
        parts: list[str] = []
        pages: list[int] = []
        headings: list[tuple[int, int, str]] = []
        position = 0
        largest = ""
        outline = _outline(document)
        on_page: dict[int, list[tuple[int, str]]] = {}
        for level, index, title in outline:
            on_page.setdefault(index, []).append((level, title))
        cleaned: list[str] = []
        for index in range(len(document)):
            page = document[index]
            try:
                textpage = page.get_textpage()
                try:
                    raw = textpage.get_text_range()
                    if index == 0:
                        largest = _largest_line(textpage, raw)
                finally:
                    textpage.close()
            finally:
                page.close()
            cleaned.append(clean(raw))
        for index, page_text in enumerate(without_running_lines(cleaned)):
            text, placed = _place(page_text, on_page.get(index, []))
            text += "\n\n"
            headings += [(position + at, level, title) for at, level, title in placed]
            pages.append(position)
            parts.append(text)
            position += len(text)
        text = "".join(parts)
        metadata = document.get_metadata_dict(skip_empty=True)
        title = (
            _plausible(clean(str(metadata.get("Title", ""))))
            or _man_name(text)
            or largest
            or (_plausible(outline[0][2]) if outline else "")
            or name
        )
    except pdfium.PdfiumError as exc:
        return f"unreadable PDF ({' '.join(str(exc).split())[:120]})"
    except ctypes.ArgumentError as exc:
        return f"unreadable PDF ({type(exc).__name__})"
    finally:
        document.close()
    return Extracted(
        kind="pdf",
        title=title,
        text=text,
        pages=pages,
        headings=headings,
    )


def _pypdf(data: bytes, name: str) -> Extracted | str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return "encrypted PDF"
        pages: list[int] = []
        parts: list[str] = []
        position = 0
        read = [clean(page.extract_text() or "") for page in reader.pages]
        for page_text in without_running_lines(read):
            pages.append(position)
            text = page_text + "\n\n"
            parts.append(text)
            position += len(text)
        metadata = reader.metadata
        title = str(metadata.title or "").strip() if metadata is not None else ""
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        return f"unreadable PDF ({type(exc).__name__})"
    text = "".join(parts)
    first = next((line for line in text.splitlines() if _plausible(line)), "")
    return Extracted(
        kind="pdf",
        title=_plausible(title) or _man_name(text) or _plausible(first)[:120] or name,
        text=text,
        pages=pages,
        headings=[],
    )


def pdf_text(data: bytes, name: str, engine: str | None = None) -> Extracted | str:
    """The PDF's text, page by page, or why it cannot be read; ``engine``: ``pdfium``
    or ``pypdf`` (default: pdfium when installed)."""
    if engine is None:
        engine = ENGINE if pdfium_available() else "pypdf"
    if engine == "pdfium":
        read = _pdfium(data, name)
        if isinstance(read, str) or read.text.strip():
            return read
        # no text at all: pypdf may name why (an unsupported filter) or find some
        again = _pypdf(data, name)
        return again if isinstance(again, str) or again.text.strip() else read
    return _pypdf(data, name)
