"""``create_server``: the research assistant's tools and resources on the MCP SDK's
``MCPServer``. The assistant (and with it the company directory) loads on the first
tool call, so listing the tools costs only the SDK's import."""

# No ``from __future__ import annotations``: the SDK reads the tools' signatures.

import asyncio
import contextlib
import importlib
import secrets
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.stdio import stdio_server
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ToolAnnotations,
)
from mcp_types import Resource as MCPResource
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field, create_model

from .. import __version__
from .._logging import get_logger
from ..errors import ResearchError
from ._models import (
    AskResult,
    ContinueResult,
    DeepResult,
    ReportItem,
    ReportList,
    ReportResult,
    SessionItem,
    SessionList,
    SourceItem,
)
from ._options import ServerOptions
from ._sealing import StoreSealing

if TYPE_CHECKING:
    from ..assistant import ResearchAssistant
    from ..deep import ResearchReport
    from ..reports import Report

__all__ = ["SCHEME", "ServerOptions", "create_server"]

SCHEME = "research-fsm"
"""The resources' URI scheme: ``research-fsm://reports/<id>/report.md`` and so on."""
_INPUT_REQUIRED = "2026-07-28"
"""The protocol version from which elicitation rides an ``InputRequiredResult``."""
_FILES = {
    "report.md": "text/markdown",
    "report.pdf": "application/pdf",
    "sources.json": "application/json",
}
_log = get_logger("research_fsm.mcp")

INSTRUCTIONS = """\
Company research and deep research, offline by default.
- ask: questions about companies; when it asks back (status needs_clarification), call ask
  again with the answer and the same conversation id.
- report: a complete company report (Markdown, optionally PDF), saved and listed as resources.
- deep_research: cited, verified research on any topic over the configured documents folders
  (or the web with a Tavily key).
- continue_run: finish a report or session that was cancelled or interrupted.
"""


class _Lazy:
    """The assistant, built on first use (importing it takes a second: off the loop)."""

    def __init__(
        self,
        options: ServerOptions,
        factory: "Callable[[], ResearchAssistant] | None",
        sealing: StoreSealing,
    ):
        self.options = options
        self.factory = factory
        self.sealing = sealing
        self.assistant: ResearchAssistant | None = None
        self.lock = asyncio.Lock()
        self.sessions = 0

    async def get(self) -> "ResearchAssistant":
        async with self.lock:
            if self.assistant is not None:
                return self.assistant
            made: ResearchAssistant
            if self.factory is not None:
                made = self.factory()
            else:
                root = await asyncio.to_thread(importlib.import_module, "research_fsm.assistant")
                made = await asyncio.to_thread(
                    root.ResearchAssistant.from_env, source=self.options.source
                )
            self.sealing.use(await made.store.secret())  # a question back's state key
            self.assistant = made
            return made

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """One client's connection (the SDK's lifespan: one per stdio process, one per
        HTTP session); the assistant is closed, and made again on the next call, when
        the last one ends, so no session finds its LLM client closed by another."""
        self.sessions += 1
        try:
            yield None
        finally:
            self.sessions -= 1
            if self.sessions == 0 and self.assistant is not None:
                assistant, self.assistant = self.assistant, None
                await assistant.aclose()


# -- the conversions -------------------------------------------------------------------


def _resource_uris(kind: str, folder: Path | None, paths: list[Path] | None = None) -> list[str]:
    if folder is None:
        return []
    names = [p.name for p in paths] if paths is not None else list(_FILES)
    return [f"{SCHEME}://{kind}/{folder.name}/{name}" for name in _FILES if name in names]


def _sources(raw: list[dict[str, Any]]) -> list[SourceItem]:
    items = []
    for source in raw:
        title = str(source.get("title") or source.get("id") or "")
        where = source.get("url") or source.get("locator") or ""
        items.append(SourceItem(title=title, url=str(where)))
    return items


