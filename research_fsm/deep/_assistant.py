"""The deep-research methods of ``ResearchAssistant`` (kept apart to keep modules small)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

from .._home import default_home
from ..engine import CheckpointStore, validate_thread_id
from ..llm import LLM
from ._api import (
    DeepProgress,
    DeepRunner,
    DeepText,
    InvalidResearchRequest,
    ResearchReport,
    to_research_report,
)
from ._model import DEFAULT_THRESHOLD, DEFAULT_TOP_K, Language
from ._search import TopicSearch, WebSearch

__all__ = ["DeepResearchMixin", "sessions_home"]

Event = DeepProgress | DeepText | ResearchReport


def sessions_home() -> Path:
    """``$RESEARCH_FSM_HOME/sessions`` (the same home as the conversations)."""
    return default_home() / "sessions"


def _web_search() -> TopicSearch | None:
    """Tavily when ``TAVILY_API_KEY`` is set, else ``None``."""
    from ..sources import TavilyWebSearch

    client = TavilyWebSearch()
    return WebSearch(client) if client.is_available() else None


class DeepResearchMixin:
    """``deep_research``, ``stream_deep_research`` and ``continue_deep_research``."""

    llm: LLM | None
    store: CheckpointStore
    _deep: DeepRunner | None
    web_search: TopicSearch | None
    """The web search deep research uses (default: Tavily when its key is set)."""

    def deep_runner(self) -> DeepRunner:
        """The compiled deep-research workflow (built on first use)."""
        if self._deep is None:
            web = self.web_search if self.web_search is not None else _web_search()
            self._deep = DeepRunner(
                llm=self.llm, store=self.store, root=sessions_home(), web=web,
                index_dir=default_home() / "indexes",
            )  # fmt: skip
        return self._deep

    async def deep_research(
        self, topic: str, *, language: Language = "en",
        docs: str | os.PathLike[str] | None = None, formats: tuple[str, ...] = ("md",),
        top_k: int = DEFAULT_TOP_K, threshold: float = DEFAULT_THRESHOLD,
    ) -> ResearchReport:  # fmt: skip
        """Research ``topic`` over ``docs`` (a folder; default ``$RESEARCH_DOCS``) or the
        web (with a Tavily key) and save a cited, verified report in the session folder."""
        stream = self.stream_deep_research(
            topic, language=language, docs=docs, formats=formats, top_k=top_k, threshold=threshold
        )
        async for event in stream:
            if isinstance(event, ResearchReport):
                return event
        raise AssertionError("a deep-research run ends with a ResearchReport")  # pragma: no cover

    async def stream_deep_research(
        self, topic: str, *, language: Language = "en",
        docs: str | os.PathLike[str] | None = None, formats: tuple[str, ...] = ("md",),
        top_k: int = DEFAULT_TOP_K, threshold: float = DEFAULT_THRESHOLD,
        session_id: str | None = None,
    ) -> AsyncIterator[Event]:  # fmt: skip
        """``DeepProgress`` per stage as it starts and finishes (the analyses at once),
        ``DeepText`` as the draft is written, then the ``ResearchReport``."""
        runner = self.deep_runner()
        value, sid = await runner.start(
            topic, language=language, docs=docs, formats=formats, top_k=top_k,
            threshold=threshold, session_id=session_id,
        )  # fmt: skip
        async for event in runner.events(value, sid):
            yield event

    async def continue_deep_research(self, session_id: str) -> AsyncIterator[Event]:
        """Continue a session interrupted by a crash: finished stages and analyses are
        not run again. A finished session yields its report again."""
        try:
            validate_thread_id(session_id)
        except ValueError as exc:
            raise InvalidResearchRequest(f"invalid session id: {exc}") from None
        runner = self.deep_runner()
        snapshot = await runner.app.get_state(session_id)
        if snapshot is None:
            raise InvalidResearchRequest(f"there is no deep-research session `{session_id}`")
        if snapshot.status == "completed":
            yield to_research_report(snapshot.state, session_id)
            return
        async for event in runner.events(None, session_id):
            yield event
