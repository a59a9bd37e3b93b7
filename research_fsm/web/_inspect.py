"""The thread inspector: any thread of a store in the browser, edited and continued
through a compiled graph's public API (``inspector(...)``, ``research-fsm inspect``)."""

from __future__ import annotations

import functools
import hmac
import html
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ..engine import (
    Checkpoint,
    CheckpointNotFound,
    CheckpointStore,
    CompiledGraph,
    EngineError,
    InvalidResumeToken,
    InvalidResumeValue,
    InvalidThreadQuery,
    InvalidUpdate,
    NodeFailed,
    StaleResumeToken,
    ThreadNotFound,
    validate_thread_id,
)
from ..engine.store import OriginRecord, ThreadListing
from ..errors import ResearchError
from ._guard import SECURITY_HEADERS, GuardMiddleware, InvalidServeOptions, allowed_host_names
from ._inspect_data import diff_states, drawn_graph, json_state, row, snapshot_extras
from ._inspect_threads import ThreadsUnavailable, list_threads
from ._request import BadRequest, TooLarge, parse_json

__all__ = ["INSPECT_HEADERS", "GraphFor", "InspectorRefused", "inspector", "inspector_app"]

STATIC: Final = Path(__file__).parent / "static"
GraphFor = Callable[[str], Awaitable[CompiledGraph[Any] | None]]
"""The compiled graph that runs a (root) thread, or ``None``: that thread is read-only."""
INSPECT_HEADERS: Final = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": SECURITY_HEADERS["Content-Security-Policy"].replace(
        "style-src 'self'", "style-src 'self' 'unsafe-inline'"
    ),
}
"""As the assistant's page, but Mermaid's drawings carry their own styles (scripts stay
``'self'`` only, and no value of a state is ever markup)."""
MAX_EDIT_BYTES: Final = 256 * 1024
PAGE: Final = 50
FORK_SCAN: Final = 200
"""Threads (the most recently updated) searched for the forks of a thread."""
_CHILD_RE: Final = re.compile(r"^(?P<parent>.+)\.(?P<node>[A-Za-z0-9_-]+)\.[0-9a-f]{16}$")
_COOKIE: Final = "research_fsm_inspect"
_LOG = logging.getLogger(__name__)


class InspectorRefused(ResearchError, PermissionError):
    """An action the inspector will not take: the page is read-only for that thread
    (no graph), or a confirmation does not match."""


def _status(exc: Exception) -> int:
    if isinstance(exc, TooLarge):
        return 413
    if isinstance(exc, (ThreadNotFound, CheckpointNotFound)):
        return 404
    if isinstance(exc, InspectorRefused):
        return 403
    if isinstance(exc, InvalidThreadQuery):
        return 400
    if isinstance(exc, (NodeFailed, InvalidUpdate, InvalidResumeValue, InvalidResumeToken)):
        return 422
    if isinstance(exc, (StaleResumeToken, EngineError, ThreadsUnavailable)):
        return 409
    if isinstance(exc, (BadRequest, ValueError)):
        return 400
    return 500


Handler = Callable[[Request], Awaitable[Response]]


