"""A scripted, threaded loopback HTTP server: the base of the fake API servers.

``LoopbackServer`` listens on ``127.0.0.1`` on a free port, records every request
(before answering it) and answers the scripted paths from a FIFO of ``Reply``
objects (``enqueue``), then from an ``auto`` function, then from ``default``.
Handler threads are daemons and ``stop()`` wakes sleeping replies and closes open
connections, so it returns promptly whatever the handlers are doing.
"""

from __future__ import annotations

import collections
import contextlib
import http
import json
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

__all__ = [
    "Delay",
    "Disconnect",
    "Exchange",
    "JsonReply",
    "LoopbackServer",
    "Raw",
    "RecordedRequest",
    "Reply",
    "chunks",
    "delay",
    "disconnect",
    "raw",
    "reason_phrase",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    """The URL path, without the query string (e.g. ``"/v1/messages"``)."""
    headers: dict[str, str]
    """Request headers, names lower-cased."""
    body: dict[str, Any]
    """The JSON body (``{}`` when there is none, or it is not a JSON object)."""
    method: str = "POST"
    """The HTTP method."""
    query: str = ""
    """The raw query string (e.g. ``"beta=true"``)."""
    raw: bytes = field(default=b"", repr=False)
    """The body bytes as received."""


def reason_phrase(status: int) -> str:
    """The reason phrase of an HTTP status (``529`` is Anthropic's "Overloaded")."""
    if status == 529:
        return "Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class Exchange:
    """One request/response exchange, handed to a ``Reply`` to write the response."""

    def __init__(self, handler: _Handler, request: RecordedRequest) -> None:
        self._handler = handler
        self.request = request
        """The request being answered."""
        self._streaming = False

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down (replies should give up)."""
        return self._handler.owner.stopping.is_set()

    def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``; ``False`` when the server stopped meanwhile."""
        return not self._handler.owner.stopping.wait(max(0.0, seconds))

    def _head(self, status: int, headers: Mapping[str, str]) -> None:
        handler = self._handler
        handler.send_response(status, reason_phrase(status))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()

    def send(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send a complete response with a ``Content-Length``."""
        all_headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
        self._head(status, all_headers | dict(headers or {}))
        self._handler.wfile.write(body)

    def send_json(
        self, status: int, payload: object, *, headers: Mapping[str, str] | None = None
    ) -> None:
        """Send ``payload`` as a JSON response."""
        self.send(status, json.dumps(payload).encode(), headers=headers)

    def begin_stream(
        self,
        status: int = 200,
        *,
        content_type: str = "text/event-stream; charset=utf-8",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Start a chunked response; follow with ``write`` calls and ``end_stream``."""
        base = {
            "Content-Type": content_type,
            "Transfer-Encoding": "chunked",
            "Cache-Control": "no-cache",
        }
        self._head(status, base | dict(headers or {}))
        self._streaming = True

    def write(self, data: bytes) -> None:
        """Send one chunk of a streamed response."""
        if data:
            self._handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        """Finish a streamed response."""
        self._handler.wfile.write(b"0\r\n\r\n")
        self._streaming = False

    def abort(self) -> None:
        """Close the connection without (finishing) a response."""
        self._handler.close_connection = True
        with contextlib.suppress(OSError):
            self._handler.connection.shutdown(socket.SHUT_RDWR)


class Reply:
    """How the server answers one request; subclasses implement ``respond``."""

    def respond(self, exchange: Exchange) -> None:
        """Write the response for ``exchange.request``."""
        raise NotImplementedError


@dataclass(frozen=True)
class Raw(Reply):
    """Exactly these bytes, with this status and content type (for malformed answers)."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)

    def respond(self, exchange: Exchange) -> None:
        """Send the bytes as they are."""
        exchange.send(self.status, self.body, content_type=self.content_type, headers=self.headers)


@dataclass(frozen=True)
class JsonReply(Reply):
    """A JSON document with a status and headers."""

    status: int
    payload: object
    headers: Mapping[str, str] = field(default_factory=dict)

    def respond(self, exchange: Exchange) -> None:
        """Send the JSON document."""
        exchange.send_json(self.status, self.payload, headers=self.headers)


@dataclass(frozen=True)
class Delay(Reply):
    """Sleep, then answer with ``reply`` (gives up silently if the server stops)."""

    seconds: float
    reply: Reply

    def respond(self, exchange: Exchange) -> None:
        """Wait, then delegate; abort the connection when the server is stopping."""
        if exchange.sleep(self.seconds):
            self.reply.respond(exchange)
        else:
            exchange.abort()


@dataclass(frozen=True)
class Disconnect(Reply):
    """Close the connection without answering (a connection error for the client)."""

    def respond(self, exchange: Exchange) -> None:
        """Drop the connection."""
        exchange.abort()


def raw(
    status: int,
    body: bytes,
    content_type: str = "application/json",
    *,
    headers: Mapping[str, str] | None = None,
) -> Raw:
    """Exactly these bytes (malformed JSON, an HTML error page from a proxy...)."""
    return Raw(status, body, content_type, dict(headers or {}))


def delay(seconds: float, reply: Reply) -> Delay:
    """Sleep ``seconds``, then answer with ``reply`` (to exceed a client timeout)."""
    return Delay(seconds, reply)


def disconnect() -> Disconnect:
    """Close the connection without answering (a connection error)."""
    return Disconnect()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    @property
    def owner(self) -> LoopbackServer:
        return self.server.owner

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {}
        parts = urlsplit(self.path)
        request = RecordedRequest(
            path=parts.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=parsed if isinstance(parsed, dict) else {},
            method=self.command,
            query=parts.query,
            raw=raw,
        )
        exchange = Exchange(self, request)
        reply = self.owner._record_and_choose(request)
        try:
            reply.respond(exchange)
        except (BrokenPipeError, ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    do_POST = _serve
    do_GET = _serve
    do_PUT = _serve
    do_DELETE = _serve
    do_PATCH = _serve


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # never join handler threads on close (they may be sleeping)

    def __init__(self, owner: LoopbackServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connection errors are normal here (clients time out and hang up)."""


class LoopbackServer:
    """A scripted HTTP server on ``127.0.0.1``; subclasses say which paths are scripted."""

    scripted_paths: ClassVar[frozenset[str]] = frozenset()
    """Paths answered from the script (``enqueue`` / ``auto`` / ``default``)."""

    def __init__(self, default: Reply) -> None:
        """Create a stopped server whose empty script answers with ``default``."""
        self.default: Reply = default
        """The reply used when the queue is empty and no ``auto`` function is set."""
        self.stopping = threading.Event()
        """Set by ``stop()``; sleeping replies wake up and give up."""
        self._lock = threading.Lock()
        self._queue: collections.deque[Reply] = collections.deque()
        self._auto: Callable[[dict[str, Any]], Reply] | None = None
        self._requests: list[RecordedRequest] = []
        self._counts: collections.Counter[str] = collections.Counter()
        self._connections: set[socket.socket] = set()
        self.errors: list[BaseException] = []
        """Exceptions raised by ``auto`` functions (answered with HTTP 500)."""
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self.stopping.clear()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake sleeping replies, close connections, free the port."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port listened on (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, to pass as the client's base URL."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ---------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the script; each scripted request pops one."""
        with self._lock:
            self._queue.extend(replies)

    def auto(self, fn: Callable[[dict[str, Any]], Reply] | None) -> None:
        """Answer from ``fn(request body)`` when the queue is empty (``None`` to unset)."""
        with self._lock:
            self._auto = fn

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def counts(self) -> collections.Counter[str]:
        """Requests received per path (a copy)."""
        with self._lock:
            return collections.Counter(self._counts)

    def count(self, path: str | None = None) -> int:
        """Requests received on ``path``, or on all paths."""
        with self._lock:
            return len(self._requests) if path is None else self._counts[path]

    def clear(self) -> None:
        """Forget the recorded requests and the queued replies."""
        with self._lock:
            self._requests.clear()
            self._counts.clear()
            self._queue.clear()

    # -- for subclasses ----------------------------------------------------

    def route(self, request: RecordedRequest) -> Reply:
        """The reply to a request on a path that is not scripted (default: 404)."""
        return JsonReply(404, {"error": "not found"})

    def failure(self, message: str) -> Reply:
        """The reply when an ``auto`` function fails (default: HTTP 500)."""
        return JsonReply(500, {"error": message})

    # -- internals ---------------------------------------------------------

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _record_and_choose(self, request: RecordedRequest) -> Reply:
        is_scripted = request.path in self.scripted_paths
        with self._lock:
            self._requests.append(request)
            self._counts[request.path] += 1
            if is_scripted and self._queue:
                return self._queue.popleft()
            scripted, fallback = self._auto, self.default
        if not is_scripted:
            return self.route(request)
        if scripted is None:
            return fallback
        try:
            return scripted(request.body)
        except Exception as exc:  # a broken test function must show, not hang
            with self._lock:
                self.errors.append(exc)
            return self.failure(f"fake server: auto function failed: {exc!r}")


def chunks(text: str, size: int) -> Iterable[str]:
    """``text`` in pieces of ``size`` characters."""
    return (text[i : i + size] for i in range(0, len(text), size))
