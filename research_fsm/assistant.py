"""``ResearchAssistant``: the composition root. It builds what the three apps share (the
LLM, the data source and its company index, the store, the clock) and composes the apps
side by side: ``assistant.qa`` (conversations, ``research_fsm.qa``), ``assistant.reports``
(company reports, ``research_fsm.reports``) and ``assistant.deep`` (deep research,
``research_fsm.deep``). The apps import none of each other; only this module knows all three.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._home import default_home
from .common.files import Clock
from .common.models import Language
from .engine import CheckpointStore, CompiledGraph, SuspendToken
from .llm import LLM, llm_from_env
from .qa import AssistantStream, Message, QaRunner, Reply, ResearchState
from .sources import CompanyIndex, DataSource, DirectorySource, create_data_source
from .stores import JsonFileCheckpointStore, store_from_env

if TYPE_CHECKING:  # the report and deep-research apps load on first use (``reports``, ``deep``)
    from .deep import DeepEvent, DeepRunner, ResearchReport, TopicSearch
    from .reports import Report, ReportProgress, ReportRunner

__all__ = ["DEFAULT_KEEP", "ResearchAssistant", "default_home", "default_store"]

DEFAULT_KEEP = 24
"""Checkpoints kept per thread by the default store (older ones are pruned)."""

_TOP_K, _THRESHOLD = 3, 0.8
"""Deep research's defaults (``research_fsm.deep.DEFAULT_TOP_K``, ``DEFAULT_THRESHOLD``;
a test keeps them equal), here so a question does not load deep research."""


@runtime_checkable
class _Closable(Protocol):
    """A store with connections to release (the PostgreSQL store; the file store has none)."""

    async def aclose(self) -> None: ...


def default_store() -> CheckpointStore:
    """The assistant's store when none is given: the PostgreSQL database named by
    ``RESEARCH_FSM_STORE`` (``postgresql://...``; needs the ``postgres`` extra), else
    JSON files under ``default_home()/threads``; both keep ``DEFAULT_KEEP`` checkpoints."""
    store = store_from_env(keep=DEFAULT_KEEP)
    if store is not None:
        return store
    return JsonFileCheckpointStore(default_home() / "threads", keep=DEFAULT_KEEP)


class ResearchAssistant:
    """Answers questions about companies (``qa``), writes company reports (``reports``)
    and researches any topic (``deep``), over one LLM, source and store. The report and
    deep-research apps are imported on their first use, so a process that only asks
    questions never loads them.

    The methods below call those three runners (``ask`` is ``qa.ask``, ``report`` is
    ``reports.report``, ``deep_research`` is ``deep.research``...).

    Args:
        llm: the language model; ``None`` uses the rule-based agents (offline).
        source: where research comes from (default: the offline company directory).
        store: where conversations are kept (default: the PostgreSQL database that
            ``RESEARCH_FSM_STORE`` names, else JSON files under ``default_home()``).
        web_search: the web search of ``deep_research`` (default: Tavily when
            ``TAVILY_API_KEY`` is set).
        clock: returns the current time (default: the system's); today's date goes
            into the prompts that reason about time, and dates reports and sessions.
    """

    def __init__(
        self,
        llm: LLM | None = None,
        source: DataSource | None = None,
        store: CheckpointStore | None = None,
        web_search: TopicSearch | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.llm = llm
        self.clock = clock
        """What tells the time: the date in the prompts, a report's and a session's start."""
        self.web_search = web_search
        """The web search deep research uses (default: Tavily when its key is set)."""
        self.source = source if source is not None else create_data_source("directory")
        self._owns_store = store is None
        self.store = store if store is not None else default_store()
        self._company_index: CompanyIndex | None = None
        self._index_lock = asyncio.Lock()
        self.qa = QaRunner(
            source=self.source, index=self._index, llm=llm, store=self.store, clock=clock
        )
        """Conversations about companies (``research_fsm.qa``)."""
        self._reports: ReportRunner | None = None
        self._deep: DeepRunner | None = None

    @classmethod
    def from_env(
        cls, *, source: str | None = None, store: CheckpointStore | None = None
    ) -> ResearchAssistant:
        """Configure from the environment: the LLM of ``llm_from_env`` (a local server at
        ``RESEARCH_FSM_LLM_URL``, or Claude when ``ANTHROPIC_API_KEY`` is set; model
        ``RESEARCH_FSM_MODEL``), the data source from ``source`` or
        ``RESEARCH_DATA_SOURCE``, the store from ``RESEARCH_FSM_STORE`` or under
        ``RESEARCH_FSM_HOME`` (see ``default_store``)."""
        llm = llm_from_env()
        return cls(llm=llm, source=create_data_source(source), store=store)

    @property
    def reports(self) -> ReportRunner:
        """Company reports (``research_fsm.reports``), made on first use; its graph is
        compiled on its first run."""
        if self._reports is None:
            from .reports import ReportRunner, reports_home

            self._reports = ReportRunner(
                source=self.source,
                index=self._index,
                llm=self.llm,
                store=self.store,
                root=reports_home(),
                describe=self.source.describe,
                check_answer=QaRunner.check,
                clock=self.clock,
            )
        return self._reports

    @property
    def deep(self) -> DeepRunner:
        """Deep research on any topic (``research_fsm.deep``), made on first use."""
        if self._deep is None:
            from .deep import DeepRunner, default_web_search, sessions_home

            self._deep = DeepRunner(
                llm=self.llm,
                store=self.store,
                root=sessions_home(),
                web=self.web_search if self.web_search is not None else default_web_search(),
                index_dir=default_home() / "indexes",
                clock=self.clock,
            )
        return self._deep

    async def _index(self) -> CompanyIndex:
        """The company index the Q&A and report graphs share (loaded once)."""
        async with self._index_lock:
            if self._company_index is None:
                self._company_index = await self._load_index()
            return self._company_index

    async def _load_index(self) -> CompanyIndex:
        source = self.source
        if isinstance(source, DirectorySource):
            return await source.company_index()  # already built: don't build a second
        if not await source.companies():  # web search knows no names: use the directory's
            return await DirectorySource().company_index()
        return await CompanyIndex.from_sources([source])

    async def aclose(self) -> None:
        """Release the LLM client's connections, the document indexes deep research
        opened, and the store's connections if the assistant made the store."""
        if self.llm is not None:
            await self.llm.aclose()
        if self._deep is not None:
            await self._deep.aclose()
        if self._owns_store and isinstance(self.store, _Closable):
            await self.store.aclose()

    # -- questions: ``qa`` --------------------------------------------------------------

    async def graph(self) -> CompiledGraph[ResearchState]:
        """``qa.graph()``: the compiled Q&A graph (built on first use)."""
        return await self.qa.graph()

    async def ask(self, text: str, *, thread_id: str) -> Reply:
        """``qa.ask``: ask a question in a conversation (``text`` answers a pending
        question back)."""
        return await self.qa.ask(text, thread_id=thread_id)

    async def clarify(self, token: SuspendToken | str, text: str) -> Reply:
        """``qa.clarify``: answer the question asked back (``reply.token``)."""
        return await self.qa.clarify(token, text)

    def stream(self, text: str, *, thread_id: str) -> AssistantStream:
        """``qa.stream``: like ``ask``, yielding ``Progress``, ``Token``... then ``Answer``."""
        return self.qa.stream(text, thread_id=thread_id)

    def stream_clarify(self, token: SuspendToken | str, text: str) -> AssistantStream:
        """``qa.stream_clarify``: like ``clarify``, streaming events like ``stream``."""
        return self.qa.stream_clarify(token, text)

    async def history(self, thread_id: str) -> list[Message]:
        """``qa.history``: the whole conversation, oldest first."""
        return await self.qa.history(thread_id)

    async def pending_question(self, thread_id: str) -> Reply | None:
        """``qa.pending_question``: the clarification a conversation waits for, if any."""
        return await self.qa.pending_question(thread_id)

    # -- reports: ``reports`` -------------------------------------------------------------

    async def report_runner(self) -> ReportRunner:
        """``reports``, the report runner (kept for the callers that await it)."""
        return self.reports

    async def report(
        self,
        company: str,
        *,
        language: Language = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
    ) -> Report:
        """``reports.report``: research ``company`` and save a report."""
        return await self.reports.report(company, language=language, formats=formats, out=out)

    async def stream_report(
        self,
        company: str,
        *,
        language: Language = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
        thread_id: str | None = None,
    ) -> AsyncIterator[ReportProgress | Report]:
        """``reports.stream``: ``ReportProgress`` per agent, then the ``Report``."""
        events = self.reports.stream(
            company, language=language, formats=formats, out=out, thread_id=thread_id
        )
        async for event in events:
            yield event

    async def continue_report(
        self, thread_id: str, *, answer: str | None = None
    ) -> AsyncIterator[ReportProgress | Report]:
        """``reports.continue_run``: answer a report's question back, or finish a run
        after a crash."""
        async for event in self.reports.continue_run(thread_id, answer=answer):
            yield event

    # -- deep research: ``deep`` ----------------------------------------------------------

    def deep_runner(self) -> DeepRunner:
        """``deep``, the deep-research runner (kept for its callers)."""
        return self.deep

    async def deep_research(
        self,
        topic: str,
        *,
        language: Language | None = None,
        docs: str | os.PathLike[str] | None = None,
        formats: tuple[str, ...] = ("md",),
        top_k: int = _TOP_K,
        threshold: float = _THRESHOLD,
    ) -> ResearchReport:
        """``deep.research``: research ``topic`` over ``docs`` or the web and save a
        cited, verified report."""
        return await self.deep.research(
            topic, language=language, docs=docs, formats=formats, top_k=top_k, threshold=threshold
        )

    async def stream_deep_research(
        self,
        topic: str,
        *,
        language: Language | None = None,
        docs: str | os.PathLike[str] | None = None,
        formats: tuple[str, ...] = ("md",),
        top_k: int = _TOP_K,
        threshold: float = _THRESHOLD,
        session_id: str | None = None,
    ) -> AsyncIterator[DeepEvent]:
        """``deep.stream``: ``DeepProgress`` per stage, ``DeepText``, then the report."""
        events = self.deep.stream(
            topic,
            language=language,
            docs=docs,
            formats=formats,
            top_k=top_k,
            threshold=threshold,
            session_id=session_id,
        )
        async for event in events:
            yield event

    async def continue_deep_research(self, session_id: str) -> AsyncIterator[DeepEvent]:
        """``deep.continue_run``: continue a session interrupted by a crash."""
        async for event in self.deep.continue_run(session_id):
            yield event