def _json_errors(handler: Handler) -> Handler:
    """Errors become ``{"error": class, "message": ...}``: the engine's own message for
    its refusals (``ThreadBusy``, ``UpdateRefused``...), never a traceback."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:
            code = _status(exc)
            message = str(exc) if code != 500 else "Unexpected error on the server (see its log)."
            if code == 500:
                _LOG.error("unexpected error in the inspector", exc_info=exc)
            body = {"error": type(exc).__name__, "message": message}
            return JSONResponse(body, code, headers={"Cache-Control": "no-store"})

    return wrapped


def _ok(data: Any) -> JSONResponse:
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


def _text(value: object, name: str, *, required: bool = True) -> str | None:
    if (value is None or value == "") and not required:
        return None
    if not isinstance(value, str) or not value:
        raise BadRequest(f"`{name}` must be a non-empty string")
    return value


def _thread(value: object, name: str = "thread") -> str:
    return validate_thread_id(_text(value, name))


def _limit(value: str | None) -> int:
    if value is None:
        return PAGE
    if not value.isdigit() or not 1 <= int(value) <= 500:
        raise BadRequest(f"`limit` must be a whole number from 1 to 500, got {value!r}")
    return int(value)


async def _body(request: Request) -> dict[str, Any]:
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != "application/json":
        raise BadRequest("send the body as JSON (Content-Type: application/json)")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_EDIT_BYTES:
            raise TooLarge(f"the request body is over the {MAX_EDIT_BYTES:,}-byte limit")
    return parse_json(body)


def _is_subgraph(graph: CompiledGraph[Any], node: object) -> bool:
    if not isinstance(node, str):
        return False
    try:
        graph.subgraph(node)
    except ValueError:
        return False
    return True


def _needs_snapshot(graph: CompiledGraph[Any], cp: Checkpoint) -> bool:
    """Whether ``cp`` names what only the graph's snapshot tells: a child thread (its next
    or suspended node is a subgraph), or parallel branches in flight."""
    waiting = None if cp.suspension is None else cp.suspension.node
    return bool(cp.branches) or _is_subgraph(graph, cp.next) or _is_subgraph(graph, waiting)


class _Inspector:
    """The routes around one store and the graphs that run its threads."""

    def __init__(self, store: CheckpointStore, graph_for: GraphFor, csrf: str) -> None:
        self.store = store
        self.graph_for = graph_for
        self.csrf = csrf
        page = (STATIC / "inspect.html").read_text(encoding="utf-8")  # once, off the loop
        self.page = page.replace("{{csrf}}", html.escape(csrf, quote=True))

    # -- graphs --------------------------------------------------------------

    async def _root(self, thread: str) -> CompiledGraph[Any] | None:
        root = thread
        while (found := _CHILD_RE.match(root)) is not None:
            root = found.group("parent")
        return await self.graph_for(root)

    async def _graph(self, thread: str, path: str | None) -> tuple[CompiledGraph[Any] | None, str]:
        """The graph of ``thread`` (``path``: its subgraph node path from the root graph,
        else read from a child thread's id) and that path."""
        root = await self._root(thread)
        if root is None:
            return None, path or ""
        if path:
            return root.subgraph(path), path
        nodes: list[str] = []
        current = thread
        while (found := _CHILD_RE.match(current)) is not None:
            nodes.insert(0, found.group("node"))
            current = found.group("parent")
        for end in range(len(nodes), 0, -1):  # the longest chain of subgraph nodes
            try:
                return root.subgraph("/".join(nodes[:end])), "/".join(nodes[:end])
            except ValueError:
                continue
        return root, ""

    async def _editable(self, body: Mapping[str, Any]) -> tuple[CompiledGraph[Any], str]:
        thread = _thread(body.get("thread"))
        graph, _ = await self._graph(thread, _text(body.get("path"), "path", required=False))
        if graph is None:
            raise InspectorRefused(
                f"thread {thread!r} is read-only here: start the inspector with the graph "
                "that runs it (research-fsm inspect --graph module:attribute)"
            )
        return graph, thread

    # -- pages ---------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return HTMLResponse(self.page, headers={"Cache-Control": "no-store"})

    async def threads(self, request: Request) -> Response:
        query = request.query_params
        rows, following = await list_threads(
            self.store,
            limit=_limit(query.get("limit")),
            cursor=query.get("cursor") or None,
            prefix=query.get("prefix") or "",
            status=query.get("status") or None,
            children=query.get("children") == "1",
        )
        return _ok({"threads": rows, "next": following})

    async def thread(self, request: Request) -> Response:
        """A page of a thread's timeline: one read of the store's history; the graph's
        snapshot only of the checkpoints that name a child thread, a fan-out or a
        suspension (what only the graph can tell)."""
        query = request.query_params
        thread = _thread(query.get("thread"))
        graph, path = await self._graph(thread, query.get("path") or None)
        limit, before = _limit(query.get("limit")), query.get("before") or None
        found = [cp async for cp in self.store.history(thread, limit=limit + 1, before=before)]
        head = found[0] if found and before is None else await self.store.load_latest(thread)
        if head is None:
            raise ThreadNotFound(thread, " in this store")
        more, found = len(found) > limit, found[:limit]
        rows = [row(cp) for cp in found]
        info: dict[str, Any] = {"suspensions": [], "branches": []}
        if graph is not None:
            for cp, described in zip(found, rows, strict=True):
                if _needs_snapshot(graph, cp):
                    snapshot = await graph.get_state(thread, checkpoint_id=cp.checkpoint_id)
                    assert snapshot is not None
                    extras = snapshot_extras(snapshot)
                    described["children"], described["branches"] = (
                        extras["children"],
                        extras["branches"],
                    )
            if _needs_snapshot(graph, head) or head.status == "suspended":
                latest = await graph.get_state(thread, checkpoint_id=head.checkpoint_id)
                assert latest is not None
                info = snapshot_extras(latest)
        elif head.suspension is not None:
            pending = head.suspension
            info["suspensions"] = [
                {
                    "node": pending.node,
                    "payload": pending.payload,
                    "answers": list(pending.answers),
                    "breakpoint": pending.breakpoint,
                    "token": None,
                }
            ]
        drawn = drawn_graph(graph.to_mermaid(), [head.next]) if graph is not None else None
        return _ok(
            {
                "thread": thread,
                "path": path,
                "editable": graph is not None,
                "head": {
                    **row(head),
                    "suspensions": info["suspensions"],
                    "branches": info["branches"],
                },
                "rows": rows,
                "next": rows[-1]["id"] if more and rows else None,
                "graph": drawn,
            }
        )

    async def forks(self, request: Request) -> Response:
        """The threads forked from ``thread`` (each with the checkpoint it was forked at),
        found among the ``FORK_SCAN`` most recently updated top-level threads: a fork's
        first checkpoint names its source, the source names none of its forks."""
        thread = _thread(request.query_params.get("thread"))
        if not isinstance(self.store, ThreadListing):
            return _ok({"forks": [], "scanned": 0, "complete": False})
        page = await self.store.threads(limit=FORK_SCAN, children=False)
        found = []
        for info in page.threads:
            if info.thread_id == thread or info.unreadable is not None:
                continue
            origin = await self._origin(info.thread_id)
            if origin is not None and origin.by == "fork" and origin.thread_id == thread:
                found.append(
                    {
                        "thread": info.thread_id,
                        "checkpoint": origin.checkpoint_id,
                        "status": info.status,
                        "updated": info.updated_at,
                    }
                )
        complete = page.next_cursor is None
        return _ok({"forks": found, "scanned": len(page.threads), "complete": complete})

    async def _origin(self, thread: str) -> OriginRecord | None:
        """What wrote a thread's first checkpoint (its oldest kept), if anything but a run."""
        first = None
        try:
            async for cp in self.store.history(thread):
                first = cp
        except (ValueError, OSError):  # damaged, or a newer version's: not a fork we can tell
            return None
        return None if first is None else first.origin

    async def checkpoint(self, request: Request) -> Response:
        query = request.query_params
        thread = _thread(query.get("thread"))
        checkpoint = _text(query.get("checkpoint"), "checkpoint")
        assert checkpoint is not None
        cp = await self.store.load(thread, checkpoint)
        if cp is None:
            raise CheckpointNotFound(thread, checkpoint)
        described = row(cp)
        state = json_state(cp.state)
        previous = None
        if described["parent"] is not None:
            previous = await self.store.load(thread, described["parent"])
        elif described["forked_from"] is not None:
            source = described["forked_from"]
            try:
                previous = await self.store.load(source["thread"], source["checkpoint"])
            except ValueError:
                previous = None
        before = json_state(previous.state) if previous is not None else None
        graph, _ = await self._graph(thread, query.get("path") or None)
        drawn = None
        if graph is not None:
            drawn = drawn_graph(graph.to_mermaid(), [cp.next, cp.last_node])
        return _ok(
            {
                "checkpoint": described,
                "state": state,
                "diff": diff_states(before, state),
                "against": None if previous is None else previous.checkpoint_id,
                "graph": drawn,
            }
        )

    # -- actions -------------------------------------------------------------

    def _check_csrf(self, request: Request) -> None:
        given = request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(given.encode(), self.csrf.encode()):
            raise InspectorRefused(
                "this change needs the page's CSRF token (reload the page and try again)"
            )

    async def update(self, request: Request) -> Response:
        self._check_csrf(request)
        body = await _body(request)
        graph, thread = await self._editable(body)
        values = body.get("values")
        if not isinstance(values, dict):
            raise BadRequest("`values` must be a JSON object of the fields to change")
        as_node = _text(body.get("as_node"), "as_node", required=False)
        snapshot = await graph.update_state(thread, values, as_node=as_node)
        return _ok({"checkpoint": snapshot.checkpoint_id, "status": snapshot.status})

    async def rerun(self, request: Request) -> Response:
        self._check_csrf(request)
        body = await _body(request)
        graph, thread = await self._editable(body)
        checkpoint = _text(body.get("checkpoint"), "checkpoint")
        result = await graph.run(None, thread_id=thread, checkpoint_id=checkpoint)
        return _ok({"checkpoint": result.checkpoint_id, "status": result.status})

    async def proceed(self, request: Request) -> Response:
        """A run that stopped midway (failed, crashed, or edited by hand): ``run(None)``."""
        self._check_csrf(request)
        body = await _body(request)
        graph, thread = await self._editable(body)
        result = await graph.run(None, thread_id=thread)
        return _ok({"checkpoint": result.checkpoint_id, "status": result.status})

    async def fork(self, request: Request) -> Response:
        self._check_csrf(request)
        body = await _body(request)
        graph, thread = await self._editable(body)
        checkpoint = _text(body.get("checkpoint"), "checkpoint", required=False)
        new_thread = _thread(body.get("new_thread"), "new_thread")
        snapshot = await graph.fork(thread, checkpoint, new_thread)
        return _ok({"thread": new_thread, "checkpoint": snapshot.checkpoint_id})

    async def resume(self, request: Request) -> Response:
        self._check_csrf(request)
        body = await _body(request)
        graph, _ = await self._editable(body)
        token = _text(body.get("token"), "token")
        assert token is not None
        result = await graph.resume(token, body.get("value"))
        return _ok({"checkpoint": result.checkpoint_id, "status": result.status})

    async def delete(self, request: Request) -> Response:
        self._check_csrf(request)
        body = await _body(request)
        graph, thread = await self._editable(body)
        if body.get("confirm") != thread:
            raise InspectorRefused(f"to delete thread {thread!r}, confirm with its id")
        await graph.delete_thread(thread)
        return _ok({"deleted": thread})


class _TokenGate:
    """Every request needs ``token``: its cookie, an ``Authorization: Bearer`` header,
    or ``?token=`` (the page's first visit, which sets the cookie and drops it from
    the address)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        bearer = request.headers.get("authorization", "")
        if self._matches(request.cookies.get(_COOKIE)) or self._matches(
            bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None
        ):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if self._matches((query.pop("token", None) or [None])[0]) and scope["method"] == "GET":
            rest = urlencode(query, doseq=True)
            target = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            response: Response = RedirectResponse(target, 303)
            response.set_cookie(
                _COOKIE, self.token.decode(), httponly=True, samesite="strict", path="/"
            )
        else:
            response = JSONResponse(
                {
                    "error": "TokenRequired",
                    "message": "this inspector needs the token printed when it started: "
                    "open the address it printed (…/?token=…)",
                },
                401,
            )
        await response(scope, receive, send)


def inspector_app(
    store: CheckpointStore,
    graph_for: GraphFor,
    *,
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
) -> Starlette:
    """The inspector over ``store``, each root thread run by ``graph_for(thread)``
    (``None``: read-only). ``token``: required on every request (serving beyond
    loopback); then ``allowed_hosts`` may stay empty (any ``Host``)."""
    r = _Inspector(store, graph_for, secrets.token_urlsafe(32))
    post = ["POST"]
    routes = [
        Route("/", r.index),
        Route("/api/threads", _json_errors(r.threads)),
        Route("/api/thread", _json_errors(r.thread)),
        Route("/api/checkpoint", _json_errors(r.checkpoint)),
        Route("/api/forks", _json_errors(r.forks)),
        Route("/api/update", _json_errors(r.update), methods=post),
        Route("/api/rerun", _json_errors(r.rerun), methods=post),
        Route("/api/continue", _json_errors(r.proceed), methods=post),
        Route("/api/fork", _json_errors(r.fork), methods=post),
        Route("/api/resume", _json_errors(r.resume), methods=post),
        Route("/api/delete", _json_errors(r.delete), methods=post),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware: list[Middleware] = []
    if token is not None and not allowed_hosts:
        guard = Middleware(GuardMiddleware, headers=INSPECT_HEADERS, any_host=True)
        middleware.append(guard)
    else:
        hosts = allowed_host_names(allowed_hosts)
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts))
        middleware.append(Middleware(GuardMiddleware, allowed_hosts=hosts, headers=INSPECT_HEADERS))
    if token is not None:
        middleware.append(Middleware(_TokenGate, token=token))
    return Starlette(routes=routes, middleware=middleware)


def inspector(
    target: CompiledGraph[Any] | CheckpointStore,
    *,
    graphs: Mapping[str, CompiledGraph[Any]] | None = None,
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
) -> Starlette:
    """The thread inspector as an ASGI app to mount (``Mount("/inspect", inspector(app))``;
    open ``/inspect/``): the threads of ``target``'s store, their timelines, states and
    diffs, and, through the graph, edits, re-runs, forks, resumes and deletes.

    Args:
        target: a compiled graph (its store's threads, run by it) or a store (read-only,
            unless ``graphs`` names the graphs).
        graphs: a thread id prefix to the graph that runs the threads starting with it
            (the longest prefix wins; ``""`` for all others); with a compiled ``target``,
            added to it.
        allowed_hosts: host names the page is reached by besides the loopback names.
        token: a secret every request must carry (``?token=`` once, then a cookie);
            with it, any host name is served unless ``allowed_hosts`` names them.

    Raises:
        InvalidServeOptions: a graph of ``graphs`` compiled with another store, or an
            allowed host that is not a host name.
    """
    by_prefix: dict[str, CompiledGraph[Any]] = {}
    if isinstance(target, CompiledGraph):
        store: CheckpointStore = target.store
        by_prefix[""] = target
    else:
        store = target
    for prefix, graph in (graphs or {}).items():
        bound = graph.on_store(store)
        if bound.store is not store:
            raise InvalidServeOptions(
                f"the graph for threads starting with {prefix!r} runs on another store: "
                "compile it without a store (the inspector runs it on this one)"
            )
        by_prefix[prefix] = bound
    ordered = sorted(by_prefix.items(), key=lambda item: -len(item[0]))

    async def graph_for(thread: str) -> CompiledGraph[Any] | None:
        return next((graph for prefix, graph in ordered if thread.startswith(prefix)), None)

    return inspector_app(store, graph_for, allowed_hosts=allowed_hosts, token=token)
