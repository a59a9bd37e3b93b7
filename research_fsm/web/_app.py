"""The web page's routes: JSON in, server-sent events or JSON out."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..assistant import ResearchAssistant
from ..deep import mark_session, new_session_id, sessions_home
from ..engine import CompiledGraph
from ..reports import reports_home
from ._events import (
    REPORT_FILES,
    ask_events,
    confidence_data,
    deep_events,
    describe,
    report_events,
    split_sources,
    status,
)
from ._guard import GuardMiddleware, allowed_host_names
from ._inspect import GraphFor, inspector_app
from ._markdown import markdown_tree
from ._past import past_work, saved_report
from ._request import (
    BadRequest,
    flag,
    language,
    read_json,
    text_field,
    thread_id,
    topic_language,
)
from ._sourceview import SourceNotShown, view_source
from ._sse import Pump, event_stream, first

__all__ = ["STATIC", "assistant_graphs", "create_app"]

STATIC: Final = Path(__file__).parent / "static"
"""The page: index.html, app.js and app.css (package data, no build step)."""
_FOLDER_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")
_REPORT_THREAD_RE: Final = re.compile(r"^report-[0-9a-f]{10}$")
_SESSION_RE: Final = re.compile(r"^deep-\d{8}T\d{6}Z-[0-9a-f]{16}$")
_TYPES: Final = {"report.md": "text/markdown; charset=utf-8", "report.pdf": "application/pdf"}
T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]


def _json_errors(handler: Handler) -> Handler:
    """Errors become ``{"error": ..., "message": ...}`` with their status (400, 409, 413...)."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:
            body = {"error": type(exc).__name__, "message": describe(exc)}
            return JSONResponse(body, status(exc), headers={"Cache-Control": "no-store"})

    return wrapped


async def _stream(
    events: AsyncIterator[T],
    convert: Callable[[T], Iterable[bytes]],
    jobs: dict[str, Pump[Any]] | None = None,
    run: str | None = None,
) -> Response:
    """SSE of ``events``; an error before the first event is a JSON error instead. With
    ``run`` (a report's or session's thread id), the run is listed in ``jobs`` so that
    ``/api/cancel`` can stop it, and its id sent in the ``X-Run-Id`` header."""
    pump = Pump(events)
    if jobs is not None and run is not None:
        for ended in [key for key, job in jobs.items() if job.done]:
            del jobs[ended]
        jobs[run] = pump
    head = await first(pump)
    headers = {"X-Run-Id": run} if run is not None else None
    return event_stream(pump, head, convert, describe, headers)


def assistant_graphs(assistant: ResearchAssistant) -> GraphFor:
    """The graph that runs each of the assistant's threads, for the inspector: company
    reports (``report-...``), deep research (``deep-...``), else the conversations'."""

    async def graph_for(thread: str) -> CompiledGraph[Any] | None:
        if thread.startswith("report-"):
            return await assistant.reports.graph()
        if thread.startswith("deep-"):
            return await assistant.deep.graph()
        return await assistant.graph()

    return graph_for


