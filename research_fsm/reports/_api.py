"""The library API of reports: ``Report``, its progress events, and the runner the
assistant delegates ``report`` / ``stream_report`` to."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..common.files import Clock, utc_now
from ..common.models import IndexLoader
from ..common.runner import AppRunner
from ..common.writer import check_pdf_fonts
from ..engine import (
    CheckpointStore,
    NodeFinished,
    NodeStarted,
    RunResult,
    StateGraph,
    SuspendToken,
)
from ..errors import ResearchError
from ..llm import LLM, Usage, agent_models
from ..sources import CompanyIndex, DataSource
from ._agent_table import AGENTS
from ._compose import sources_json
from ._graph import build_report_graph
from ._model import Language, Quality, ReportState
from ._research import Describe
from ._store import check_out_folder

__all__ = ["CompanyNotFound", "InvalidReportRequest", "Report", "ReportProgress", "ReportRunner"]

MAX_NAME_CHARS = 200
"""Longest company name a report accepts."""
PATH_CHARACTERS = ("/", "\\")
"""Characters a company name never has: a name with them is a path, not a company."""


class CompanyNotFound(ResearchError, LookupError):
    """No company matches the name; nothing was saved."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        """The name as given."""


class InvalidReportRequest(ResearchError, ValueError):
    """A bad name, language or format."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """A finished report (or the question asked back about the company)."""

    status: Literal["completed", "needs_clarification"]
    thread_id: str
    company: str | None
    markdown: str = ""
    paths: list[Path] = field(default_factory=list)
    folder: Path | None = None
    quality: Quality | None = None
    iterations: int = 0
    sources: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    question: str | None = None
    token: str | None = None
    choices: list[str] = field(default_factory=list)

    @property
    def cost_usd(self) -> float | None:
        """Total estimated LLM cost; ``None`` when unknown (a model without a price)."""
        return sum(self.usage.values(), Usage()).cost_usd

    def summary_line(self) -> str:
        """One line: company, the score and what it measures, iterations, sources (and
        whether they were fetched), LLM calls and cost."""
        calls = sum(u.calls for u in self.usage.values())
        count = len(self.sources)
        offline = count and all(source.get("dataset") for source in self.sources)
        sources = f"{count} source{'s' if count != 1 else ''}" + (
            " (cited by the offline directory, not fetched)" if offline else ""
        )
        return (
            f"{self.company}: {self.score_phrase()}, {self.iterations} iteration"
            f"{'s' if self.iterations != 1 else ''}, {sources}, "
            f"LLM {calls} calls {sum(self.usage.values(), Usage()).cost_text()}"
        )

    def score_phrase(self) -> str:
        """The score with what it measures: "coverage 100/100 (...)" for the rules'
        score, which counts the fields found and sourced, not whether they are right."""
        quality = self.quality
        if quality is None:
            return "not scored"
        if quality.method == "rules":
            return (
                f"coverage {quality.score}/100 (the fields the specialists look for, found "
                "and sourced; not an accuracy check)"
            )
        if quality.method == "llm":
            return f"quality {quality.score}/100 (judged by the LLM)"
        return (
            f"quality {quality.score}/100 (the mean of the rules' coverage "
            f"{quality.rule_score}/100 and the LLM's judgement {quality.llm_score}/100)"
        )


@dataclass(frozen=True, slots=True)
class ReportProgress:
    """An agent started (``finished=False``) or finished; ``branch`` for specialists."""

    agent: str
    """The agent's node name."""
    branch: str | None
    """The parallel branch (a specialist's), or ``None``."""
    finished: bool
    """False when it starts, True when it ends."""
    message: str = ""
    """The agent's progress line in the report's language (from the agent table)."""


def check_request(name: object, language: str, formats: tuple[str, ...]) -> str:
    """The validated name; ``InvalidReportRequest`` naming what is wrong."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidReportRequest("the company name is empty; name a company, e.g. Siemens")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidReportRequest(
            f"the company name is {len(name):,} characters long; the limit is {MAX_NAME_CHARS}"
        )
    if any(ord(ch) < 32 or ch == "\x7f" for ch in name):
        raise InvalidReportRequest("the company name contains control characters")
    if any(ch in name for ch in PATH_CHARACTERS) or name.strip() in (".", ".."):
        raise InvalidReportRequest(
            "the company name contains path characters (/ or \\); name a company, e.g. Siemens"
        )
    if language not in ("en", "ja"):
        raise InvalidReportRequest(f"language {language!r} is not supported; use en or ja")
    unknown = [f for f in formats if f not in ("md", "pdf")]
    if unknown:
        raise InvalidReportRequest(f"unknown report format {unknown[0]!r}; use md and/or pdf")
    check_pdf_fonts(language, formats)
    return " ".join(name.split())


def to_report(result: RunResult[ReportState]) -> Report:
    """The ``Report`` of a run's result; ``CompanyNotFound`` when nothing matched."""
    state = result.state
    if result.suspension is not None:
        payload = result.suspension.payload
        return Report(
            status="needs_clarification",
            thread_id=result.thread_id,
            company=None,
            question=str(payload.get("question")),
            token=str(result.suspension.token),
            choices=list(payload.get("choices") or []),
        )
    if state.not_found is not None:
        raise CompanyNotFound(state.query, state.not_found)
    paths = [Path(p) for p in state.files]
    markdown = paths[0].read_text(encoding="utf-8") if paths else ""
    return Report(
        status="completed",
        thread_id=result.thread_id,
        company=state.company,
        markdown=markdown,
        paths=paths,
        folder=Path(state.saved_to) if state.saved_to else None,
        quality=state.quality,
        iterations=state.iteration,
        sources=sources_json(state),
        usage=dict(state.usage),
        timings=dict(state.timings),
    )