def _report_result(report: "Report") -> ReportResult:
    if report.status == "needs_clarification":
        return ReportResult(
            status="needs_clarification",
            run_id=report.thread_id,
            company=report.company,
            question=report.question,
            choices=list(report.choices),
        )
    return ReportResult(
        status="completed",
        run_id=report.thread_id,
        company=report.company,
        summary=report.summary_line(),
        score=report.quality.score if report.quality else None,
        markdown=report.markdown,
        resources=_resource_uris("reports", report.folder, report.paths),
        sources=_sources(report.sources),
    )


def _deep_result(report: "ResearchReport") -> DeepResult:
    ratio = report.verification.get("ratio")
    return DeepResult(
        status=report.status,
        session_id=report.session_id,
        topic=report.topic,
        language=report.language,
        mode=report.mode,
        summary=report.summary,
        markdown=report.markdown,
        verified_ratio=float(ratio) if isinstance(ratio, (int, float)) else None,
        notes=list(report.notes),
        resources=_resource_uris("sessions", report.folder, report.paths),
        sources=_sources(report.sources),
    )


def _fail(exc: BaseException) -> ToolError:
    """The project's one-line message as the tool's error (never a traceback)."""
    if isinstance(exc, ToolError):
        return exc
    known = isinstance(exc, (ResearchError, ValueError, OSError, LookupError))
    if not known:
        engine = importlib.import_module("research_fsm.engine")
        known = isinstance(exc, engine.EngineError)
    if known:
        return ToolError(str(exc))
    _log.error("tool failed", error=type(exc).__name__, message=str(exc))
    return ToolError(f"unexpected error: {type(exc).__name__}: {exc}")


# -- elicitation -----------------------------------------------------------------------


def _answer_model(choices: list[str]) -> type[BaseModel]:
    """The form asked: a choice among ``choices`` (an enum), else a free text."""
    if choices:
        kind: Any = Literal[tuple(choices)]
        return create_model("Clarification", answer=(kind, Field(description="Your choice")))
    return create_model(
        "Clarification", answer=(str, Field(description="Your answer", min_length=1))
    )


def _can_elicit(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _modern(ctx: Context) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, _INPUT_REQUIRED)


class _Asked:
    """What the client answered to a question back: the text, or ``None`` (declined)."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer


async def _elicit_now(ctx: Context, question: str, choices: list[str]) -> _Asked:
    """Ask mid-call (protocols before 2026-07-28: an ``elicitation/create`` request)."""
    result = await ctx.elicit(question, _answer_model(choices))
    if result.action != "accept":
        return _Asked(None)
    return _Asked(str(getattr(result.data, "answer", "")).strip() or None)


def _elicit_later(question: str, choices: list[str], state: str) -> InputRequiredResult:
    """Ask by returning (2026-07-28 on: the client retries with the answer)."""
    schema = render_elicitation_schema(_answer_model(choices))
    request = ElicitRequest(
        params=ElicitRequestFormParams(message=question, requested_schema=schema)
    )
    return InputRequiredResult(input_requests={"clarify": request}, request_state=state)


def _answer_from_retry(ctx: Context, prefix: str) -> tuple[str, _Asked] | None:
    """On a retry round: the run id carried in ``request_state`` and the answer."""
    state = ctx.request_state
    responses = ctx.input_responses
    if not state or not state.startswith(prefix) or responses is None:
        return None
    run_id = state[len(prefix) :]
    response = responses.get("clarify")
    if not isinstance(response, ElicitResult) or response.action != "accept":
        return run_id, _Asked(None)
    content = response.content or {}
    return run_id, _Asked(str(content.get("answer", "")).strip() or None)


# -- progress --------------------------------------------------------------------------


class _Progress:
    """Numbers the engine's progress events and passes them on as MCP progress."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.count = 0

    async def __call__(self, message: str) -> None:
        self.count += 1
        with contextlib.suppress(Exception):  # a client gone away is no reason to stop
            await self.ctx.report_progress(self.count, None, message)


def _stage(name: str, branch: str | None, finished: bool) -> str:
    where = f" ({branch})" if branch else ""
    return f"{name}{where} {'done' if finished else 'started'}"


# -- the server ------------------------------------------------------------------------


