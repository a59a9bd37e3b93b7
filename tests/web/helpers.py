"""Test doubles and helpers of the web page's tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from research_fsm import ResearchAssistant
from research_fsm.qa import Token
from research_fsm.sources import MockDataSource, SearchContext, SearchResult, SourceRef

HOSTILE_NEWS = "<img src=x onerror=alert(1)> Breaking: <script>alert(2)</script> shares soar"
HOSTILE_TITLE = "<b>Evil</b> <img src=x onerror=alert(3)>"


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