class _Routes:
    """The handlers, around one assistant."""

    def __init__(self, assistant: ResearchAssistant, docs: str | None) -> None:
        self.assistant = assistant
        self.docs = docs
        self.jobs: dict[str, Pump[Any]] = {}
        """The reports and research sessions running, by thread id (for ``cancel``)."""

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def ask(self, request: Request) -> Response:
        body = await read_json(request)
        thread, text = thread_id(body.get("thread_id")), text_field(body, "text")
        return await _stream(aiter(self.assistant.stream(text, thread_id=thread)), ask_events)

    async def clarify(self, request: Request) -> Response:
        body = await read_json(request)
        token, text = text_field(body, "token"), text_field(body, "text")
        return await _stream(aiter(self.assistant.stream_clarify(token, text)), ask_events)

    async def thread(self, request: Request) -> Response:
        thread = thread_id(request.path_params["thread_id"])
        messages: list[dict[str, Any]] = []
        for message in await self.assistant.history(thread):
            text, sources = split_sources(message.content)
            if message.role != "assistant":
                text, sources = message.content, []
            entry: dict[str, Any] = {"role": message.role, "text": text, "sources": sources}
            if message.role == "assistant":
                entry["tree"] = markdown_tree(text, breaks=True)
                entry |= confidence_data(message.confidence)
            messages.append({**entry, "time": message.timestamp})
        pending = await self.assistant.pending_question(thread)
        waiting = None if pending is None else {"text": pending.text, "token": pending.token}
        data = {"thread_id": thread, "messages": messages, "pending": waiting}
        return JSONResponse(data, headers={"Cache-Control": "no-store"})

    async def report(self, request: Request) -> Response:
        body = await read_json(request)
        company, lang = text_field(body, "company"), language(body)
        formats = ("md", "pdf") if flag(body, "pdf") else ("md",)
        run = f"report-{secrets.token_hex(5)}"
        events = self.assistant.stream_report(
            company, language=lang, formats=formats, thread_id=run
        )
        return await _stream(events, report_events, self.jobs, run)

    async def report_answer(self, request: Request) -> Response:
        body = await read_json(request)
        thread = body.get("thread_id")
        if not isinstance(thread, str) or not _REPORT_THREAD_RE.match(thread):
            raise BadRequest("`thread_id` must be a report run's id (report-...)")
        events = self.assistant.continue_report(thread, answer=text_field(body, "text"))
        return await _stream(events, report_events, self.jobs, thread)

    async def continue_run(self, request: Request) -> Response:
        """Continue a report or research session that was cancelled (or cut short by a
        crash): what it had finished is not done again."""
        thread = _run_id(await read_json(request))
        if thread.startswith("report-"):
            reports = self.assistant.continue_report(thread)
            return await _stream(reports, report_events, self.jobs, thread)
        sessions = self.assistant.continue_deep_research(thread)
        return await _stream(sessions, deep_events, self.jobs, thread)

    async def cancel(self, request: Request) -> Response:
        """Stop a running report or research session: its run is cancelled and waited
        for (its thread free again); every step it finished stays saved."""
        thread = _run_id(await read_json(request))
        job = self.jobs.pop(thread, None)
        if job is None or job.done:
            message = f"no report or research `{thread}` is running on this server"
            return JSONResponse({"error": "NotRunning", "message": message}, 409)
        await job.aclose()
        if thread.startswith("deep-"):
            folder = sessions_home() / thread
            await asyncio.to_thread(mark_session, folder, "cancelled")
        return JSONResponse(
            {"thread_id": thread, "status": "cancelled"}, headers={"Cache-Control": "no-store"}
        )

    async def deep(self, request: Request) -> Response:
        body = await read_json(request)
        topic, lang = text_field(body, "topic"), topic_language(body)
        formats = ("md", "pdf") if flag(body, "pdf") else ("md",)
        run = new_session_id()
        events = self.assistant.stream_deep_research(
            topic,
            language=lang,
            docs=self.docs,
            formats=formats,
            session_id=run,
        )
        return await _stream(events, deep_events, self.jobs, run)

    async def past(self, request: Request) -> Response:
        return JSONResponse(await past_work(self.assistant), headers={"Cache-Control": "no-store"})

    async def saved(self, request: Request) -> Response:
        kind, ident = request.path_params["kind"], request.path_params["ident"]
        if kind not in ("reports", "sessions") or not _FOLDER_RE.match(ident):
            raise BadRequest("no such report: /api/saved/reports|sessions/ID")
        root = (reports_home() if kind == "reports" else sessions_home()).resolve()
        found = await saved_report(kind, root / ident)
        if found is None:
            return JSONResponse({"error": "NotFound", "message": "no such report"}, 404)
        return JSONResponse(found, headers={"Cache-Control": "no-store"})

    async def source(self, request: Request) -> Response:
        """A research session's cited file at its cited lines (a PDF as it is), read-only,
        and only from inside the documents folder the session searched."""
        session, cited = request.path_params["session"], request.path_params["source"]
        if not _SESSION_RE.match(session) or not re.fullmatch(r"S\d{1,5}", cited):
            raise BadRequest("no such source: /api/source/deep-.../S1")
        try:
            view = await view_source(sessions_home() / session, cited)
        except SourceNotShown as exc:
            return JSONResponse({"error": "SourceNotShown", "message": str(exc)}, 404)
        headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        if view.text is None:
            return FileResponse(
                view.path,
                media_type="application/pdf",
                content_disposition_type="inline",
                filename=view.path.name,
                headers=headers,
            )
        return PlainTextResponse(view.text, headers=headers)

    async def file(self, request: Request) -> Response:
        kind, ident, name = (request.path_params[k] for k in ("kind", "ident", "name"))
        if kind not in ("reports", "sessions") or not _FOLDER_RE.match(ident):
            raise BadRequest("no such report: /api/files/reports|sessions/ID/report.md")
        if name not in REPORT_FILES:
            raise BadRequest("no such file: ask for report.md or report.pdf")
        root = (reports_home() if kind == "reports" else sessions_home()).resolve()
        path = (root / ident / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return JSONResponse({"error": "NotFound", "message": "no such file"}, 404)
        return FileResponse(
            path,
            media_type=_TYPES[name],
            filename=f"{ident}-{name}",
            headers={"Cache-Control": "no-store"},
        )


def _run_id(body: dict[str, Any]) -> str:
    """A report run's or research session's id from ``thread_id``."""
    thread = body.get("thread_id")
    if not isinstance(thread, str) or not (
        _REPORT_THREAD_RE.match(thread) or _SESSION_RE.match(thread)
    ):
        raise BadRequest(
            "`thread_id` must be a report run's (report-...) or a session's (deep-...)"
        )
    return thread


def create_app(
    assistant: ResearchAssistant,
    *,
    docs: str | None = None,
    allowed_hosts: Sequence[str] = (),
    close_assistant: bool = False,
) -> Starlette:
    """The web page's ASGI app around ``assistant``.

    Args:
        docs: the documents folder of deep research (default: ``$RESEARCH_DOCS``).
        allowed_hosts: host names (or IP addresses) the page is reached by besides
            the loopback names, always accepted; any other ``Host`` header gets 400 and
            any other ``Origin`` 403, which stops DNS rebinding. No wildcards:
            ``InvalidServeOptions`` names a value that is not a host name.
        close_assistant: close the assistant when the app shuts down.
    """
    hosts = allowed_host_names(allowed_hosts)
    r = _Routes(assistant, docs)
    post = ["POST"]
    routes = [
        Route("/", r.index),
        Route("/api/ask", _json_errors(r.ask), methods=post),
        Route("/api/clarify", _json_errors(r.clarify), methods=post),
        Route("/api/threads/{thread_id}", _json_errors(r.thread)),
        Route("/api/report", _json_errors(r.report), methods=post),
        Route("/api/report/answer", _json_errors(r.report_answer), methods=post),
        Route("/api/deep", _json_errors(r.deep), methods=post),
        Route("/api/cancel", _json_errors(r.cancel), methods=post),
        Route("/api/continue", _json_errors(r.continue_run), methods=post),
        Route("/api/files/{kind:str}/{ident:str}/{name:str}", _json_errors(r.file)),
        Route("/api/past", _json_errors(r.past)),
        Route("/api/source/{session:str}/{source:str}", _json_errors(r.source)),
        Route("/api/saved/{kind:str}/{ident:str}", _json_errors(r.saved)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Mount(
            "/inspect",
            inspector_app(
                assistant.store, assistant_graphs(assistant), allowed_hosts=allowed_hosts
            ),
        ),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if close_assistant:
            await assistant.aclose()

    middleware = [
        Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
        Middleware(GuardMiddleware, allowed_hosts=hosts),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
