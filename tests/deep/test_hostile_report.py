"""Search results are data: report.md holds no live link, image or HTML taken from them."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from research_fsm.deep import Found, StaticSearch, grounding_problems
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.qa import ResearchAssistant

from .conftest import CORPUS, TOPIC

HOSTILE = Found(
    kind="web",
    title="Spring Boot 3 tips [click](javascript:alert(1)) ![t](http://beacon.example/t.gif)",
    locator="https://tips.example/spring><script>alert(2)</script>",
    text=(
        "Spring Boot 3 migration requires Java 17 ![pixel](http://beacon.example/p.gif) "
        "and [the guide](javascript:alert(3)) explains the jakarta namespace change."
    ),
    score=0.99,
)


def rendered(markdown: str) -> str:
    """``markdown`` as a CommonMark viewer shows it (raw HTML allowed, as most do)."""
    return MarkdownIt("commonmark").render(markdown)


async def test_deep_report_keeps_hostile_source_text_inert(home: Path) -> None:
    """Links, images and HTML inside a source's title, URL and quotes stay text in report.md."""
    web = StaticSearch([HOSTILE, *CORPUS], mode="web")
    assistant = ResearchAssistant(store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research(TOPIC)
    html = rendered(report.markdown)
    assert "tips.example" in report.markdown
    assert [] == re.findall(r"<script|<img|href=\"javascript", html)
    assert [] == re.findall(r"http://beacon\.example", report.markdown)
    assert report.folder is not None
    assert [] == grounding_problems(report.folder)
