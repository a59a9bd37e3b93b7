"""``ResearchAssistant``: the library API of the company research assistant.

It holds conversations (the graph of ``research_fsm.qa.graph``) and composes a
``ReportRunner`` (``research_fsm.reports``) and a ``DeepRunner`` (``research_fsm.deep``),
built on first use over the same LLM, source and store, for reports and deep research.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from .._home import default_home
from ..common.files import Clock
from ..common.text import clean_text
from ..deep import (
    DEFAULT_THRESHOLD,
    DEFAULT_TOP_K,
    DeepEvent,
    DeepRunner,
    Language,
    ResearchReport,
    TopicSearch,
    default_web_search,
    sessions_home,
)
from ..engine import (
    CheckpointStore,
    CompiledGraph,
    Completed,
    Emitted,
    NodeFinished,
    NodeStarted,
    RunResult,
    RunStream,
    Suspended,
    SuspendToken,
    ThreadSuspended,
)
from ..errors import ResearchError
from ..llm import LLM, Usage, llm_from_env
from ..reports import Report, ReportProgress, ReportRunner, reports_home
from ..sources import (
    CompanyIndex,
    DataSource,
    DirectorySource,
    SourceRef,
    create_data_source,
)
from ..stores import JsonFileCheckpointStore, store_from_env
from .constants import (
    CONFIDENCE_HIGH_THRESHOLD,
    CONFIDENCE_MEDIUM_THRESHOLD,
    MAX_QUESTION_CHARS,
)
from .graph import build_research_graph
from .state import Message, ResearchState, new_question_input

__all__ = [
    "DEFAULT_KEEP",
    "Answer",
    "AssistantStream",
    "InvalidQuestion",
    "Progress",
    "Reply",
    "ResearchAssistant",
    "Token",
    "default_home",
    "default_store",
]

DEFAULT_KEEP = 24
"""Checkpoints kept per thread by the default store (older ones are pruned)."""

_PROGRESS = {
    "clarity": "Analyzing your question...",
    "interrupt": "Waiting for your answer...",
    "research": "Researching {company}...",
    "validator": "Validating findings...",
    "synthesis": "Writing the answer...",
    "error_recovery": "Recovering from an error...",
}


class InvalidQuestion(ResearchError, ValueError):
    """A question that cannot be asked: not text, or too long."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """The assistant's answer to one question (or its question back)."""

    status: Literal["answered", "needs_clarification"]
    """``answered``, or ``needs_clarification`` (then answer with ``clarify``)."""
    text: str
    """The answer, or the question asked back."""
    thread_id: str
    """The conversation."""
    token: str | None
    """When clarification is needed: the resume token to pass to ``clarify``."""
    company: str | None
    """The company the answer is about."""
    compared: list[str]
    """Other companies a comparison covered."""
    confidence: int
    """0-10."""
    sources: list[SourceRef]
    """Sources cited."""
    path: list[str]
    """The agents that ran, in order."""
    state: ResearchState
    """The full state after the run."""
    correlation_id: str | None
    """Id of the question in the logs."""
    usage: dict[str, Usage] = field(default_factory=dict)
    """LLM usage per agent for this question (``state.usage`` has the conversation's total)."""

    def confidence_label(self) -> str | None:
        """How sure the answer is, in words ("High confidence (9/10)"); ``None`` for a
        question back or an answer no research went into ("thanks", off-topic)."""
        if self.status != "answered" or self.company is None or "research" not in self.path:
            return None
        if self.state.research_findings is None:  # a company not found: nothing to be sure of
            return None
        score = self.confidence
        if score >= CONFIDENCE_HIGH_THRESHOLD:
            return f"High confidence ({score}/10)"
        if score >= CONFIDENCE_MEDIUM_THRESHOLD:
            return f"Medium confidence ({score}/10): some details could not be verified"
        return f"Low confidence ({score}/10): based on limited information"

    @property
    def notes(self) -> list[str]:
        """What degraded for this question, each said once: an LLM answer that could not
        be used (the rules did that step), or one that needed a second try."""
        return list(dict.fromkeys(self.state.question_notes))

    def usage_line(self) -> str:
        """A one-line summary of this question's LLM usage ("" when no LLM was called)."""
        total = sum(self.usage.values(), Usage())
        if not total.calls:
            return ""
        return (
            f"LLM: {total.calls} call{'s' if total.calls != 1 else ''}, "
            f"{total.input_tokens:,} tokens in, {total.output_tokens:,} out, {total.cost_text()}"
        )


