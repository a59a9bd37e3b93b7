"""Clean text in: each rule of reading HTML, Markdown and package metadata, on pages as
Sphinx, MkDocs (Material) and GitHub render them (``pages/``) and a README written the
way projects write them; passages cite the file's own lines and heading path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from research_fsm.documents import DocumentIndex, Passage

PAGES = Path(__file__).parent / "pages"


@pytest.fixture
async def index(tmp_path: Path) -> DocumentIndex:
    """The index of a folder holding the sample pages and README."""
    root = tmp_path / "docs"
    shutil.copytree(PAGES, root)
    opened = await DocumentIndex.open(root, cache_dir=tmp_path / "cache")
    yield opened  # type: ignore[misc]
    await opened.aclose()


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the file on which ``needle`` first appears."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} is not in {path}")


async def only(index: DocumentIndex, query: str) -> Passage:
    (passage,) = await index.search(query)
    return passage


async def test_sphinx_navigation_sidebar_and_footer_are_dropped(index: DocumentIndex) -> None:
    text = await index.document_text("sphinx.html")
    assert text.startswith("Quickstart\n\nFirst, start by importing HTTPX & calling")
    for chrome in ("Navigation", "documentation »", "next", "Table of Contents", "Copyright"):
        assert chrome not in text
    assert "¶" not in text  # the heading's permalink sign
    assert [] == await index.search("Sphinx Copyright")


async def test_mkdocs_header_sidebar_and_previous_next_are_dropped(index: DocumentIndex) -> None:
    text = await index.document_text("mkdocs.html")
    assert text.startswith("Timeouts\n\nHTTPX is careful to enforce timeouts")
    for chrome in ("Skip to content", "QuickStart Guide", "Previous", "Advanced Usage", "Edit"):
        assert chrome not in text
    assert "Material for MkDocs" not in text


async def test_github_header_breadcrumbs_and_footer_are_dropped(index: DocumentIndex) -> None:
    text = await index.document_text("github.html")
    assert text.startswith("Rich Inspect\n\nRich has an inspect function")
    for chrome in ("Sign in", "Pricing", "Textualize /", "Star 49.1k", "Terms", "Footer"):
        assert chrome not in text


async def test_titles_have_their_entities_decoded(index: DocumentIndex) -> None:
    assert "Quickstart — HTTPX 0.27 documentation" == (await only(index, "calling")).title
    assert (
        "rich/README.md at master · Textualize/rich · GitHub"
        == (await only(index, "builtin")).title
    )
    assert "HTTPX & friends" == (await only(index, "featured")).title


async def test_list_items_and_table_rows_add_no_glyphs(index: DocumentIndex) -> None:
    """A quote from a list is the item's words, as the page shows them: no "* " or "o "."""
    text = await index.document_text("sphinx.html")
    assert "\nThe snake_case names.\nSecond item spanning lines.\n" in text
    assert "\nOption | Default\ntimeout | 5 s" in text
    github = await index.document_text("github.html")
    assert "\nWorks with __init__ methods.\nShows snake_case attributes." in github


async def test_code_is_kept_verbatim_with_its_urls(index: DocumentIndex) -> None:
    text = await index.document_text("mkdocs.html")
    assert (
        "```\n# Using the top-level API:\n"
        "httpx.get('http://example.com/api/v1/example', timeout=10.0)\n```"
    ) in text
    github = await index.document_text("github.html")
    assert '>>> my_list = ["foo", "bar"]\n>>> from rich import inspect\n' in github
    sphinx = await index.document_text("sphinx.html")
    assert "Client.__init__()" in sphinx


async def test_html_passages_cite_the_lines_and_headings_of_the_page(
    index: DocumentIndex,
) -> None:
    passage = await only(index, "optional HTTP/2 support")
    assert ("Quickstart", "HTTP/2") == passage.headings
    first = line_of(PAGES / "sphinx.html", "<h2>HTTP/2")
    last = line_of(PAGES / "sphinx.html", "<td>timeout</td>")
    assert (first, last) == (passage.line_start, passage.line_end)
    mkdocs = await only(index, "individual request")  # a short page: one passage
    assert line_of(PAGES / "mkdocs.html", "<h1 id=") == mkdocs.line_start
    assert line_of(PAGES / "mkdocs.html", "top-level API") + 2 == mkdocs.line_end  # the fence


async def test_markdown_badges_images_and_link_lines_are_dropped(index: DocumentIndex) -> None:
    text = await index.document_text("README.md")
    for noise in ("badge.svg", "butterfly.png", "Test Suite", "screenshot", "[Quickstart]"):
        assert noise not in text
    assert "https://www.python-httpx.org/" not in text.split("```")[0]
    assert [] == await index.search("badge")
    # a table of contents' link only: the word is in the other pages, not the README
    assert "README.md" not in {p.path for p in await index.search("Quickstart")}


async def test_markdown_sponsor_lines_are_dropped(index: DocumentIndex) -> None:
    text = await index.document_text("README.md")
    assert "Sponsored by" not in text and "Speakeasy" not in text
    assert [] == await index.search("sponsor")


async def test_markdown_emphasis_goes_but_identifiers_stay(index: DocumentIndex) -> None:
    passage = await only(index, "featured")
    assert "provides sync and async APIs." in passage.text  # **sync and async**
    assert "Override `Client.__init__()` or __init__ in a subclass" in passage.text
    assert "use snake_case names and really bold text." in passage.text  # __really bold__
    assert "see the docs —" in passage.text  # a link is its text, &mdash; decoded


async def test_markdown_keeps_the_file_lines_and_code_comments_are_not_headings(
    index: DocumentIndex,
) -> None:
    text = await index.document_text("README.md")
    source = (PAGES / "README.md").read_text(encoding="utf-8")
    assert len(source.split("\n")) == len(text.split("\n"))
    passage = await only(index, "pip install httpx")
    assert "$ pip install httpx  # see https://pypi.org/project/httpx/" in passage.text
    assert ("HTTPX & friends", "Installation") == passage.headings
    assert line_of(PAGES / "README.md", "## Installation") == passage.line_start


async def test_package_metadata_is_titled_by_its_name(tmp_path: Path) -> None:
    root = tmp_path / "site-packages"
    (root / "httpx-0.27.0.dist-info").mkdir(parents=True)
    metadata = (
        "Metadata-Version: 2.3\nName: httpx\nVersion: 0.27.0\n"
        "Summary: The next generation HTTP client.\nRequires-Dist: certifi\n"
        "Requires-Dist: sniffio\nDescription-Content-Type: text/markdown\n\n"
        "# HTTPX\n\nHTTPX is a fully featured HTTP client library for Python 3.\n"
    )
    (root / "httpx-0.27.0.dist-info" / "METADATA").write_text(metadata, encoding="utf-8")
    (root / "copy-METADATA.txt").write_text(metadata, encoding="utf-8")
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "cache") as index:
        found = await index.search("fully featured")
        assert ["httpx", "httpx"] == [p.title for p in found]
        assert {"copy-METADATA.txt", "httpx-0.27.0.dist-info/METADATA"} == {p.path for p in found}
        assert [] == await index.search("certifi sniffio", match="any")