class ReportRunner(AppRunner[ReportState, ReportProgress | Report]):
    """Compiles the report graph on first use and runs reports as threads of ``store``
    (``ResearchAssistant.reports``; the assistant's ``report``, ``stream_report`` and
    ``continue_report`` call it).

    Args:
        source: where the researcher and the specialists search.
        index: the company names the researcher resolves (or what loads them, awaited
            when the graph is first built).
        llm: the language model, or ``None`` for the rules.
        store: where report runs are checkpointed.
        root: the reports folder (``$RESEARCH_FSM_HOME/reports``).
        describe: matches a description to companies (``DataSource.describe``), or ``None``.
        check_answer: checks and cleans the answer to a question asked back (the
            assistant's question check, which raises ``InvalidQuestion``).
        clock: the time a run starts (its date goes into the prompts); default the system's.
    """

    agents = AGENTS
    step_limit = 40

    def __init__(
        self,
        *,
        source: DataSource,
        index: CompanyIndex | IndexLoader,
        llm: LLM | None,
        store: CheckpointStore,
        root: Path,
        describe: Describe | None,
        check_answer: Callable[[object], str],
        clock: Clock | None = None,
    ) -> None:
        super().__init__(store=store)
        self.clock = clock
        self.source = source
        self.index = index
        self.llm = llm
        self.root = root
        self.describe = describe
        self.source_name = source.name
        self.model = llm.model if llm is not None else None
        self.models = agent_models(llm, AGENTS.callers())
        self.check_answer = check_answer
        if isinstance(index, CompanyIndex):  # nothing to load: compiled at once, as before
            graph = build_report_graph(
                source=source, index=index, llm=llm, root=root, describe=describe
            )
            self._app = graph.compile(store=store, step_limit=self.step_limit)

    async def build(self) -> StateGraph[ReportState]:
        """The report graph over the source and the company index."""
        index = self.index if isinstance(self.index, CompanyIndex) else await self.index()
        return build_report_graph(
            source=self.source, index=index, llm=self.llm, root=self.root, describe=self.describe
        )

    async def report(
        self,
        company: str,
        *,
        language: Language = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
    ) -> Report:
        """Research ``company`` and save a report: the last event of ``stream``."""
        async for event in self.stream(company, language=language, formats=formats, out=out):
            if isinstance(event, Report):
                return event
        raise AssertionError("a report run ends with a Report")  # pragma: no cover

    async def stream(
        self,
        company: str,
        *,
        language: Language = "en",
        formats: tuple[str, ...] = ("md",),
        out: Path | None = None,
        thread_id: str | None = None,
    ) -> AsyncIterator[ReportProgress | Report]:
        """``ReportProgress`` per agent as it starts and finishes, then the ``Report``;
        ``thread_id`` names the run (default: a new one)."""
        value, thread = self.start(company, language, formats, out)
        if out is not None:  # the research starts only where its report can be saved
            await asyncio.to_thread(check_out_folder, out)
        async for event in self.events(value, thread_id or thread, None):
            yield event

    async def continue_run(
        self, thread_id: str, *, answer: str | None = None
    ) -> AsyncIterator[ReportProgress | Report]:
        """Continue a report run: answer its question back, or, after a crash, run
        what had not finished (finished specialists are not run again)."""
        snapshot = await (await self.graph()).get_state(thread_id)
        if snapshot is None:
            raise InvalidReportRequest(f"there is no report `{thread_id}`")
        token = snapshot.suspension.token if snapshot.suspension is not None else None
        if token is not None and answer is None:
            raise InvalidReportRequest(f"report `{thread_id}` waits for an answer: which company?")
        payload = {"answer": self.check_answer(answer)} if answer is not None else None
        run = {"language": snapshot.state.language, "company": snapshot.state.company}
        async for event in self.events(payload, thread_id, token, run):
            yield event

    def start(
        self, name: object, language: Language, formats: tuple[str, ...], out: Path | None
    ) -> tuple[dict[str, Any], str]:
        """The run input and a new thread id."""
        query = check_request(name, language, formats)
        value = {
            "query": query,
            "language": language,
            "formats": list(formats),
            "started_at": utc_now(self.clock),
            "out_dir": str(out) if out else None,
            "data_source": self.source_name,
            "model": self.model,
            "models": self.models,
        }
        return value, f"report-{secrets.token_hex(5)}"

    async def events(
        self,
        input: dict[str, Any] | None,
        thread_id: str,
        token: SuspendToken | str | None,
        run: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[ReportProgress | Report]:
        """Progress events, then the ``Report``; ``run``: what a continued run had written."""
        app = await self.graph()
        stream = (
            app.stream_resume(token, input.get("answer") if input else None)
            if token is not None
            else app.stream(input, thread_id=thread_id)
        )
        async for event in self.progress(stream, run if run is not None else input):
            yield event

    def started(self, event: NodeStarted, run: Mapping[str, Any]) -> ReportProgress:
        """An agent started: its line in the report's language."""
        return ReportProgress(event.node, event.branch, False, self.label(event.node, run))

    def finished(self, event: NodeFinished, run: Mapping[str, Any]) -> ReportProgress:
        """An agent finished."""
        return ReportProgress(event.node, event.branch, True, self.label(event.node, run))

    def ended(self, result: RunResult[ReportState]) -> Report:
        """The ``Report``, or the question asked back."""
        return to_report(result)
