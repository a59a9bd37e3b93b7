"""A page is indexed once: a Sphinx site's ``_sources`` copies of its HTML pages are
left out (the HTML page wins, no reST title)."""

from __future__ import annotations

import shutil
from pathlib import Path

from research_fsm.documents import DocumentIndex

PAGES = Path(__file__).parent / "pages"
RST = """Installation
============

.. _install:

Install the package with ``pip install widget``.
"""


async def test_sphinx_source_copies_of_pages_are_not_indexed(tmp_path: Path) -> None:
    """``_sources/guide.rst.txt`` beside ``guide.html`` (and ``_sources/old.txt`` beside
    ``old/index.html``) are left out; a copy whose page is missing stays."""
    root = tmp_path / "site"
    (root / "_sources").mkdir(parents=True)
    (root / "old").mkdir()
    shutil.copy(PAGES / "sphinx.html", root / "guide.html")
    shutil.copy(PAGES / "sphinx.html", root / "old" / "index.html")
    for name in ("guide.rst.txt", "old.txt", "orphan.rst.txt"):
        (root / "_sources" / name).write_text(RST, encoding="utf-8")
    index = await DocumentIndex.open(root, cache_dir=tmp_path / "cache")
    try:
        assert 3 == index.stats.files
        found = {p.path for p in await index.search("Install the package with pip")}
        assert {"_sources/orphan.rst.txt"} == found
    finally:
        await index.aclose()
