"""``serve_stdio``: the stdio server, with its tool list served before the MCP SDK loads.

Importing the SDK takes about a second of CPU (its package imports its whole client, server
and three protocol versions' models), longer than a desktop client should wait for the
tools. So the process starts with this front, which imports nothing of the SDK: it reads
the wire, answers ``server/discover``, ``initialize`` and ``tools/list`` from
``_listing.json`` (the SDK's own answers, recorded by ``make_listing`` for the installed
SDK version; a test keeps them equal), while a thread imports the SDK. Every message the
client sent, answered or not, then goes to the SDK's server in order (so an ``initialize``
sets up its session as usual), and the SDK's responses to the requests the front already
answered are dropped. With no listing for the installed SDK, the front answers nothing and
only passes messages on.

While it serves, fd 0 reads the null device and fd 1 writes to stderr (as the SDK's own
stdio transport arranges), so a stray print or child process cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._options import ServerOptions

__all__ = ["FAST_METHODS", "Front", "load_listing", "make_listing", "serve_stdio"]

LISTING = Path(__file__).with_name("_listing.json")
"""The SDK's answers to the fast methods, by method and protocol version."""
FAST_METHODS = ("server/discover", "initialize", "tools/list")
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_UNKNOWN_VERSION = "1999-01-01"
"""A version no SDK supports: the listing's ``initialize *`` answer (the SDK offers its own)."""


def _installed_sdk() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


def load_listing(path: Path = LISTING) -> dict[str, Any] | None:
    """The recorded answers when they were recorded with the installed SDK, else ``None``."""
    try:
        listing = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(listing, dict) or listing.get("mcp") != _installed_sdk():
        return None
    answers = listing.get("answers")
    return answers if isinstance(answers, dict) else None


class Lines:
    """The client's lines as an async iterator of text (what the SDK's stdio transport
    reads): those given first, then each ``put``, until ``close``."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()

    def put(self, line: str | None) -> None:
        self._queue.put_nowait(line)

    def close(self) -> None:
        self._queue.put_nowait(None)

    async def get(self) -> str | None:
        return await self._queue.get()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while (line := await self._queue.get()) is not None:
            yield line


class Front:
    """Answers the fast methods from ``answers`` and remembers which requests it answered,
    so the SDK's own responses to them are dropped."""

    def __init__(self, answers: dict[str, Any] | None, send: Callable[[str], None]) -> None:
        self.answers = answers or {}
        self.send = send
        self.answered: set[str] = set()
        self.handshake: str | None = None
        """The version the front's ``initialize`` answer agreed (the handshake era)."""

    def _answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method, params = message.get("method"), message.get("params") or {}
        if method not in FAST_METHODS or not isinstance(params, dict) or "cursor" in params:
            return None
        meta = params.get("_meta")
        modern = meta.get(_VERSION_KEY) if isinstance(meta, dict) else None
        if method == "initialize":
            asked = params.get("protocolVersion")
            result = self.answers.get(f"initialize {asked}") or self.answers.get("initialize *")
            if isinstance(result, dict):
                self.handshake = result.get("protocolVersion")
            return result if isinstance(result, dict) else None
        version = modern if modern is not None else self.handshake
        result = self.answers.get(f"{method} {version}")
        return result if isinstance(result, dict) else None

    def read(self, line: str) -> None:
        """A client line: answered now when it is a fast request the listing knows."""
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "id" not in message:
            return
        result = self._answer(message)
        if result is not None:
            key = json.dumps(message["id"])
            if key not in self.answered:
                self.answered.add(key)
                response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self.send(json.dumps(response, ensure_ascii=False, separators=(",", ":")))

    def passes(self, line: str) -> bool:
        """Whether a line of the SDK goes to the client: not a response to a request
        the front answered."""
        if not self.answered:
            return True
        try:
            message = json.loads(line)
        except ValueError:
            return True
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return True
        key = json.dumps(message["id"])
        if key in self.answered:
            self.answered.discard(key)
            return False
        return True


class _Out:
    """Where the SDK's stdio transport writes: the wire, less the dropped responses."""

    def __init__(self, front: Front, send: Callable[[str], None]) -> None:
        self.front, self.send = front, send

    async def write(self, text: str) -> None:
        for line in text.splitlines():
            if line and self.front.passes(line):
                await asyncio.to_thread(self.send, line)

    async def flush(self) -> None:
        return None


