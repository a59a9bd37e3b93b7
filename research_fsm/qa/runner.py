"""``QaRunner``: the Q&A app. It holds conversations about companies on the graph of
``research_fsm.qa.graph`` (one thread per conversation) and streams their progress
(``Progress`` per agent, labelled from ``agent_table``; ``Token`` pieces; ``Answer``).
``research_fsm.ResearchAssistant`` composes it as ``assistant.qa``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..common.files import Clock
from ..common.models import IndexLoader
from ..common.runner import AppRunner
from ..common.text import clean_text
from ..engine import (
    CheckpointStore,
    Emitted,
    NodeStarted,
    RunResult,
    RunStream,
    StateGraph,
    SuspendToken,
    ThreadSuspended,
)
from ..errors import ResearchError
from ..llm import LLM, Usage
from ..sources import CompanyIndex, DataSource, SourceRef
from .agent_table import AGENTS
from .constants import (
    CONFIDENCE_HIGH_THRESHOLD,
    CONFIDENCE_MEDIUM_THRESHOLD,
    MAX_QUESTION_CHARS,
)
from .graph import build_research_graph
from .state import Message, ResearchState, new_question_input

__all__ = [
    "Answer",
    "AssistantStream",
    "InvalidQuestion",
    "Progress",
    "QaEvent",
    "QaRunner",
    "Reply",
    "Token",
    "confidence_words",
]

_UNNAMED: dict[str, str] = {"en": "the company", "ja": "対象の企業"}
"""How a label names the company before one is found."""
_RESET: dict[str, str] = {
    "en": "Rewriting the answer without the LLM...",
    "ja": "LLMを使わずに回答を書き直しています...",
}
"""The line when the answer being written is dropped and written again by the rules."""


class InvalidQuestion(ResearchError, ValueError):
    """A question that cannot be asked: not text, or too long."""


def confidence_words(score: int) -> str:
    """A confidence score (0-10) in words: "High confidence (9/10)", "Medium..." or "Low..."."""
    if score >= CONFIDENCE_HIGH_THRESHOLD:
        return f"High confidence ({score}/10)"
    if score >= CONFIDENCE_MEDIUM_THRESHOLD:
        return f"Medium confidence ({score}/10): some details could not be verified"
    return f"Low confidence ({score}/10): based on limited information"


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
        return confidence_words(self.confidence)

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


QaEvent = Progress | Token | Answer
"""What a question's stream yields."""


