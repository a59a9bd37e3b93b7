"""The report writer: a ``Document`` (title, sections of paragraphs, bullet lists and
tables) rendered as Markdown and as PDF, in English or Japanese.

It knows nothing about companies: reports and deep research both build a ``Document``
and call ``to_markdown`` / ``to_pdf``. PDFs use reportlab: Helvetica for English (one
of the PDF standard fonts every reader has), and for Japanese Noto Sans JP, embedded
as a subset (``_jafont``; the ``pdf-ja`` extra ships it), so the glyphs show on a
machine without Japanese fonts and the text stays selectable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from io import BytesIO
from typing import Final, Literal

from ._jafont import MissingFontError

__all__ = [
    "Block",
    "DocSection",
    "Document",
    "MissingFontError",
    "bullets",
    "check_pdf_fonts",
    "code",
    "drop_urls",
    "md_escape",
    "md_url",
    "paragraph",
    "table",
    "to_markdown",
    "to_pdf",
]

BlockKind = Literal["p", "ul", "table", "code"]
_MD_SPECIAL: Final = re.compile(r"([\\`*_<>#|\[\]!])")
_URL_UNSAFE: Final = re.compile(r"[^\x21-\x7e]|[<>\"`{}|\\^]")
_URL: Final = re.compile(r"https?://[^\s<>\"'\])]+")
_BOLD: Final = re.compile(r"\*\*(.+?)\*\*")
_ITALIC: Final = re.compile(r"(?<![\w\\])_(.+?)_(?!\w)")


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph (``p``: one text), a bullet list (``ul``: items), a table
    (``table``: rows, the first the header) or code (``code``: its lines, shown as
    written, never read as markup). Text may use ``**bold**``."""

    kind: BlockKind
    items: tuple[str, ...] | tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class DocSection:
    """A titled section."""

    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Document:
    """What the writer renders."""

    title: str
    language: str
    sections: list[DocSection]


def paragraph(text: str) -> Block:
    """A paragraph block."""
    return Block("p", (text,))


def bullets(items: list[str]) -> Block:
    """A bullet-list block."""
    return Block("ul", tuple(items))


def code(lines: list[str]) -> Block:
    """A code block: its lines verbatim (a fenced block in Markdown, monospace in PDF)."""
    return Block("code", tuple(lines))


def table(rows: list[tuple[str, ...]]) -> Block:
    """A table block (first row: header)."""
    return Block("table", tuple(rows))


