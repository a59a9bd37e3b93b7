"""The library API of deep research: ``ResearchReport``, its stream events, the request
checks, and the runner the assistant delegates ``deep_research`` to."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ..common.files import Clock, utc_now
from ..common.runner import AppRunner
from ..common.text import is_japanese
from ..common.writer import check_pdf_fonts
from ..documents import DOCS_ENV, DocumentIndex, IndexProgress, documents_folder_from_env
from ..engine import (
    CheckpointStore,
    Emitted,
    NodeFinished,
    NodeStarted,
    RunResult,
    validate_thread_id,
)
from ..errors import ResearchError
from ..llm import LLM, Usage, agent_models
from ..sources import DataSourceError, TavilyWebSearch
from ._agent_table import AGENTS
from ._cite import renumbered, sources_json
from ._graph import build_deep_graph
from ._model import DEFAULT_THRESHOLD, DEFAULT_TOP_K, DeepState, Language
from ._report import session_meta, supported_claims
from ._search import DocumentSearch, TopicSearch, WebSearch
from ._session import new_session_folder, session_folder, write_stage

__all__ = [
    "DOCS_ENV",
    "DeepEvent",
    "DeepProgress",
    "DeepRunner",
    "DeepText",
    "InvalidResearchRequest",
    "NoResearchSource",
    "ResearchReport",
    "check_request",
    "default_web_search",
    "to_research_report",
]

MAX_TOPIC_CHARS: Final = 500
"""Longest topic accepted."""
_BRANCH_INDEX: Final = re.compile(r"\[(\d+)\]$")
"""The index of a parallel branch's name (``deep_analysis[0]``)."""


class InvalidResearchRequest(ResearchError, ValueError):
    """A bad topic, language, format, documents folder or session id."""


class NoResearchSource(InvalidResearchRequest):
    """Neither a documents folder nor a Tavily key: deep research has nothing to read."""


@dataclass(frozen=True, slots=True)
class DeepProgress:
    """A stage started (``finished=False``) or finished; ``branch`` for the analyses."""

    stage: str
    """``indexing`` (the documents folder, before the run), ``query_parser``, ``search``,
    ``relevance_filter``, ``deep_analysis``, ``synthesis``, ``verification`` or
    ``report``."""
    branch: str | None
    """The parallel branch (``deep_analysis[0]``, ...) or ``None``."""
    finished: bool
    """False when it starts (or, indexing, goes on), True when it ends."""
    indexing: IndexProgress | None = None
    """How far indexing the documents folder is (``indexing`` only)."""
    message: str = ""
    """The stage's progress line in the session's language (from the agent table)."""


@dataclass(frozen=True, slots=True)
class DeepText:
    """A piece of the draft as the synthesis writes it."""

    text: str
    """The next piece of text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResearchReport:
    """A finished deep-research session."""

    status: Literal["completed", "no_sources"]
    """``no_sources`` when nothing (relevant) was found: the report says so, answering nothing."""
    session_id: str
    """The session (and thread) id; ``continue_deep_research`` takes it."""
    topic: str
    """The topic as asked."""
    language: Language
    """The report's language."""
    mode: Literal["web", "docs"]
    """Where the sources came from."""
    summary: str = ""
    """The verified summary, with ``[S#]`` citations."""
    key_points: list[str] = field(default_factory=list)
    """Verified key points, each with its citations."""
    steps: list[str] = field(default_factory=list)
    """Verified steps, in order."""
    caveats: list[str] = field(default_factory=list)
    """Verified caveats."""
    sources: list[dict[str, Any]] = field(default_factory=list)
    """The cited sources in order of first citation: ``n``, ``id`` (``S<n>``), ``kind``,
    ``title``, ``locator``, ``position``, ``heading`` (as ``sources.json``)."""
    verification: dict[str, Any] = field(default_factory=dict)
    """The final round: ``claims``, ``supported``, ``unsupported``, ``ratio``,
    ``threshold``, ``passed``, ``rounds``."""
    markdown: str = ""
    """``report.md``'s text."""
    paths: list[Path] = field(default_factory=list)
    """The report files written."""
    folder: Path | None = None
    """The session folder."""
    usage: dict[str, Usage] = field(default_factory=dict)
    """LLM usage per stage."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds of work per stage, summed over rounds and over the parallel analyses."""
    notes: list[str] = field(default_factory=list)
    """What went wrong and how it was handled."""

    @property
    def cost_usd(self) -> float | None:
        """Total estimated LLM cost; ``None`` when unknown (a model without a price)."""
        return sum(self.usage.values(), Usage()).cost_usd

    @property
    def llm_calls(self) -> dict[str, int]:
        """LLM calls per stage."""
        return {stage: u.calls for stage, u in self.usage.items()}