def create_server(
    options: ServerOptions | None = None,
    *,
    assistant: "Callable[[], ResearchAssistant] | None" = None,
) -> MCPServer[Any]:
    """The MCP server: tools ``ask``, ``report``, ``deep_research``, ``continue_run``,
    ``list_reports``, ``list_sessions``; saved reports and research sessions as resources.

    Args:
        options: the documents roots and the data source.
        assistant: makes the assistant (default: ``ResearchAssistant.from_env`` on the
            first tool call).
    """
    options = options if options is not None else ServerOptions()
    sealing = StoreSealing()
    lazy = _Lazy(options, assistant, sealing)

    def lifespan(_: MCPServer[Any]) -> contextlib.AbstractAsyncContextManager[None]:
        return lazy.session()

    server = _ResearchServer(
        "research-fsm",
        title="research_fsm",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        lifespan=lifespan,
        request_state_security=sealing.security(),
    )
    sealing.install(server.middleware, lazy.get)

    @server.tool(
        annotations=ToolAnnotations(title="Ask about a company", read_only_hint=False),
        structured_output=True,
    )
    async def ask(
        question: Annotated[
            str, Field(description="The question, or the answer to a question back.")
        ],
        ctx: Context,
        conversation: Annotated[
            str | None,
            Field(description="The conversation id from an earlier ask (default: a new one)."),
        ] = None,
    ) -> AskResult | InputRequiredResult:
        """Answer a question about a company (offline directory, or the web with keys).
        Follow-ups in the same conversation keep the company. When the question is
        ambiguous it asks back: through the client's form (elicitation) when it has one,
        else as the result, with the conversation id to answer with."""
        try:
            research = await lazy.get()
            retry = _answer_from_retry(ctx, "ask:")
            if retry is not None:
                thread, asked = retry
                pending = await research.pending_question(thread)
                if asked.answer is None or pending is None:
                    return await _ask_outcome(research, ctx, thread, None)
                text = asked.answer
            else:
                thread = _conversation(conversation)
                text = question
            return await _ask_outcome(research, ctx, thread, text)
        except Exception as exc:
            raise _fail(exc) from None

    async def _ask_outcome(
        research: "ResearchAssistant", ctx: Context, thread: str, text: str | None
    ) -> AskResult | InputRequiredResult:
        progress = _Progress(ctx)
        while True:
            if text is None:  # declined: the question stays pending for the next ask
                pending = await research.pending_question(thread)
                if pending is None:
                    raise ToolError(f"conversation `{thread}` is not waiting for an answer")
                choices = await _pending_choices(research, thread)
                return _ask_result_from(pending).model_copy(update={"choices": choices})
            reply = await _stream_ask(research, text, thread, progress)
            if reply.status == "answered" or not _can_elicit(ctx):
                return reply
            if _modern(ctx):
                return _elicit_later(reply.text, reply.choices, f"ask:{thread}")
            asked = await _elicit_now(ctx, reply.text, reply.choices)
            text = asked.answer

    @server.tool(
        annotations=ToolAnnotations(title="Write a company report"), structured_output=True
    )
    async def report(
        company: Annotated[str, Field(description="The company's name or ticker, e.g. Siemens.")],
        ctx: Context,
        language: Annotated[
            Literal["en", "ja"], Field(description="The report's language.")
        ] = "en",
        pdf: Annotated[bool, Field(description="Also write a PDF.")] = False,
    ) -> ReportResult | InputRequiredResult:
        """Research a company and save a report (financial, market, product sections, a
        quality score, sources) as Markdown, and PDF when asked; progress per agent."""
        try:
            research = await lazy.get()
            progress = _Progress(ctx)
            retry = _answer_from_retry(ctx, "report:")
            if retry is not None:
                run_id, asked = retry
                events = (
                    research.continue_report(run_id, answer=asked.answer) if asked.answer else None
                )
                if events is None:
                    return await _pending_report(research, run_id)
            else:
                run_id = f"report-{secrets.token_hex(5)}"
                formats = ("md", "pdf") if pdf else ("md",)
                await progress(f"{run_id}: started")
                events = research.stream_report(
                    company, language=language, formats=formats, thread_id=run_id
                )
            return await _report_outcome(research, ctx, progress, events)
        except Exception as exc:
            raise _fail(exc) from None

    async def _report_outcome(
        research: "ResearchAssistant",
        ctx: Context,
        progress: _Progress,
        events: "AsyncIterator[Any]",
    ) -> ReportResult | InputRequiredResult:
        while True:
            done = _report_result(await _follow_report(events, progress))
            if done.status == "completed" or not _can_elicit(ctx):
                return done
            question = done.question or "Which company?"
            if _modern(ctx):
                return _elicit_later(question, done.choices, f"report:{done.run_id}")
            asked = await _elicit_now(ctx, question, done.choices)
            if asked.answer is None:
                return done
            events = research.continue_report(done.run_id, answer=asked.answer)

    async def _pending_report(research: "ResearchAssistant", run_id: str) -> ReportResult:
        runner = await research.report_runner()
        snapshot = await (await runner.graph()).get_state(run_id)
        payload = snapshot.suspension.payload if snapshot and snapshot.suspension else {}
        return ReportResult(
            status="needs_clarification",
            run_id=run_id,
            question=str(payload.get("question", "Which company?")),
            choices=[str(c) for c in payload.get("choices", [])],
        )

    @server.tool(
        annotations=ToolAnnotations(title="Deep research on a topic"), structured_output=True
    )
    async def deep_research(
        topic: Annotated[str, Field(description="What to research.")],
        ctx: Context,
        documents_folder: Annotated[
            str | None,
            Field(
                description="A folder under one of the server's --docs-root folders (a relative "
                "path is taken from the first); default: the first --docs-root, else the web."
            ),
        ] = None,
        language: Annotated[
            Literal["en", "ja"] | None,
            Field(description="The report's language (default: the topic's)."),
        ] = None,
    ) -> DeepResult:
        """Research a topic over your documents (or the web with a Tavily key): the top
        sources analysed in parallel, every claim checked against the passage it cites,
        a cited Markdown report saved as a resource; progress per stage."""
        try:
            roots = options.docs_roots
            if documents_folder is not None:
                folder: Path | None = await asyncio.to_thread(roots.check, documents_folder)
            else:
                folder = roots.default()
            research = await lazy.get()
            progress = _Progress(ctx)
            session = _session_id()
            await progress(f"{session}: started")
            events = research.stream_deep_research(
                topic, language=language, docs=folder, session_id=session
            )
            return _deep_result(await _follow_deep(events, progress))
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(annotations=ToolAnnotations(title="Continue a run"), structured_output=True)
    async def continue_run(
        run_id: Annotated[
            str,
            Field(description="A report's run_id (report-...) or a session id (deep-...)."),
        ],
        ctx: Context,
        answer: Annotated[
            str | None,
            Field(description="A report's answer to its question back (which company?)."),
        ] = None,
    ) -> ContinueResult:
        """Finish a report or deep-research session that was cancelled or interrupted
        (what had finished is not run again; a finished one is returned as it is), or
        answer the question a report asked back (``answer``)."""
        try:
            research = await lazy.get()
            progress = _Progress(ctx)
            if run_id.startswith("report-"):
                finished = await _finished_report(research, run_id)
                if finished is not None:  # the runner yields nothing for a finished run
                    return ContinueResult(kind="report", report=finished)
                events = research.continue_report(run_id, answer=answer)
                done = _report_result(await _follow_report(events, progress))
                return ContinueResult(kind="report", report=done)
            if run_id.startswith("deep-"):
                if answer is not None:
                    raise ToolError(f"session `{run_id}` asks nothing back; leave out answer")
                deep = research.continue_deep_research(run_id)
                return ContinueResult(
                    kind="deep_research", research=_deep_result(await _follow_deep(deep, progress))
                )
            raise ToolError(
                f"run id {run_id!r} is neither a report (report-...) nor a deep-research "
                "session (deep-...); list_sessions lists the sessions"
            )
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        annotations=ToolAnnotations(title="List reports", read_only_hint=True),
        structured_output=True,
    )
    async def list_reports() -> ReportList:
        """The saved company reports, newest first, with their resources."""
        try:
            return await asyncio.to_thread(_report_list)
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        annotations=ToolAnnotations(title="List research sessions", read_only_hint=True),
        structured_output=True,
    )
    async def list_sessions() -> SessionList:
        """The deep-research sessions, newest first (``running`` ones were interrupted
        or cancelled: continue_run finishes them), with their resources."""
        try:
            return await asyncio.to_thread(_session_list)
        except Exception as exc:
            raise _fail(exc) from None

    for kind in ("reports", "sessions"):
        for name, mime in _FILES.items():
            server.resource(
                f"{SCHEME}://{kind}/{{id}}/{name}",
                name=f"{kind[:-1]}-{name}",
                description=f"A saved {'report' if kind == 'reports' else 'research session'}'s {name}",
                mime_type=mime,
            )(_reader(kind, name))
    return server


