"""A README's title is its own: never raw HTML, never an over- or underline of an RST
title, never the name of its first section."""

from __future__ import annotations

from pathlib import Path

from research_fsm.documents import DocumentIndex

CENTERED_LOGO = """<p align="center">
  <img width="320" src="https://img.example/logo.png"
       alt="Foolib">
</p>
<p align="center"><em>Foolib - fast foo for Python.</em></p>

Foolib turns bars into foos.
"""
SECTIONS_ONLY = """<p align="center">
  <img src="https://img.example/logo.png">
</p>

## Quickstart

Install it with pip and turn bars into foos.
"""
RST_OVERLINE = """============
foolib-extra
============

Foolib-extra adds more foos to bars.
"""


async def test_readme_titles_skip_html_rst_lines_and_section_names(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "centered.md").write_text(CENTERED_LOGO, encoding="utf-8")
    (root / "sections.md").write_text(SECTIONS_ONLY, encoding="utf-8")
    (root / "overline.txt").write_text(RST_OVERLINE, encoding="utf-8")
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "cache") as index:
        titles = {p.path: p.title for p in await index.search("foos", match="any")}
    assert {
        "centered.md": "Foolib - fast foo for Python.",
        "sections.md": "sections.md",
        "overline.txt": "foolib-extra",
    } == titles
