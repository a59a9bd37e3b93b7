"""PDF fonts: Japanese PDFs embed Noto Sans JP (so they show without Japanese fonts
installed), their text extracts back, Latin words inside Japanese keep their spacing,
and without the pdf-ja extra a Japanese PDF is refused in one line before any work."""

from __future__ import annotations

import os
import subprocess
import sys
from io import BytesIO
from pathlib import Path
from typing import Any

from fontTools.ttLib import TTFont
from pypdf import PdfReader

from research_fsm.common.writer import DocSection, Document, bullets, paragraph, table, to_pdf

ROOT = Path(__file__).resolve().parents[2]
JAPANESE = "トヨタ自動車の概要です。More powerful examples を参照してください。"


def _document(language: str) -> Document:
    return Document(
        title="企業レポート：Toyota" if language == "ja" else "Company report: Toyota",
        language=language,
        sections=[
            DocSection(
                "概要",
                [
                    paragraph(JAPANESE),
                    bullets(["**売上高**: ¥45.1 trillion (2024) [S1]"]),
                    table([("項目", "値"), ("従業員数", "375,235")]),
                ],
            )
        ],
    )


def _fonts(pdf: bytes) -> list[dict[str, Any]]:
    """Every font dictionary the pages use."""
    fonts = []
    for page in PdfReader(BytesIO(pdf)).pages:
        for ref in page["/Resources"]["/Font"].values():
            fonts.append(ref.get_object())
    return fonts


def _text(pdf: bytes) -> str:
    return "".join(page.extract_text() for page in PdfReader(BytesIO(pdf)).pages)


def test_japanese_pdf_embeds_noto_sans_jp() -> None:
    """A Japanese PDF embeds Noto Sans JP as TrueType (a FontFile2 stream), regular and bold."""
    noto = [f for f in _fonts(to_pdf(_document("ja"))) if "NotoSansJP" in str(f["/BaseFont"])]
    embedded = {
        str(f["/BaseFont"]).split("+")[-1]
        for f in noto
        if "/FontFile2" in f["/FontDescriptor"].get_object()
    }
    assert {"NotoSansJP-Regular", "NotoSansJP-Bold"} == embedded


def test_japanese_pdf_uses_no_unembedded_cid_font() -> None:
    """No font of a Japanese PDF is a reader-supplied CID font (which shows blank without one)."""
    subtypes = {str(f["/Subtype"]) for f in _fonts(to_pdf(_document("ja")))}
    assert set() == subtypes & {"/Type0"}


STANDARD_14 = {"/Helvetica", "/Helvetica-Bold", "/ZapfDingbats"}


def _width_mismatches(font: dict[str, Any]) -> list[int]:
    """The codes whose width in the PDF differs from the embedded glyph's own advance."""
    program = font["/FontDescriptor"].get_object()["/FontFile2"].get_data()
    embedded = TTFont(BytesIO(program))
    scale = 1000 / embedded["head"].unitsPerEm
    cmap = embedded["cmap"].tables[0].cmap
    first, widths = font["/FirstChar"], font["/Widths"]
    return [
        code
        for code in range(first, first + len(widths))
        if code in cmap and abs(widths[code - first] - embedded["hmtx"][cmap[code]][0] * scale) > 1
    ]


def test_japanese_pdf_places_text_by_the_embedded_glyph_widths() -> None:
    """Every non-standard font is embedded and its widths are its glyphs' own, so Latin
    words inside Japanese are not spaced out by a reader's substitute font."""
    fonts = [f for f in _fonts(to_pdf(_document("ja"))) if str(f["/BaseFont"]) not in STANDARD_14]
    assert (True, True, True) == (
        len(fonts) >= 2,  # regular and bold
        all("/FontFile2" in f.get("/FontDescriptor", {}) for f in fonts),
        all(_width_mismatches(f) == [] for f in fonts),
    )


def test_japanese_pdf_text_round_trips_with_latin_words_unspaced() -> None:
    """The Japanese text extracts back whole, "More powerful examples" not spaced out."""
    text = _text(to_pdf(_document("ja")))
    assert ("トヨタ自動車の概要です。" in text, "More powerful examples" in text) == (True, True)
    assert ("企業レポート：Toyota" in text, "¥45.1 trillion" in text) == (True, True)


def test_english_pdf_keeps_the_standard_fonts() -> None:
    """English PDFs still use the standard fonts every reader has; nothing is embedded."""
    names = {str(f["/BaseFont"]) for f in _fonts(to_pdf(_document("en")))}
    assert {"/Helvetica", "/Helvetica-Bold", "/ZapfDingbats"} == names


def _without_font(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The CLI run with the font's package made unimportable."""
    code = (
        "import sys; sys.modules['justmytype_intl_cjk'] = None; "
        "from research_fsm.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = os.environ | {"RESEARCH_FSM_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_japanese_pdf_without_the_extra_is_refused_in_one_line(tmp_path: Path) -> None:
    """report --lang ja --pdf without pdf-ja: exit 1, one line naming the extra, no folder."""
    done = _without_font("report", "Toyota", "--lang", "ja", "--pdf", home=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert (1, 1) == (done.returncode, len(lines))
    assert "pip install 'research-fsm[pdf-ja]'" in lines[0]
    assert [] == sorted(tmp_path.rglob("report.md"))


def test_japanese_markdown_needs_no_extra(tmp_path: Path) -> None:
    """report --lang ja without --pdf works without the pdf-ja extra."""
    done = _without_font("report", "Toyota", "--lang", "ja", home=tmp_path)
    assert 0 == done.returncode, done.stderr