DeepEvent = DeepProgress | DeepText | ResearchReport
"""What a deep-research stream yields."""


def default_web_search() -> TopicSearch | None:
    """Tavily when ``TAVILY_API_KEY`` is set, else ``None``."""
    client = TavilyWebSearch()
    return WebSearch(client) if client.is_available() else None


def report_language(topic: object, language: str | None) -> str:
    """The report's language: ``language`` when given, else the topic's (Japanese when it
    is written in Japanese, English otherwise)."""
    if language is not None:
        return language
    return "ja" if isinstance(topic, str) and is_japanese(topic) else "en"


def check_request(
    topic: object, language: str, formats: tuple[str, ...], top_k: int, threshold: float
) -> str:
    """The cleaned topic; ``InvalidResearchRequest`` naming what is wrong."""
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidResearchRequest(
            "the topic is empty; say what to research, e.g. 'Spring Boot 2 to 3 migration'"
        )
    if len(topic) > MAX_TOPIC_CHARS:
        raise InvalidResearchRequest(
            f"the topic is {len(topic):,} characters long; the limit is {MAX_TOPIC_CHARS}"
        )
    if any((ord(ch) < 32 and ch not in "\t\n") or ch == "\x7f" for ch in topic):
        raise InvalidResearchRequest("the topic contains control characters")
    if language not in ("en", "ja"):
        raise InvalidResearchRequest(f"language {language!r} is not supported; use en or ja")
    unknown = [f for f in formats if f not in ("md", "pdf")]
    if unknown or not formats:
        shown = repr(unknown[0]) if unknown else "none"
        raise InvalidResearchRequest(f"report format {shown} is not supported; use md and/or pdf")
    check_pdf_fonts(language, formats)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 10:
        raise InvalidResearchRequest(f"top_k must be an integer from 1 to 10, got {top_k!r}")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not (0.0 <= threshold <= 1.0)
    ):
        raise InvalidResearchRequest(f"threshold must be from 0 to 1, got {threshold!r}")
    return " ".join(topic.split())


def check_docs(docs: str | os.PathLike[str] | None) -> Path | None:
    """The documents folder (``docs``, else ``$RESEARCH_DOCS``), resolved; an
    ``InvalidResearchRequest`` when it does not exist or is not a folder."""
    raw = docs if docs is not None else documents_folder_from_env()
    if raw is None:
        return None
    path = Path(raw).expanduser()
    if not path.exists():
        raise InvalidResearchRequest(f"the documents folder {str(path)!r} does not exist")
    if not path.is_dir():
        raise InvalidResearchRequest(
            f"{str(path)!r} is a file, not a folder; give the folder that holds your documents"
        )
    return path.resolve()


def cited(text: str, marks: str) -> str:
    """A claim with its ``[S#]`` marks: after its sentence, before the code lines of a
    step (which follow on lines of their own)."""
    first, _, code = text.partition("\n")
    return f"{first} {marks}".strip() + (f"\n{code}" if code else "")


def to_research_report(state: DeepState, session_id: str) -> ResearchReport:
    """The ``ResearchReport`` of a finished session's state (sources numbered as the
    report cites them)."""
    state = renumbered(state)
    claims = supported_claims(state)

    def lines(section: str) -> list[str]:
        return [
            cited(c.text, "".join(f"[{s}]" for s in c.sources))
            for c in claims
            if c.section == section
        ]

    final = state.verifications[-1] if state.verifications else None
    verification = (
        {}
        if final is None
        else {
            "claims": final.total,
            "supported": final.supported,
            "unsupported": final.total - final.supported,
            "ratio": final.ratio,
            "threshold": final.threshold,
            "passed": final.passed,
            "rounds": len(state.verifications),
        }
    )
    sources = sources_json(state)
    paths = [Path(p) for p in state.files]
    markdown = paths[0].read_text(encoding="utf-8") if paths else ""
    return ResearchReport(
        status="completed" if state.outcome == "ok" else "no_sources",
        session_id=session_id,
        topic=state.topic,
        language=state.language,
        mode=state.mode,
        summary=" ".join(lines("summary")),
        key_points=lines("key_points"),
        steps=lines("steps"),
        caveats=lines("caveats"),
        sources=sources,
        verification=verification,
        markdown=markdown,
        paths=paths,
        folder=Path(state.session_dir) if state.session_dir else None,
        usage=dict(state.usage),
        timings={k: round(v, 4) for k, v in state.timings.items()},
        notes=list(dict.fromkeys(state.notes)),
    )