def md_escape(value: str) -> str:
    """Data text made inert in Markdown: no headings, emphasis, HTML, table breaks,
    links (``[x](javascript:...)``) nor images (``![x](http://...)``)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(value.split()))


def drop_urls(text: str, keep: set[str] | frozenset[str] = frozenset()) -> str:
    """``text`` with every URL not in ``keep`` replaced by ``(link removed)``: a title
    or quote from the web shows no address that was not retrieved."""

    def replace(match: re.Match[str]) -> str:
        url = match.group().rstrip(".,;:")
        return match.group() if url in keep else "(link removed)" + match.group()[len(url) :]

    return _URL.sub(replace, text)


def md_url(url: str) -> str:
    """An http(s) URL as a Markdown autolink ``<...>``, every character that could end
    it or start markup percent-encoded; any other URL as inert text."""
    if not url.lower().startswith(("http://", "https://")):
        return md_escape(url)
    safe = _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), url)
    return f"<{safe}>"


def _md_block(block: Block) -> str:
    if block.kind == "p":
        return str(block.items[0])
    if block.kind == "code":
        lines = [str(line) for line in block.items]
        ticks = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
        fence = "`" * max(3, ticks + 1)  # longer than any run of backticks inside
        return "\n".join([fence, *lines, fence])
    if block.kind == "ul":
        return "\n".join(f"- {item}" for item in block.items)
    rows = [tuple(row) for row in block.items]
    header, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def to_markdown(doc: Document) -> str:
    """The document as Markdown (ATX headings, one blank line between blocks)."""
    parts = [f"# {doc.title}"]
    for section in doc.sections:
        parts.append(f"## {section.title}")
        parts += [_md_block(block) for block in section.blocks]
    return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    """Markdown inline text (escapes removed) as reportlab paragraph markup."""
    marked = _ITALIC.sub(lambda m: f"\x01{m.group(1)}\x02", text)
    plain = re.sub(r"\\(.)", r"\1", marked)
    html = _BOLD.sub(r"<b>\1</b>", escape(plain, quote=False))
    return html.replace("\x01", "").replace("\x02", "")


def check_pdf_fonts(language: str, formats: tuple[str, ...]) -> None:
    """Before a run that will write a PDF: ``MissingFontError`` when a Japanese PDF is
    asked for and the ``pdf-ja`` extra that ships its font is not installed."""
    if language == "ja" and "pdf" in formats:
        from ._jafont import font_file

        font_file()


def _text(doc: Document) -> str:
    """Every character the document shows (for the Japanese font's subset)."""
    parts = [doc.title]
    for section in doc.sections:
        parts.append(section.title)
        for block in section.blocks:
            for item in block.items:
                parts.extend([item] if isinstance(item, str) else item)
    return "".join(parts)


def _fonts(doc: Document) -> tuple[str, str]:
    if doc.language != "ja":
        return "Helvetica", "Helvetica-Bold"
    from ._jafont import japanese_fonts

    return japanese_fonts(_text(doc))


def to_pdf(doc: Document) -> bytes:
    """The document as PDF bytes (blocking and CPU-bound: call it from a thread).
    Japanese needs the ``pdf-ja`` extra: ``MissingFontError`` without it."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import (
        ListFlowable,
        Paragraph,
        Preformatted,
        SimpleDocTemplate,
        Spacer,
        Table,
    )

    body_font, bold_font = _fonts(doc)
    wrap = "CJK" if doc.language == "ja" else "LTR"
    base = ParagraphStyle("body", fontName=body_font, fontSize=10, leading=14, wordWrap=wrap)
    h1 = ParagraphStyle("h1", parent=base, fontName=bold_font, fontSize=17, leading=22)
    h2 = ParagraphStyle(
        "h2", parent=base, fontName=bold_font, fontSize=13, leading=18, spaceBefore=8, spaceAfter=4
    )
    mono = ParagraphStyle(
        "code",
        parent=base,
        fontName=body_font if doc.language == "ja" else "Courier",
        fontSize=9,
        leading=12,
        leftIndent=12,
    )
    story: list[object] = [Paragraph(_inline(doc.title), h1), Spacer(1, 4 * mm)]
    for section in doc.sections:
        story.append(Paragraph(_inline(section.title), h2))
        for block in section.blocks:
            if block.kind == "p":
                story.append(Paragraph(_inline(str(block.items[0])), base))
            elif block.kind == "ul":
                items = [Paragraph(_inline(str(item)), base) for item in block.items]
                story.append(ListFlowable(items, bulletType="bullet", leftIndent=12))
            elif block.kind == "code":  # plain text: Preformatted reads no markup
                story.append(Preformatted("\n".join(str(i) for i in block.items), mono))
            else:
                rows = [[Paragraph(_inline(cell), base) for cell in row] for row in block.items]
                grid = Table(rows, repeatRows=1)
                grid.setStyle([("GRID", (0, 0), (-1, -1), 0.4, colors.grey)])
                story.append(grid)
            story.append(Spacer(1, 2 * mm))
    out = BytesIO()
    pdf = SimpleDocTemplate(
        out,
        pagesize=A4,
        title=doc.title,
        lang=doc.language,
        leftMargin=18 * mm,
        rightMargin=18 * mm,
    )
    pdf.build(story)
    return out.getvalue()
