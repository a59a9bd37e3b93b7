"""PDF text: words spaced as drawn (groff's runs placed one by one), ligatures as their
letters, titles from the metadata, the largest line or the outline (never a stray
"# " line), the outline's entries as headings, and pypdf as the fallback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from research_fsm.documents import DocumentIndex, _index
from research_fsm.documents._pdf import pdf_text
from research_fsm.documents._read import Extracted


def raw_pdf(content: bytes) -> bytes:
    """A one-page PDF drawing ``content`` with Times-Roman as ``/F1``."""
    bodies = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(bodies, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return bytes(out)


def groff_style_line(runs: list[str]) -> bytes:
    """One line set as groff sets it: each run shown on its own and the next placed by
    ``Td`` right after it, word spacing (``Tw``) changed from run to run."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    ops = [b"BT /F1 10 Tf 1 0 0 1 167.11 440.708 Tm"]
    for number, run in enumerate(runs):
        spacing = 2.5 if number % 2 else 0.0
        width = stringWidth(run, "Times-Roman", 10) + spacing * run.count(" ")
        ops.append(b"%.3f Tw [(%s)] TJ %.3f 0 Td" % (spacing, run.encode(), width - 0.25))
    return raw_pdf(b"\n".join([*ops, b"ET"]))


def extracted(data: bytes, engine: str | None = None) -> Extracted:
    """``pdf_text``'s result, which must be text."""
    result = pdf_text(data, "doc.pdf", engine)
    assert isinstance(result, Extracted), result
    return result


def test_runs_placed_one_by_one_read_as_whole_words() -> None:
    """Runs split inside words ("softw|are", "e|xecute") and word spacing that changes
    between runs: no space inside a word, none lost between words."""
    pytest.importorskip("pypdfium2")
    runs = [
        "Grof",
        "f is free softw",
        "are. Y",
        "ou can e",
        "xecute it. In",
        "v",
        "ok",
        "ed in it.",
    ]
    text = extracted(groff_style_line(runs)).text
    assert "Groff is free software. You can execute it. Invoked in it." == text.strip()


def ligature_pdf() -> bytes:
    """A line drawn with the "fi" and "fl" ligature glyphs of an embedded TrueType font."""
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    fonts = Path(reportlab.__file__).parent / "fonts"
    pdfmetrics.registerFont(TTFont("Vera", str(fonts / "Vera.ttf")))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setFont("Vera", 12)
    pdf.drawString(72, 720, "The package de\ufb01nes \ufb02ags for the con\ufb01g \ufb01le.")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


@pytest.mark.parametrize("engine", [None, "pypdf"])
def test_ligatures_come_out_as_their_letters(engine: str | None) -> None:
    """No ligature character, replacement character or private-use glyph is left, with
    pdfium or with the pypdf fallback."""
    text = extracted(ligature_pdf(), engine).text
    assert "The package defines flags for the config file." == text.strip()


async def test_a_ligature_word_is_found_by_its_letters(tmp_path: Path) -> None:
    """A search for "defines" finds the PDF that draws it with a ligature glyph."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "package.pdf").write_bytes(ligature_pdf())
    async with await DocumentIndex.open(folder, cache_dir=tmp_path / "cache") as index:
        assert ["package.pdf"] == [p.path for p in await index.search("defines config")]


def titled_pdf(*, outline: bool) -> bytes:
    """Two pages with no metadata title: a small "# ..." line, then a heading in large
    type, body text; each page in the outline when ``outline``."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for number, heading in enumerate(["Installing the Widget", "Removing the Widget"]):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 760, "# build 2024-05-01 draft")
        pdf.setFont("Helvetica-Bold", 20)
        pdf.drawString(72, 720, heading)
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 690, f"Step {number + 1}: run the widget tool with sprocket{number}.")
        if outline:
            pdf.bookmarkPage(f"p{number}")
            pdf.addOutlineEntry(heading, f"p{number}", level=0)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_the_title_is_the_largest_line_never_a_hash_line() -> None:
    """No metadata title, no outline: the title is the first page's line in the largest
    type, not the line starting with "# "."""
    pytest.importorskip("pypdfium2")
    assert "Installing the Widget" == extracted(titled_pdf(outline=False)).title


async def test_outline_entries_are_the_passages_headings(tmp_path: Path) -> None:
    """Each page's passage sits under its outline entry."""
    pytest.importorskip("pypdfium2")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "widget.pdf").write_bytes(titled_pdf(outline=True))
    async with await DocumentIndex.open(folder, cache_dir=tmp_path / "cache") as index:
        (first,) = await index.search("sprocket0")
        (second,) = await index.search("sprocket1")
    assert ("Installing the Widget", 1) == (first.heading, first.page)
    assert ("Removing the Widget", 2) == (second.heading, second.page)
    assert "Installing the Widget" == first.title


async def test_without_pdfium_the_index_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pypdfium2 missing: one warning naming it, however many folders are opened."""
    monkeypatch.setattr(_index, "pdfium_installed", lambda: False)
    monkeypatch.setattr(_index, "_said", [])
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(ligature_pdf())
    with capture_logs() as logs:
        for number in range(2):
            cache = tmp_path / f"cache-{number}"
            async with await DocumentIndex.open(folder, cache_dir=cache, workers=1):
                pass
    said = [e for e in logs if "pypdfium2 is not installed" in e["event"]]
    assert 1 == len(said) and "warning" == said[0]["log_level"]


def paged_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with the given lines on each page, top to bottom (reportlab)."""
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    sheet = canvas.Canvas(out)
    for lines in pages:
        for number, line in enumerate(lines):
            sheet.drawString(72, 760 - 16 * number, line)
        sheet.showPage()
    sheet.save()
    return out.getvalue()


@pytest.mark.parametrize("engine", ["pdfium", "pypdf"])
def test_running_headers_and_footers_are_dropped(engine: str) -> None:
    """A header on every page (the author and title, as groff's mom sets them) and a page
    number footer are no text of any page; the body's lines, a heading that opens one page
    among six, and a line the body repeats stay."""
    if engine == "pdfium":
        pytest.importorskip("pypdfium2")
    body = [
        ["Options", "The -Tpdf option makes a PDF.", "Options"],
        ["Syntax:", "groff -Tpdf file > out.pdf", "It writes the file."],
        ["Fonts are embedded.", "See the mom manual.", "Fonts come from the system."],
        ["Bookmarks come from headings.", "Links are kept.", "Images are included."],
        ["The outline is built.", "Metadata is set.", "Page labels follow."],
        ["Compression is on.", "Pdfmark is needed for -Tps.", "The end."],
    ]
    pages = [
        ["James, Schaffter PRODUCING PDFS WITH GROFF AND MOM", *lines, f"-{n}-"]
        for n, lines in enumerate(body, 1)
    ]
    text = extracted(paged_pdf(pages), engine).text
    assert "Schaffter" not in text and "PRODUCING PDFS" not in text
    assert not any(line.strip().startswith("-") for line in text.splitlines())
    for line in (line for lines in body for line in lines):
        assert line in text, line
    assert 2 == text.count("Options\n")


def test_a_short_document_keeps_every_line() -> None:
    """Two pages are too few to tell a running header from the text: both keep it."""
    pytest.importorskip("pypdfium2")
    pages = [["Tig manual", "Press / to search."], ["Tig manual", "Press n for the next match."]]
    text = extracted(paged_pdf(pages)).text
    assert 2 == text.count("Tig manual")