class AssistantStream:
    """The events of one question: ``Progress``, ``Token``... then ``Answer``."""

    def __init__(
        self,
        runner: QaRunner,
        text: str,
        thread_id: str | None,
        token: SuspendToken | str | None = None,
    ) -> None:
        self._runner = runner
        self._text = text
        self._thread_id = thread_id
        self._token = token
        self._events: RunStream[ResearchState] | None = None
        self._run: dict[str, Any] = {}
        self._closed = False

    def __aiter__(self) -> AssistantStream:
        return self

    async def __anext__(self) -> QaEvent:
        if self._closed:
            raise StopAsyncIteration
        if self._events is None:
            self._events, previous = await self._runner.open(
                self._text, self._thread_id, self._token
            )
            if previous is not None:
                self._run = {
                    "detected_company": previous.detected_company,
                    "language": previous.language,
                }
        async for event in self._events:  # iterated as is: a bare ``break`` frees it too
            item = self._runner.translate(event, self._run)
            if item is not None:
                return item
        self._closed = True
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Cancel the question if still running; the conversation is free on return."""
        self._closed = True
        if self._events is not None:
            await self._events.aclose()

    async def __aenter__(self) -> AssistantStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class QaRunner(AppRunner[ResearchState, QaEvent]):
    """Answers questions about companies; one ``thread_id`` per conversation
    (``ResearchAssistant.qa``).

    Args:
        source: where research comes from.
        index: the company names clarity finds in a question (or what loads them,
            awaited when the graph is first built).
        llm: the language model; ``None`` uses the rule-based agents (offline).
        store: where conversations are kept.
        clock: returns the current time (default: the system's); today's date goes
            into the prompts that reason about time.
    """

    agents = AGENTS
    step_limit = 30

    def __init__(
        self,
        *,
        source: DataSource,
        index: CompanyIndex | IndexLoader,
        llm: LLM | None,
        store: CheckpointStore,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(store=store)
        self.source = source
        self.index = index
        self.llm = llm
        self.clock = clock

    async def build(self) -> StateGraph[ResearchState]:
        """The Q&A graph over the source and the company index."""
        index = self.index if isinstance(self.index, CompanyIndex) else await self.index()
        return build_research_graph(source=self.source, index=index, llm=self.llm, clock=self.clock)

    async def ask(self, text: str, *, thread_id: str) -> Reply:
        """Ask a question in a conversation.

        If the conversation waits for a clarification, ``text`` answers it.
        """
        app = await self.graph()
        question = self.check(text)
        try:
            result = await app.run(
                new_question_input(question, secrets.token_hex(6)), thread_id=thread_id
            )
        except ThreadSuspended as waiting:  # the text answers the pending question
            result = await app.resume(waiting.token, question)
        return self.reply(result)

    async def clarify(self, token: SuspendToken | str, text: str) -> Reply:
        """Answer the question the assistant asked back (``reply.token`` from ``ask``)."""
        app = await self.graph()
        return self.reply(await app.resume(token, self.check(text)))

    def stream(self, text: str, *, thread_id: str) -> AssistantStream:
        """Like ``ask``, yielding ``Progress`` per agent, ``Token`` pieces of the
        answer as written, and finally ``Answer``.

        Use ``async with runner.stream(...) as events: async for event in events``;
        leaving early cancels the question and frees the conversation at once.
        """
        return AssistantStream(self, text, thread_id)

    def stream_clarify(self, token: SuspendToken | str, text: str) -> AssistantStream:
        """Like ``clarify``, streaming events like ``stream``; a forged or used token
        raises (``InvalidResumeToken``, ``StaleResumeToken``) from the first event."""
        return AssistantStream(self, text, None, token)

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

    async def open(
        self, text: str, thread_id: str | None, token: SuspendToken | str | None = None
    ) -> tuple[RunStream[ResearchState], ResearchState | None]:
        """The engine stream of one question (a new one, the answer to a pending
        question, or the answer to ``token``'s) and the state it starts from."""
        app = await self.graph()
        question = self.check(text)
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

    # -- the events of a question ----------------------------------------------------

    def started(self, event: NodeStarted, run: Mapping[str, Any]) -> Progress:
        """An agent started: its line, naming the company once it is known."""
        language = str(run.get("language") or "en")
        company = run.get("detected_company") or _UNNAMED.get(language, _UNNAMED["en"])
        line = self.agents.label(event.node, language, {**run, "company": company})
        return Progress(event.node, line)

    def emitted(self, event: Emitted, run: Mapping[str, Any]) -> Progress | Token | None:
        """A piece of the answer, or the answer started again by the rules."""
        if event.kind == "token":
            return Token(str(event.data))
        if event.kind == "reset":
            language = str(run.get("language") or "en")
            return Progress(event.node, _RESET.get(language, _RESET["en"]))
        return None

    def ended(self, result: RunResult[ResearchState]) -> Answer:
        """The reply: the answer, or the question asked back."""
        return Answer(self.reply(result))

    @staticmethod
    def check(text: object) -> str:
        """The question cleaned; ``InvalidQuestion`` when it is not text or too long."""
        if not isinstance(text, str):
            raise InvalidQuestion(f"a question must be a str, got {type(text).__name__}")
        question = clean_text(text)
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidQuestion(
                f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}"
            )
        return question

    @staticmethod
    def reply(result: RunResult[ResearchState]) -> Reply:
        """The ``Reply`` of a run's result: the answer, or the question asked back."""
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