class _ResearchServer(MCPServer[Any]):
    """``MCPServer`` whose resource list is the saved reports' and sessions' files."""

    async def serve_over(self, stdin: Any, stdout: Any) -> None:
        """Serve one client over ``stdin`` (an async iterator of lines) and ``stdout``
        (``await write(text)``, ``await flush()``): the SDK's stdio transport on the
        streams the stdio front hands over (``_front``)."""
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        return listed + await asyncio.to_thread(_saved_resources)


def _saved_resources() -> list[MCPResource]:
    resources = []
    for entry in _report_list().reports:
        for uri in entry.resources:
            resources.append(_resource(uri, f"Report on {entry.company} ({entry.generated_at})"))
    for session in _session_list().sessions:
        for uri in session.resources:
            resources.append(_resource(uri, f"Research: {session.topic} ({session.created_at})"))
    return resources


def _resource(uri: str, title: str) -> MCPResource:
    name = uri.rsplit("/", 1)[-1]
    return MCPResource(uri=uri, name=name, title=title, mime_type=_FILES[name])


def _folder(kind: str) -> Path:
    if kind == "reports":
        return cast(Path, importlib.import_module("research_fsm.reports").reports_home())
    return cast(Path, importlib.import_module("research_fsm.deep").sessions_home())


def _saved_uris(kind: str, folder: Path) -> list[str]:
    """The URIs of the files of ``_FILES`` that ``folder`` holds."""
    return [
        f"{SCHEME}://{kind}/{folder.name}/{name}" for name in _FILES if (folder / name).is_file()
    ]