class DeepRunner(AppRunner[DeepState, DeepEvent]):
    """Compiles the deep-research graph once; runs sessions as threads of ``store``
    (what ``ResearchAssistant.deep_research``, ``stream_deep_research`` and
    ``continue_deep_research`` do).

    Args:
        llm: Claude (or any ``LLM``), or ``None`` for the rules.
        store: where sessions are checkpointed.
        root: the sessions folder (``$RESEARCH_FSM_HOME/sessions``).
        web: the web search, or ``None`` when there is no Tavily key.
        index_dir: where document indexes are kept.
        clock: the time a session starts (its date goes into the prompts); default the system's.
    """

    agents = AGENTS
    step_limit = 60

    def __init__(
        self,
        *,
        llm: LLM | None,
        store: CheckpointStore,
        root: Path,
        web: TopicSearch | None,
        index_dir: Path,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(store=store)
        self.clock = clock
        graph = build_deep_graph(resolve=self._resolve, llm=llm)
        self._app = graph.compile(store=store, step_limit=self.step_limit)  # needs nothing loaded
        self.llm = llm
        self.root = root
        self.web = web
        self.index_dir = index_dir
        self._indexes: dict[str, DocumentSearch] = {}
        self._lock = asyncio.Lock()

    async def documents(
        self, folder: str, progress: Callable[[IndexProgress], object] | None = None
    ) -> DocumentSearch:
        """The folder's search (its index opened, and refreshed, once per runner);
        ``progress`` hears how indexing goes."""
        async with self._lock:
            if folder not in self._indexes:
                index = await DocumentIndex.open(
                    folder, cache_dir=self.index_dir, progress=progress
                )
                self._indexes[folder] = DocumentSearch(index)
            return self._indexes[folder]

    async def aclose(self) -> None:
        """Close the document indexes this runner opened."""
        indexes, self._indexes = list(self._indexes.values()), {}
        for search in indexes:
            await search.index.aclose()

    async def _resolve(self, state: DeepState) -> TopicSearch:
        if state.mode == "docs" and state.docs:
            return await self.documents(state.docs)
        if self.web is None:
            raise DataSourceError(
                "no Tavily key: set TAVILY_API_KEY to search the web",
                source="Tavily",
                retryable=False,
            )
        return self.web

    async def start(
        self,
        topic: object,
        *,
        language: Language | None,
        docs: str | os.PathLike[str] | None,
        formats: tuple[str, ...],
        top_k: int = DEFAULT_TOP_K,
        threshold: float = DEFAULT_THRESHOLD,
        session_id: str | None = None,
        progress: Callable[[IndexProgress], object] | None = None,
    ) -> tuple[dict[str, Any], str]:
        """Check the request, pick the sources, create the session folder: the run's
        input and the session id; ``progress`` hears how indexing the folder goes."""
        lang = report_language(topic, language)
        clean = check_request(topic, lang, formats, top_k, threshold)
        folder = check_docs(docs)
        mode = self.web.mode if folder is None and self.web is not None else "docs"
        if folder is None and self.web is None:
            raise NoResearchSource(
                "deep research needs documents or a web search: give a documents folder "
                f"(--docs DIR, or ${DOCS_ENV}) or set TAVILY_API_KEY"
            )
        if folder is not None:
            await self.documents(str(folder), progress)
        if session_id is None:
            sid, path = await asyncio.to_thread(new_session_folder, self.root)
        else:
            sid, path = session_id, await asyncio.to_thread(session_folder, self.root, session_id)
        value: dict[str, Any] = {
            "topic": clean,
            "language": lang,
            "formats": list(formats),
            "mode": mode,
            "docs": str(folder) if folder else None,
            "session_dir": str(path),
            "top_k": top_k,
            "threshold": float(threshold),
            "model": self.llm.model if self.llm else None,
            "models": agent_models(self.llm, AGENTS.callers()),
            "started_at": utc_now(self.clock),
        }
        meta = session_meta(DeepState(**value), sid)
        await write_stage(str(path), {"session.json": meta})
        return value, sid

    async def events(
        self, value: dict[str, Any] | None, session_id: str, run: Mapping[str, Any] | None = None
    ) -> AsyncIterator[DeepProgress | DeepText | ResearchReport]:
        """Stage progress, the draft's text as it is written, then the report; ``run``:
        what a continued session had written."""
        stream = self.app.stream(value, thread_id=session_id)
        async for event in self.progress(stream, run if run is not None else value):
            yield event

    def label(self, node: str, run: Mapping[str, Any], branch: str | None = None) -> str:
        """The stage's line in the session's language; an analysis's names its source's
        number (``Analysing source 2``)."""
        line = super().label(node, run)
        index = _BRANCH_INDEX.search(branch or "")
        return f"{line} {int(index.group(1)) + 1}" if index is not None else line

    def started(self, event: NodeStarted, run: Mapping[str, Any]) -> DeepProgress:
        """A stage (or one source's analysis) started."""
        message = self.label(event.node, run, event.branch)
        return DeepProgress(event.node, event.branch, False, message=message)

    def finished(self, event: NodeFinished, run: Mapping[str, Any]) -> DeepProgress:
        """A stage (or one source's analysis) finished."""
        message = self.label(event.node, run, event.branch)
        return DeepProgress(event.node, event.branch, True, message=message)

    def emitted(self, event: Emitted, run: Mapping[str, Any]) -> DeepText | None:
        """A piece of the draft as the synthesis writes it."""
        return DeepText(str(event.data)) if event.kind == "token" else None

    def ended(self, result: RunResult[DeepState]) -> ResearchReport:
        """The session's report."""
        return to_research_report(result.state, result.thread_id)

    async def research(
        self,
        topic: str,
        *,
        language: Language | None = None,
        docs: str | os.PathLike[str] | None = None,
        formats: tuple[str, ...] = ("md",),
        top_k: int = DEFAULT_TOP_K,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> ResearchReport:
        """Research ``topic`` and save a cited, verified report: the last event of ``stream``.
        ``language``: the report's (default: the topic's, Japanese or English)."""
        stream = self.stream(
            topic, language=language, docs=docs, formats=formats, top_k=top_k, threshold=threshold
        )
        async for event in stream:
            if isinstance(event, ResearchReport):
                return event
        raise AssertionError("a deep-research run ends with a ResearchReport")  # pragma: no cover

    async def stream(
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
        indexing: asyncio.Queue[IndexProgress] = asyncio.Queue()
        starting = asyncio.ensure_future(
            self.start(
                topic,
                language=language,
                docs=docs,
                formats=formats,
                top_k=top_k,
                threshold=threshold,
                session_id=session_id,
                progress=indexing.put_nowait,
            )
        )
        try:
            while not starting.done() or not indexing.empty():
                waiting = asyncio.ensure_future(indexing.get())
                await asyncio.wait({starting, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():
                    waiting.cancel()
                    continue
                step = waiting.result()
                message = self.label("indexing", {"language": report_language(topic, language)})
                yield DeepProgress("indexing", None, step.finished, step, message)
        finally:
            if not starting.done():
                starting.cancel()
        value, sid = await starting
        async for event in self.events(value, sid):
            yield event

    async def continue_run(self, session_id: str) -> AsyncIterator[DeepEvent]:
        """Continue a session interrupted by a crash: finished stages and analyses are
        not run again. A finished session yields its report again."""
        try:
            validate_thread_id(session_id)
        except ValueError as exc:
            raise InvalidResearchRequest(f"invalid session id: {exc}") from None
        snapshot = await self.app.get_state(session_id)
        if snapshot is None:
            raise InvalidResearchRequest(f"there is no deep-research session `{session_id}`")
        if snapshot.status == "completed":
            yield to_research_report(snapshot.state, session_id)
            return
        state = snapshot.state
        async for event in self.events(None, session_id, {"language": state.language}):
            yield event
