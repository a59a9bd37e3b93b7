"""The stdio front of ``research-fsm mcp``: the tools listed before the SDK has loaded,
its recorded answers the SDK's own, and a handshake it answered still the SDK's session."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from research_fsm.mcp._front import Front, load_listing, make_listing

from .helpers import ROOT, server_env

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
NO_SDK = """
import sys, threading
class NeverLoads:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("mcp.", "mcp_types")):
            threading.Event().wait()  # the SDK's import never finishes
        return None
sys.meta_path.insert(0, NeverLoads())
from research_fsm.cli import main
sys.exit(main(["mcp"]))
"""


def _request(request_id: int | None, method: str, params: dict[str, Any]) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message) + "\n"


def _server(code: list[str], home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *code],
        env=server_env(home),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _responses(process: subprocess.Popen[str], count: int) -> list[dict[str, Any]]:
    """The next ``count`` responses on the server's stdout (notifications skipped),
    within two minutes."""
    stdout = process.stdout
    assert stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    found: list[dict[str, Any]] = []
    while len(found) < count:
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            raise AssertionError(f"no response in 2 minutes; got {found}") from None
        assert line, "the server ended early"
        message = json.loads(line)
        if "id" in message and "method" not in message:
            found.append(message)
        if len(found) < count:
            threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    return found


async def test_the_recorded_answers_are_the_sdks() -> None:
    """``_listing.json`` holds what the installed SDK answers now to every fast method at
    every protocol version (``python -m research_fsm.mcp._front`` rewrites it)."""
    assert load_listing() == (await make_listing())["answers"]


def test_the_tools_are_listed_while_the_sdk_has_not_loaded(tmp_path: Path) -> None:
    """A server whose SDK never finishes loading still answers ``server/discover`` and
    ``tools/list`` with the six tools, and ends when the client closes stdin."""
    process = _server(["-c", NO_SDK], tmp_path)
    assert process.stdin is not None
    try:
        process.stdin.write(_request(1, "server/discover", {"_meta": MODERN}))
        process.stdin.write(_request(2, "tools/list", {"_meta": MODERN}))
        process.stdin.flush()
        discover, listed = _responses(process, 2)
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert (1, 2) == (discover["id"], listed["id"])
    server = discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert "research-fsm" == server["name"]
    names = [tool["name"] for tool in listed["result"]["tools"]]
    expected = ["ask", "report", "deep_research", "continue_run", "list_reports", "list_sessions"]
    assert sorted(expected) == sorted(names)


def test_a_handshake_the_front_answered_is_the_sdks_session(tmp_path: Path) -> None:
    """Over the 2025-11-25 handshake: ``initialize`` and ``tools/list`` are answered once
    each (the SDK's duplicates dropped), and a tool call after them is served by the SDK
    in the session the replayed ``initialize`` opened."""
    process = _server(["-m", "research_fsm", "mcp"], tmp_path)
    assert process.stdin is not None
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    try:
        process.stdin.write(_request(1, "initialize", hello))
        process.stdin.write(_request(None, "notifications/initialized", {}))
        process.stdin.write(_request(2, "tools/list", {}))
        process.stdin.write(_request(3, "tools/call", {"name": "list_reports", "arguments": {}}))
        process.stdin.flush()
        responses = _responses(process, 3)
        process.stdin.close()  # the client leaves: the server ends, writing nothing more
        assert process.stdout is not None
        rest = process.stdout.read()
        process.wait(timeout=60)
    finally:
        process.kill()
    assert [1, 2, 3] == [r.get("id") for r in responses], responses
    assert "2025-11-25" == responses[0]["result"]["protocolVersion"]
    assert 6 == len(responses[1]["result"]["tools"])
    assert responses[2]["result"]["isError"] is False, responses[2]
    assert [] == [json.loads(line).get("id") for line in rest.splitlines() if line.strip()]


def test_the_front_answers_what_it_knows_and_drops_the_sdks_repeats() -> None:
    """Known method and version: answered once, the SDK's response to it dropped once;
    a request with a cursor, an unknown version or method is left to the SDK; the
    SDK's own requests and notifications always pass."""
    sent: list[str] = []
    answers = {"tools/list 2026-07-28": {"tools": []}, "initialize *": {"protocolVersion": "v"}}
    front = Front(answers, sent.append)
    other = {**MODERN, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}
    front.read(_request(1, "tools/list", {"_meta": MODERN}))
    front.read(_request(2, "tools/list", {"_meta": MODERN, "cursor": "x"}))
    front.read(_request(3, "tools/list", {"_meta": other}))
    front.read(_request(4, "resources/list", {"_meta": MODERN}))
    front.read("not json")
    assert [{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}] == [json.loads(s) for s in sent]
    assert not front.passes(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}))
    assert front.passes(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))  # once only
    assert front.passes(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}}))
    assert front.passes(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
    front.read(_request(5, "initialize", {"protocolVersion": "2000-01-01"}))
    assert "v" == front.handshake
    assert {"protocolVersion": "v"} == json.loads(sent[-1])["result"]