def _report_list() -> ReportList:
    reports = importlib.import_module("research_fsm.reports")
    items = []
    for entry in reports.list_reports(reports.reports_home()):
        folder: Path = entry.path
        items.append(
            ReportItem(
                id=folder.name,
                company=entry.company,
                generated_at=entry.generated_at,
                score=entry.score,
                resources=_saved_uris("reports", folder),
            )
        )
    return ReportList(reports=items)


def _session_list() -> SessionList:
    deep = importlib.import_module("research_fsm.deep")
    items = []
    for entry in deep.list_sessions(deep.sessions_home()):
        folder: Path = entry.folder
        items.append(
            SessionItem(
                id=entry.id,
                topic=entry.topic,
                status=entry.status,
                created_at=entry.created_at,
                mode=entry.mode,
                resources=_saved_uris("sessions", folder),
            )
        )
    return SessionList(sessions=items)


def _reader(kind: str, name: str) -> Callable[[str], Any]:
    async def read(id: str) -> str | bytes:
        return await asyncio.to_thread(_read_file, kind, id, name)

    read.__name__ = f"read_{kind}_{name.replace('.', '_')}"
    return read


def _read_file(kind: str, id: str, name: str) -> str | bytes:
    """A saved file by its folder's name: only a direct child of the reports' (or the
    sessions') folder, never a link out of it."""
    root = _folder(kind)
    if not id or id in (".", "..") or "/" in id or "\\" in id or "\x00" in id:
        raise ResourceError(f"no {kind[:-1]} {id!r}")
    path = root / id / name
    try:
        real = path.resolve(strict=True)
        if not real.is_relative_to(root.resolve()):
            raise ResourceError(f"no {kind[:-1]} {id!r}")
        data = real.read_bytes()
    except OSError:
        raise ResourceError(f"no {name} in {kind[:-1]} {id!r}") from None
    return data if name.endswith(".pdf") else data.decode("utf-8", errors="replace")


