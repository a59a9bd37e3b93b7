"""Search results are data: report.md holds no live link, image or HTML taken from them."""

from __future__ import annotations

import os
import re
from pathlib import Path

from clirun import run_cli
from markdown_it import MarkdownIt
from servers import FakeTavily
from servers import tavily as tv

from research_fsm import ResearchAssistant
from research_fsm.deep import Found, StaticSearch, grounding_problems
from research_fsm.engine import MemoryCheckpointStore

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


def test_cli_survives_a_search_result_with_an_unparseable_url(
    tavily_server: FakeTavily, tmp_path: Path
) -> None:
    """``deep``, ``report`` and ``ask`` on Tavily exit 0 when a result's URL is ``http://[``
    (in-process runs of the command line)."""
    broken = tv.result("Broken", "http://[", "Nvidia designs GPUs. Spring Boot 3 needs Java 17.")
    fine = tv.result(
        "Spring Boot 3 and Nvidia",
        "https://fine.example/spring-boot-3",
        "Spring Boot 3 migration requires Java 17. Nvidia designs GPUs and AI systems.",
        0.9,
        raw_content="Spring Boot 3 migration requires Java 17. Nvidia designs GPUs and AI systems.",
    )
    tavily_server.auto(lambda body: tv.results([broken, fine]))
    env = {**os.environ, "RESEARCH_FSM_HOME": str(tmp_path / "home"), "LOG_LEVEL": "WARNING"}
    env |= {"TAVILY_API_KEY": "tvly-test-secret-0123456789", "TAVILY_BASE_URL": tavily_server.url}
    for name in ("ANTHROPIC_API_KEY", "RESEARCH_DOCS", "RESEARCH_FSM_STORE"):
        env.pop(name, None)
    commands = [
        ["deep", TOPIC],
        ["report", "Nvidia", "--source", "tavily"],
        ["ask", "What's new with Nvidia?", "--source", "tavily"],
    ]
    codes = []
    for args in commands:
        done = run_cli(*args, env=env)
        failed = re.search(r"data source \S* ?failed", done.stdout) is not None
        codes.append((args[0], done.returncode, failed))
    assert [("deep", 0, False), ("report", 0, False), ("ask", 0, False)] == codes