@contextlib.contextmanager
def _wire() -> Iterator[tuple[int, int]]:
    """The client's stdin and stdout as private descriptors; fd 0 the null device and
    fd 1 stderr meanwhile; both restored at the end."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.close(fd)


def _reader(fd: int, loop: asyncio.AbstractEventLoop, into: Callable[[str | None], None]) -> None:
    """The client's lines, from a thread, onto the loop; ``None`` at the end."""
    with open(fd, "rb", closefd=False) as stream:
        for raw in stream:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line:
                loop.call_soon_threadsafe(into, line)
    loop.call_soon_threadsafe(into, None)


def _writer(fd: int) -> Callable[[str], None]:
    lock = threading.Lock()

    def send(line: str) -> None:
        data = (line + "\n").encode("utf-8")
        with lock:
            while data:
                data = data[os.write(fd, data) :]

    return send


def _load_server(options: ServerOptions | None) -> Any:
    """The SDK and the server (in a thread: about a second of imports)."""
    server = importlib.import_module(f"{__package__}._server")
    return server.create_server(options)


async def serve_stdio(options: ServerOptions | None = None) -> None:
    """Serve one client over this process's stdin and stdout until it closes them; the
    tools are listed before the SDK has loaded (see the module's docstring)."""
    loop = asyncio.get_running_loop()
    with _wire() as (wire_in, wire_out):
        send = _writer(wire_out)
        front = Front(load_listing(), send)
        incoming: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(
            target=_reader, args=(wire_in, loop, incoming.put_nowait), daemon=True
        ).start()
        loading = asyncio.ensure_future(asyncio.to_thread(_load_server, options))
        lines = Lines()
        ended = False
        while not loading.done():
            getting = asyncio.ensure_future(incoming.get())
            await asyncio.wait({getting, loading}, return_when=asyncio.FIRST_COMPLETED)
            if not getting.done():
                getting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getting
                break
            line = getting.result()
            lines.put(line)
            if line is None:
                ended = True
                break
            await asyncio.to_thread(front.read, line)
        server = await loading

        async def pump() -> None:
            if ended:
                return
            while True:
                line = await incoming.get()
                lines.put(line)
                if line is None:
                    return

        pumping = asyncio.ensure_future(pump())
        try:
            await server.serve_over(lines, _Out(front, send))
        finally:
            pumping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumping


async def make_listing(options: ServerOptions | None = None) -> dict[str, Any]:
    """The SDK's answers to the fast methods at every protocol version it supports (and
    to an ``initialize`` naming none of them): what ``_listing.json`` holds."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    answers: dict[str, Any] = {}
    client = {"name": "research-fsm", "version": "0"}
    for version in MODERN_PROTOCOL_VERSIONS:
        meta = {
            _VERSION_KEY: version,
            "io.modelcontextprotocol/clientInfo": client,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        got = await _ask_sdk(
            options, [(1, "server/discover", {"_meta": meta}), (2, "tools/list", {"_meta": meta})]
        )
        answers[f"server/discover {version}"], answers[f"tools/list {version}"] = got
    for version in (*HANDSHAKE_PROTOCOL_VERSIONS, _UNKNOWN_VERSION):
        hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
        initialized, listed = await _ask_sdk(
            options,
            [
                (1, "initialize", hello),
                (None, "notifications/initialized", {}),
                (2, "tools/list", {}),
            ],
        )
        key = "*" if version == _UNKNOWN_VERSION else version
        answers[f"initialize {key}"] = initialized
        answers[f"tools/list {initialized['protocolVersion']}"] = listed
    return {"mcp": _installed_sdk(), "answers": answers}


async def _ask_sdk(
    options: ServerOptions | None, requests: list[tuple[int | None, str, dict[str, Any]]]
) -> list[Any]:
    """The results of ``requests`` (``None`` ids: notifications) sent to a new server."""
    server = _load_server(options)
    lines = Lines()
    results: dict[Any, Any] = {}
    wanted = {request_id for request_id, _, _ in requests if request_id is not None}
    done = asyncio.Event()

    def received(line: str) -> None:
        message = json.loads(line)
        if message.get("id") in wanted and "method" not in message:
            results[message["id"]] = message.get("result", message.get("error"))
            if wanted <= set(results):
                done.set()

    for request_id, method, params in requests:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request_id is not None:
            message["id"] = request_id
        lines.put(json.dumps(message))
    serving = asyncio.ensure_future(server.serve_over(lines, _Out(Front(None, received), received)))
    try:
        await asyncio.wait_for(done.wait(), 60)
    finally:
        lines.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(serving, 10)
    return [results[request_id] for request_id, _, _ in requests if request_id is not None]


if __name__ == "__main__":  # python -m research_fsm.mcp._front: rewrite _listing.json
    listing = asyncio.run(make_listing())
    LISTING.write_text(json.dumps(listing, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{LISTING}: {len(listing['answers'])} answers for mcp {listing['mcp']}")