async def _finished_report(research: "ResearchAssistant", run_id: str) -> ReportResult | None:
    """The result of a report run that has completed (``None`` if it has not)."""
    runner = await research.report_runner()
    snapshot = await (await runner.graph()).get_state(run_id)
    if snapshot is None or snapshot.status != "completed":
        return None
    state = snapshot.state
    saved_to = state.saved_to
    if not saved_to:
        return None
    paths = [Path(p) for p in state.files]
    markdown = await asyncio.to_thread(_read_text, paths[0]) if paths else ""
    return ReportResult(
        status="completed",
        run_id=run_id,
        company=state.company,
        summary=f"{state.company}: saved in {saved_to}",
        score=state.quality.score if state.quality else None,
        markdown=markdown,
        resources=_resource_uris("reports", Path(saved_to), paths),
        sources=[SourceItem(title=s.title, url=s.url) for s in state.sources],
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _conversation(conversation: str | None) -> str:
    if conversation is None:
        return f"mcp-{secrets.token_hex(4)}"
    engine = importlib.import_module("research_fsm.engine")
    try:
        return cast(str, engine.validate_thread_id(conversation))
    except ValueError as exc:
        raise ToolError(str(exc).replace("thread_id", "conversation id", 1)) from None


def _session_id() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"deep-{stamp}-{secrets.token_hex(8)}"


def _ask_result_from(reply: Any) -> AskResult:
    sources = [SourceItem(title=s.title, url=s.url) for s in reply.sources]
    return AskResult(
        status=reply.status,
        text=reply.text,
        conversation=reply.thread_id,
        company=reply.company,
        confidence=reply.confidence,
        sources=sources,
    )


async def _stream_ask(
    research: "ResearchAssistant", text: str, thread: str, progress: _Progress
) -> AskResult:
    qa = importlib.import_module("research_fsm.qa")
    answer = None
    async with research.stream(text, thread_id=thread) as events:
        async for event in events:
            if isinstance(event, qa.Progress):
                await progress(event.message)
            elif isinstance(event, qa.Answer):
                answer = event.reply
    if answer is None:  # pragma: no cover - a stream ends with its Answer
        raise ToolError("the question ended without an answer")
    result = _ask_result_from(answer)
    if answer.status == "needs_clarification":
        choices = await _pending_choices(research, thread)
        result = result.model_copy(update={"choices": choices})
    return result


async def _pending_choices(research: "ResearchAssistant", thread: str) -> list[str]:
    snapshot = await (await research.graph()).get_state(thread)
    if snapshot is None or snapshot.suspension is None:
        return []
    return [str(c) for c in snapshot.suspension.payload.get("choices", [])]


async def _follow_report(events: "AsyncIterator[Any]", progress: _Progress) -> "Report":
    reports = importlib.import_module("research_fsm.reports")
    async with contextlib.aclosing(cast(Any, events)) as stream:
        async for event in stream:
            if isinstance(event, reports.Report):
                return cast("Report", event)
            await progress(_stage(event.agent, event.branch, event.finished))
    raise ToolError("the report run ended without a report")


async def _follow_deep(events: "AsyncIterator[Any]", progress: _Progress) -> "ResearchReport":
    deep = importlib.import_module("research_fsm.deep")
    async with contextlib.aclosing(cast(Any, events)) as stream:
        async for event in stream:
            if isinstance(event, deep.ResearchReport):
                return cast("ResearchReport", event)
            if isinstance(event, deep.DeepProgress):
                await progress(_stage(event.stage, event.branch, event.finished))
    raise ToolError("the research session ended without a report")
