"""Man pages as AsciiDoc and DocBook render them to HTML (``manpages/``: cut from the
pages Debian's ``tig`` and ``docbook-xsl-doc-html`` packages ship): the NAME line (the
command's one-line purpose) and the SYNOPSIS are indexed as text, the navigation bars
are not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from research_fsm.documents import DocumentIndex
from research_fsm.documents._html import html_text

MANPAGES = Path(__file__).parent / "manpages"


@pytest.fixture
async def index(tmp_path: Path) -> DocumentIndex:
    """The index of a folder holding the man pages."""
    root = tmp_path / "docs"
    shutil.copytree(MANPAGES, root)
    opened = await DocumentIndex.open(root, cache_dir=tmp_path / "cache")
    yield opened  # type: ignore[misc]
    await opened.aclose()


def test_an_asciidoc_man_page_keeps_its_name_line_and_synopsis() -> None:
    """The header AsciiDoc puts the NAME section in is content, not page chrome."""
    page = html_text((MANPAGES / "tig.1.html").read_text(encoding="utf-8"))
    assert "tig - text-mode interface for Git" in page.text.split("\n\n")
    assert ["tig(1) Manual Page", "NAME", "SYNOPSIS", "DESCRIPTION"] == [
        title for _, _, title in page.headings
    ]
    synopsis = page.text.split("SYNOPSIS", 1)[1]
    assert synopsis.lstrip().startswith("```\ntig        [options] [revisions] [--] [paths]")


def test_a_docbook_reference_page_drops_its_navigation_bars() -> None:
    """DocBook's Prev/Up/Next bars go; the refname line and synopsis stay."""
    page = html_text((MANPAGES / "page.height.html").read_text(encoding="utf-8"))
    assert "Prev" not in page.text and "Next" not in page.text
    assert "page.height — The height of the physical page" in page.text
    assert '<xsl:param name="page.height">' in page.text


def test_a_permalink_sign_no_class_marks_is_dropped() -> None:
    """A term line ending in a bare "¶" (a theme's permalink) keeps its words only."""
    page = html_text("<html><body><dl><dt>sleep(seconds)¶</dt><dd>Waits.</dd></dl></body></html>")
    assert "sleep(seconds)\nWaits." == page.text


async def test_the_purpose_line_is_found_by_its_words(index: DocumentIndex) -> None:
    """Searching the purpose's words finds the NAME passage of the man page."""
    found = await index.search("text-mode interface git")
    (passage,) = [p for p in found if "tig - text-mode" in p.text]
    assert "tig.1.html" == passage.path
    assert "tig(1) Manual Page" == passage.headings[0]