@dataclass(frozen=True, slots=True)
class Progress:
    """An agent started."""

    agent: str
    """The agent's node name."""
    message: str
    """A human-readable line, e.g. ``"Researching Apple Inc...."``."""


@dataclass(frozen=True, slots=True)
class Token:
    """A piece of the answer as it is written."""

    text: str
    """The piece."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The last event of a stream."""

    reply: Reply
    """The complete reply."""


class AssistantStream:
    """The events of one question: ``Progress``, ``Token``... then ``Answer``."""

    def __init__(
        self,
        assistant: ResearchAssistant,
        text: str,
        thread_id: str | None,
        token: SuspendToken | str | None = None,
    ) -> None:
        self._assistant = assistant
        self._text = text
        self._thread_id = thread_id
        self._token = token
        self._events: RunStream[ResearchState] | None = None
        self._company: str | None = None
        self._done = False

    def __aiter__(self) -> AssistantStream:
        return self

    async def __anext__(self) -> Progress | Token | Answer:
        if self._done:
            raise StopAsyncIteration
        if self._events is None:
            self._events, previous = await self._assistant._open(
                self._text, self._thread_id, self._token
            )
            if previous is not None:
                self._company = previous.detected_company
        async for event in self._events:
            if isinstance(event, NodeStarted):
                name = (self._company or "the company").rstrip(".")  # "Inc." + "..."
                message = _PROGRESS[event.node].format(company=name)
                return Progress(event.node, message)
            if isinstance(event, Emitted) and event.kind == "token":
                return Token(str(event.data))
            if isinstance(event, Emitted) and event.kind == "reset":
                return Progress("synthesis", "Rewriting the answer without the LLM...")
            if isinstance(event, NodeFinished):
                self._company = event.update.get("detected_company", self._company)
            elif isinstance(event, (Completed, Suspended)):
                self._done = True
                return Answer(self._assistant._reply(event.result))
        self._done = True
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Cancel the question if still running; the conversation is free on return."""
        self._done = True
        if self._events is not None:
            await self._events.aclose()

    async def __aenter__(self) -> AssistantStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ResearchAssistant:
    """Answers questions about companies; one ``thread_id`` per conversation. Also
    writes company reports (``report``) and researches any topic (``deep_research``).

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
        self._app: CompiledGraph[ResearchState] | None = None
        self._reports: ReportRunner | None = None
        self._deep: DeepRunner | None = None
        self._lock = asyncio.Lock()

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

    async def graph(self) -> CompiledGraph[ResearchState]:
        """The compiled graph (built on first use: the company index loads once)."""
        if self._app is None:
            async with self._lock:
                if self._app is None:
                    index = await self._index()
                    graph = build_research_graph(
                        source=self.source, index=index, llm=self.llm, clock=self.clock
                    )
                    self._app = graph.compile(store=self.store, step_limit=30)
        return self._app

    async def _index(self) -> CompanyIndex:
        source = self.source
        if isinstance(source, DirectorySource):
            return await source.company_index()  # already built: don't build a second
        if not await source.companies():  # web search knows no names: use the directory's
            return await DirectorySource().company_index()
        return await CompanyIndex.from_sources([source])

    # -- asking ------------------------------------------------------------------

    async def ask(self, text: str, *, thread_id: str) -> Reply:
        """Ask a question in a conversation.

        If the conversation waits for a clarification, ``text`` answers it.
        """
        app = await self.graph()
        question = self._check(text)
        try:
            result = await app.run(
                new_question_input(question, secrets.token_hex(6)), thread_id=thread_id
            )
        except ThreadSuspended as waiting:  # the text answers the pending question
            result = await app.resume(waiting.token, question)
        return self._reply(result)

    async def clarify(self, token: SuspendToken | str, text: str) -> Reply:
        """Answer the question the assistant asked back (``reply.token`` from ``ask``)."""
        app = await self.graph()
        return self._reply(await app.resume(token, self._check(text)))

    def stream(self, text: str, *, thread_id: str) -> AssistantStream:
        """Like ``ask``, yielding ``Progress`` per agent, ``Token`` pieces of the
        answer as written, and finally ``Answer``.

        Use ``async with assistant.stream(...) as events: async for event in events``;
        leaving early cancels the question and frees the conversation at once.
        """
        return AssistantStream(self, text, thread_id)

    def stream_clarify(self, token: SuspendToken | str, text: str) -> AssistantStream:
        """Like ``clarify``, streaming events like ``stream``; a forged or used token
        raises (``InvalidResumeToken``, ``StaleResumeToken``) from the first event."""
        return AssistantStream(self, text, None, token)

    async def aclose(self) -> None:
        """Release the LLM client's connections and those of the store it made (if any)."""
        if self.llm is not None:
            await self.llm.aclose()
        if self._deep is not None:
            await self._deep.aclose()
        if self._owns_store and isinstance(self.store, _Closable):
            await self.store.aclose()

    async def history(self, thread_id: str) -> list[Message]:
        """The whole conversation, oldest first (the summary of a long one shortens what
        the agents read, never this)."""
        snapshot = await (await self.graph()).get_state(thread_id)
        return [] if snapshot is None else list(snapshot.state.messages)

    async def pending_question(self, thread_id: str) -> Reply | None:
        """The clarification a conversation waits for, if any."""
        app = await self.graph()
        snapshot = await app.get_state(thread_id)
        if snapshot is None or snapshot.suspension is None:
            return None
        payload: dict[str, Any] = snapshot.suspension.payload
        return Reply(
            status="needs_clarification",
            text=str(payload.get("question")),
            thread_id=thread_id,
            token=str(snapshot.suspension.token),
            company=snapshot.state.detected_company,
            compared=[],
            confidence=0,
            sources=[],
            path=[],
            state=snapshot.state,
            correlation_id=snapshot.state.correlation_id,
            usage={},
        )

    # -- reports (research_fsm.reports) ---------------------------------------------

    async def report_runner(self) -> ReportRunner:
        """The compiled report workflow (built on first use, sharing source, LLM and store)."""
        if self._reports is None:
            self._reports = ReportRunner(
                source=self.source,
                index=await self._index(),
                llm=self.llm,
                store=self.store,
                root=reports_home(),
                describe=self.source.describe,
                check_answer=self._check,
                clock=self.clock,
            )
        return self._reports

    async def report(
        self,
        company: str,
        *,
        language: Literal["en", "ja"] = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
    ) -> Report:
        """Research ``company`` and save a report (see ``research_fsm.reports``)."""
        runner = await self.report_runner()
        return await runner.report(company, language=language, formats=formats, out=out)

    async def stream_report(
        self,
        company: str,
        *,
        language: Literal["en", "ja"] = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
        thread_id: str | None = None,
    ) -> AsyncIterator[ReportProgress | Report]:
        """``ReportProgress`` per agent as it starts and finishes (the three specialists
        at once), then the ``Report``. ``thread_id`` names the run (default: a new one)."""
        runner = await self.report_runner()
        events = runner.stream(
            company, language=language, formats=formats, out=out, thread_id=thread_id
        )
        async for event in events:
            yield event

    async def continue_report(
        self, thread_id: str, *, answer: str | None = None
    ) -> AsyncIterator[ReportProgress | Report]:
        """Continue a report run: answer its question back, or, after a crash, run
        what had not finished (finished specialists are not run again)."""
        runner = await self.report_runner()
        async for event in runner.continue_run(thread_id, answer=answer):
            yield event

    # -- deep research (research_fsm.deep) ------------------------------------------

    def deep_runner(self) -> DeepRunner:
        """The compiled deep-research workflow (built on first use)."""
        if self._deep is None:
            self._deep = DeepRunner(
                llm=self.llm,
                store=self.store,
                root=sessions_home(),
                web=self.web_search if self.web_search is not None else default_web_search(),
                index_dir=default_home() / "indexes",
                clock=self.clock,
            )
        return self._deep

    async def deep_research(
        self,
        topic: str,
        *,
        language: Language | None = None,
        docs: str | os.PathLike[str] | None = None,
        formats: tuple[str, ...] = ("md",),
        top_k: int = DEFAULT_TOP_K,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> ResearchReport:
        """Research ``topic`` over ``docs`` (a folder; default ``$RESEARCH_DOCS``) or the
        web (with a Tavily key) and save a cited, verified report in the session folder;
        ``language``: the report's (default: the topic's, Japanese or English)."""
        return await self.deep_runner().research(
            topic, language=language, docs=docs, formats=formats, top_k=top_k, threshold=threshold
        )

    async def stream_deep_research(
        self,
        topic: str,
        *,
        language: Language | None = None,
        docs: str | os.PathLike[str] | None = None,
        formats: tuple[str, ...] = ("md",),
        top_k: int = DEFAULT_TOP_K,
        threshold: float = DEFAULT_THRESHOLD,
        session_id: str | None = None,
    ) -> AsyncIterator[DeepEvent]:
        """``DeepProgress`` per stage as it starts and finishes (the analyses at once),
        ``DeepText`` as the draft is written, then the ``ResearchReport``."""
        events = self.deep_runner().stream(
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
        """Continue a session interrupted by a crash: finished stages and analyses are
        not run again. A finished session yields its report again."""
        async for event in self.deep_runner().continue_run(session_id):
            yield event

    # -- helpers ---------------------------------------------------------------

    async def _open(
        self, text: str, thread_id: str | None, token: SuspendToken | str | None = None
    ) -> tuple[RunStream[ResearchState], ResearchState | None]:
        app = await self.graph()
        question = self._check(text)
        if token is not None:
            resumed = app.stream_resume(token, question)  # parses the token: raises if forged
            parsed = token if isinstance(token, SuspendToken) else SuspendToken.parse(token)
            snapshot = await app.get_state(parsed.thread_id)
            return resumed, snapshot.state if snapshot else None
        assert thread_id is not None
        snapshot = await app.get_state(thread_id)
        if snapshot is not None and snapshot.suspension is not None:
            return app.stream_resume(snapshot.suspension.token, question), snapshot.state
        cid = secrets.token_hex(6)
        events = app.stream(new_question_input(question, cid), thread_id=thread_id)
        return events, snapshot.state if snapshot else None

    @staticmethod
    def _check(text: object) -> str:
        if not isinstance(text, str):
            raise InvalidQuestion(f"a question must be a str, got {type(text).__name__}")
        question = clean_text(text)
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidQuestion(
                f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}"
            )
        return question

    @staticmethod
    def _reply(result: RunResult[ResearchState]) -> Reply:
        state = result.state
        findings = state.research_findings
        common: dict[str, Any] = {
            "thread_id": result.thread_id,
            "company": state.detected_company,
            "path": result.path,
            "compared": list(state.comparison_companies),
            "state": state,
            "correlation_id": state.correlation_id,
            "usage": dict(state.question_usage),
        }
        if result.suspension is not None:
            payload = result.suspension.payload
            return Reply(
                status="needs_clarification",
                text=str(payload.get("question")),
                token=str(result.suspension.token),
                confidence=0,
                sources=[],
                **common,
            )
        sources = [
            s
            for f in ([findings] if findings else []) + state.comparison_findings
            for s in f.sources
        ]
        return Reply(
            status="answered",
            text=state.final_summary or "",
            token=None,
            confidence=state.confidence_score,
            sources=sources,
            **common,
        )
