"""Test doubles and helpers of the web page's tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from research_fsm import ResearchAssistant
from research_fsm.deep import Found
from research_fsm.qa import Token
from research_fsm.sources import MockDataSource, SearchContext, SearchResult, SourceRef

HOSTILE_NEWS = "<img src=x onerror=alert(1)> Breaking: <script>alert(2)</script> shares soar"
HOSTILE_TITLE = "<b>Evil</b> <img src=x onerror=alert(3)>"
UNPARSEABLE_URLS = ("https://x.example:99999/", "http://%zz/", "http://1.2.3.4.5/")
"""URLs Python splits but a browser cannot parse."""
SPRING_PAGES = [
    Found(
        kind="web",
        title="Spring Boot 3.0 Migration Guide",
        locator="https://github.com/spring-projects/spring-boot/wiki/Spring-Boot-3.0-Migration-Guide",
        text=(
            "Spring Boot 3.0 requires Java 17 as a minimum version. Before you start the "
            "migration, upgrade to the latest 2.7.x version of Spring Boot. Spring Boot 3.0 has "
            "upgraded to Jakarta EE 10 APIs; replace javax imports with jakarta imports."
        ),
        score=0.95,
    ),
    Found(
        kind="web",
        title="Preparing for Spring Boot 3.0",
        locator="https://spring.io/blog/2022/05/24/preparing-for-spring-boot-3-0",
        text=(
            "Upgrade to Spring Boot 2.7 first and fix the deprecation warnings. Spring Boot 3 "
            "migration also requires Spring Framework 6."
        ),
        score=0.9,
    ),
]
"""A small web corpus for deep research about the Spring Boot 3 migration."""


class HostileSource(MockDataSource):
    """The mock data, with HTML and script in the findings and the sources, as a
    search result from a hostile web page would have."""

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        result = await super().search(company, context)
        if result.findings is None:
            return result
        findings = result.findings.model_copy(
            update={
                "recent_news": HOSTILE_NEWS,
                "sources": [
                    SourceRef(title=HOSTILE_TITLE, url="javascript:alert(4)"),
                    SourceRef(title="Fine <i>page</i>", url="https://example.com/<script>"),
                ],
            }
        )
        return result.model_copy(update={"findings": findings})


class UnparseableUrlSource(MockDataSource):
    """The mock data, its sources at ``UNPARSEABLE_URLS``."""

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        result = await super().search(company, context)
        if result.findings is None:
            return result
        sources = [SourceRef(title=f"Odd {i}", url=url) for i, url in enumerate(UNPARSEABLE_URLS)]
        findings = result.findings.model_copy(update={"sources": sources})
        return result.model_copy(update={"findings": findings})


class SlowTokens(ResearchAssistant):
    """Writes its answers slowly (``pause`` seconds a token), as a remote LLM does."""

    pause = 0.04

    def stream(self, text: str, *, thread_id: str) -> Any:
        return self._slow(super().stream(text, thread_id=thread_id))

    def stream_clarify(self, token: Any, text: str) -> Any:
        return self._slow(super().stream_clarify(token, text))

    async def _slow(self, events: Any) -> AsyncIterator[Any]:
        async with events:
            async for event in events:
                if isinstance(event, Token):
                    await asyncio.sleep(self.pause)
                yield event


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The events of a ``text/event-stream`` body."""
    events = []
    for block in text.strip().split("\n\n"):
        name, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
        events.append((name, json.loads(data)))
    return events


LOCAL_MODEL = "qwen3:4b"
"""The model name a local server (the stand-in of ``tests/servers/local_llm.py``) serves."""


def qa_brain(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """What a capable model answers to the Q&A's calls about Apple (a text, or the
    structured answer of Clarity or the Validator)."""
    if schema is None:
        return "Apple designs the iPhone and sells services."
    fields = schema["properties"]
    if "is_clear" in fields:
        return {
            "is_clear": True,
            "detected_company": "Apple Inc.",
            "intent": "general",
            "reasoning": "named",
        }
    if "is_sufficient" in fields:
        return {"is_sufficient": True, "reasoning": "enough"}
    raise AssertionError(f"unexpected schema {sorted(fields)}")
