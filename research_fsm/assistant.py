"""``ResearchAssistant``: the composition root. It builds what the three apps share (the
LLM, the data source and its company index, the store, the clock) and composes the apps
side by side: ``assistant.qa`` (conversations, ``research_fsm.qa``), ``assistant.reports``
(company reports, ``research_fsm.reports``) and ``assistant.deep`` (deep research,
``research_fsm.deep``). The apps import none of each other; only this module knows all three.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    Self,
    TypeVar,
    overload,
    runtime_checkable,
)

from ._home import default_home
from .common.files import Clock
from .engine import CheckpointStore
from .llm import LLM, llm_from_env
from .qa import QaRunner
from .sources import CompanyIndex, DataSource, DirectorySource, create_data_source
from .stores import JsonFileCheckpointStore, store_from_env

if TYPE_CHECKING:  # the report and deep-research apps load on first use (``reports``, ``deep``)
    from .deep import DeepRunner, TopicSearch
    from .reports import ReportRunner

__all__ = ["DEFAULT_KEEP", "ResearchAssistant", "default_home", "default_store"]

_Runner = TypeVar("_Runner")
_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_KEEP = 24
"""Checkpoints kept per thread by the default store (older ones are pruned)."""


@runtime_checkable
class _Closable(Protocol):
    """A store with connections to release (the PostgreSQL store; the file store has none)."""

    async def aclose(self) -> None: ...


class _Runs(Generic[_Runner, _P, _T]):
    """A method of ``ResearchAssistant`` that is one of its runners' methods: read on an
    assistant, ``_Runs("qa", lambda: QaRunner.ask)`` gives ``assistant.qa.ask``, the
    runner's bound method with its own signature and docstring (nothing is written
    twice). ``method`` is asked for only when the method is first read, so naming a
    report or deep-research method loads neither app."""

    def __init__(
        self, runner: str, method: Callable[[], Callable[Concatenate[_Runner, _P], _T]]
    ) -> None:
        self._runner = runner
        self._method = method

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]  # the runner's, read when asked
        return self._method().__doc__

    @property
    def __signature__(self) -> inspect.Signature:
        """Read on the class, the runner's method's signature (``self`` first, as a
        method read on its class has), so ``inspect`` and ``create_autospec`` see it."""
        return inspect.signature(self._method())

    def __call__(self, assistant: ResearchAssistant, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Called on the class with the assistant first (``ResearchAssistant.ask(a, q)``),
        as a method read on its class is."""
        method: Callable[_P, _T] = self.__get__(assistant, type(assistant))
        return method(*args, **kwargs)

    @overload
    def __get__(self, assistant: None, owner: type[object]) -> Self: ...
    @overload
    def __get__(self, assistant: ResearchAssistant, owner: type[object]) -> Callable[_P, _T]: ...
    def __get__(
        self, assistant: ResearchAssistant | None, owner: type[object]
    ) -> Self | Callable[_P, _T]:
        if assistant is None:
            return self
        runner = getattr(assistant, self._runner)
        method: Callable[_P, _T] = getattr(runner, self._method().__name__)
        return method


def _report_runner() -> type[ReportRunner]:
    """The report app's runner class, its package imported on first use."""
    from .reports import ReportRunner

    return ReportRunner


def _deep_runner() -> type[DeepRunner]:
    """The deep-research app's runner class, its package imported on first use."""
    from .deep import DeepRunner

    return DeepRunner


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

    The methods below are those three runners' own (``ask`` is ``qa.ask``, ``report`` is
    ``reports.report``, ``deep_research`` is ``deep.research``...), with their signatures.

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

    # -- the runners' methods, by their old names ---------------------------------------
    # Each is the runner's own bound method (``assistant.ask is`` ``assistant.qa.ask``'s
    # equal): its signature and docstring are the runner's, written once there.

    graph = _Runs("qa", lambda: QaRunner.graph)
    """``qa.graph``: the compiled Q&A graph (built on first use)."""
    ask = _Runs("qa", lambda: QaRunner.ask)
    """``qa.ask``: ask a question in a conversation (``text`` answers a pending question
    back)."""
    clarify = _Runs("qa", lambda: QaRunner.clarify)
    """``qa.clarify``: answer the question asked back (``reply.token``)."""
    stream = _Runs("qa", lambda: QaRunner.stream)
    """``qa.stream``: like ``ask``, yielding ``Progress``, ``Token``... then ``Answer``."""
    stream_clarify = _Runs("qa", lambda: QaRunner.stream_clarify)
    """``qa.stream_clarify``: like ``clarify``, streaming events like ``stream``."""
    history = _Runs("qa", lambda: QaRunner.history)
    """``qa.history``: the whole conversation, oldest first."""
    pending_question = _Runs("qa", lambda: QaRunner.pending_question)
    """``qa.pending_question``: the clarification a conversation waits for, if any."""

    report = _Runs("reports", lambda: _report_runner().report)
    """``reports.report``: research a company and save a report."""
    stream_report = _Runs("reports", lambda: _report_runner().stream)
    """``reports.stream``: ``ReportProgress`` per agent, then the ``Report``."""
    continue_report = _Runs("reports", lambda: _report_runner().continue_run)
    """``reports.continue_run``: answer a report's question back, or finish a run after a
    crash."""

    deep_research = _Runs("deep", lambda: _deep_runner().research)
    """``deep.research``: research a topic over documents or the web and save a cited,
    verified report."""
    stream_deep_research = _Runs("deep", lambda: _deep_runner().stream)
    """``deep.stream``: ``DeepProgress`` per stage, ``DeepText``, then the report."""
    continue_deep_research = _Runs("deep", lambda: _deep_runner().continue_run)
    """``deep.continue_run``: continue a session interrupted by a crash."""

    async def report_runner(self) -> ReportRunner:
        """``reports``, the report runner (kept for the callers that await it)."""
        return self.reports

    def deep_runner(self) -> DeepRunner:
        """``deep``, the deep-research runner (kept for its callers)."""
        return self.deep
