"""The real server, ``python -m research_fsm mcp``, in a subprocess, through the SDK's
own client: over stdio and over streamable HTTP on a random loopback port. Every tool
round-trips on both; a clarification survives a restart; a cancelled run is resumable."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputRequiredResult
from servers import FakeTavily
from servers import tavily as tv

from .helpers import ROOT, Answerer, Recorder, free_port, server_env, stdio_params

pytestmark = pytest.mark.slow

NOTES = ROOT / "examples" / "notes"
SPRING = (
    "Spring Boot 3.0 requires Java 17 as a minimum. Spring Boot 3 moves from Java EE to "
    "Jakarta EE 9, so javax.* imports become jakarta.*. Migrate to Spring Boot 2.7 first."
)


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def _round_trip(client: Client) -> None:
    """Every tool, and a resource of each kind, through ``client``."""
    listed = {tool.name for tool in (await client.list_tools()).tools}
    assert {
        "ask",
        "report",
        "deep_research",
        "continue_run",
        "list_reports",
        "list_sessions",
    } <= listed
    answer = _ok(await client.call_tool("ask", {"question": "What does Apple do?"}))
    assert answer["status"] == "answered" and answer["company"] == "Apple Inc."
    report = _ok(await client.call_tool("report", {"company": "Siemens", "pdf": True}))
    assert report["status"] == "completed"
    again = _ok(await client.call_tool("continue_run", {"run_id": report["run_id"]}))
    assert again["kind"] == "report" and again["report"]["resources"] == report["resources"]
    pdf = (await client.read_resource(report["resources"][1])).contents[0]
    assert base64.b64decode(getattr(pdf, "blob", "")).startswith(b"%PDF")
    deep = _ok(await client.call_tool("deep_research", {"topic": "Spring Boot 3 migration"}))
    assert deep["status"] == "completed" and deep["mode"] == "docs"
    text = (await client.read_resource(deep["resources"][0])).contents[0]
    assert "[S1]" in getattr(text, "text", "")
    reports = _ok(await client.call_tool("list_reports", {}))["reports"]
    sessions = _ok(await client.call_tool("list_sessions", {}))["sessions"]
    assert [r["id"] for r in reports] == [report["resources"][0].split("/")[3]]
    assert [s["id"] for s in sessions] == [deep["session_id"]]
    refused = await client.call_tool("deep_research", {"topic": "x", "documents_folder": "/etc"})
    assert refused.is_error and "outside the allowed folders" in refused.content[0].text


# -- stdio -----------------------------------------------------------------------------


async def test_stdio_round_trip(tmp_path: Path) -> None:
    """Over stdio: every tool and resource kind round-trips; a refused folder is an error."""
    async with Client(stdio_params(tmp_path / "home", "--docs-root", str(NOTES))) as client:
        await _round_trip(client)


async def test_stdio_clarification_survives_a_restart(tmp_path: Path) -> None:
    """The question back is returned with the conversation id; a new server process (same
    store) takes the answer and finishes the question."""
    home = tmp_path / "home"
    async with Client(stdio_params(home)) as first:
        asked = _ok(await first.call_tool("ask", {"question": "Tell me about Deutsche"}))
    assert asked["status"] == "needs_clarification" and len(asked["choices"]) == 7
    async with Client(stdio_params(home)) as second:
        done = _ok(
            await second.call_tool(
                "ask", {"question": "Deutsche Post", "conversation": asked["conversation"]}
            )
        )
    assert done["status"] == "answered" and done["company"] == "Deutsche Post"


async def test_stdio_elicitation_and_progress(tmp_path: Path) -> None:
    """Over stdio, a client with a form answers the question back in the same call, and
    hears each agent start as progress."""
    answerer, progress = Answerer("Deutsche Bank"), Recorder()
    async with Client(stdio_params(tmp_path / "home"), elicitation_callback=answerer) as client:
        done = _ok(
            await client.call_tool(
                "ask", {"question": "Tell me about Deutsche"}, progress_callback=progress
            )
        )
    assert done["company"] == "Deutsche Bank" and len(answerer.asked) == 1
    assert "Researching Deutsche Bank..." in progress.messages


async def _asked_back(home: Path) -> InputRequiredResult:
    """The question back of "Tell me about Deutsche" as a 2026-07-28 client receives it
    (the form and the sealed ``request_state``), kept instead of answered at once."""
    async with Client(stdio_params(home), elicitation_callback=Answerer(None)) as client:
        first = await client.session.call_tool(
            "ask", {"question": "Tell me about Deutsche"}, allow_input_required=True
        )
    assert isinstance(first, InputRequiredResult) and first.request_state
    return first


async def _answer_after(home: Path, state: str, answer: str) -> Any:
    """The form's answer sent, with ``state``, to a new server process on ``home``: the
    tool's result, or the MCP error the server answered with."""
    accepted = ElicitResult(action="accept", content={"answer": answer})
    async with Client(stdio_params(home), elicitation_callback=Answerer(None)) as client:
        try:
            return await client.call_tool(
                "ask",
                {"question": "Tell me about Deutsche"},
                input_responses={"clarify": accepted},
                request_state=state,
            )
        except MCPError as exc:
            return exc


async def test_stdio_form_answered_after_a_restart(tmp_path: Path) -> None:
    """A question back sent as an InputRequiredResult is answered by a new server process on
    the same store: its sealing key comes from the store's secret, not from the process."""
    home = tmp_path / "home"
    first = await _asked_back(home)
    done = _ok(await _answer_after(home, first.request_state or "", "Deutsche Post"))
    assert done["status"] == "answered" and done["company"] == "Deutsche Post"


async def test_stdio_form_state_from_another_store_is_refused(tmp_path: Path) -> None:
    """The sealed state of one store's server is refused by a server on another store (its
    secret differs), as an MCP error, and the edited state is refused too."""
    first = await _asked_back(tmp_path / "one")
    state = first.request_state or ""
    other = await _answer_after(tmp_path / "two", state, "Deutsche Post")
    edited = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    forged = await _answer_after(tmp_path / "one", edited, "Deutsche Post")
    for refused in (other, forged):
        assert isinstance(refused, MCPError), refused
        assert str(refused) == "Invalid or expired requestState"


def test_bad_docs_root_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    """A --docs-root that does not exist stops the server before it starts, in one line."""
    done = subprocess.run(
        [sys.executable, "-m", "research_fsm", "mcp", "--docs-root", str(tmp_path / "nope")],
        env=server_env(tmp_path / "home"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"research-fsm: --docs-root {str(tmp_path / 'nope')!r} does not exist; give an existing folder"
    ]


# -- streamable HTTP -------------------------------------------------------------------


class _HttpServer:
    def __init__(self, home: Path, *args: str, **env: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "research_fsm",
                "mcp",
                "--transport",
                "http",
                "--port",
                str(self.port),
                *args,
            ],
            env=server_env(home, **env),
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server ended: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                httpx.get(f"{self.url}", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start in 60 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[_HttpServer]:
    """The server over streamable HTTP on a random loopback port, reading examples/notes."""
    server = _HttpServer(tmp_path / "home", "--docs-root", str(NOTES))
    try:
        yield server
    finally:
        server.stop()


async def test_http_round_trip(http_server: _HttpServer) -> None:
    """Over streamable HTTP: every tool and resource kind round-trips; sessions side by
    side and one after another are served by the one server."""
    async with Client(http_server.url) as client:
        async with Client(http_server.url) as other:
            await _round_trip(client)
        after = _ok(await client.call_tool("ask", {"question": "What does Tesla do?"}))
    async with Client(http_server.url) as later:
        again = _ok(await later.call_tool("ask", {"question": "What does Apple do?"}))
    assert other is not client
    assert after["company"] == "Tesla, Inc." and again["company"] == "Apple Inc."


async def test_http_elicitation_and_progress(http_server: _HttpServer) -> None:
    """Over HTTP a report on an ambiguous name asks which one by form; progress arrives."""
    answerer, progress = Answerer("Deutsche Telekom"), Recorder()
    async with Client(http_server.url, elicitation_callback=answerer) as client:
        done = _ok(
            await client.call_tool("report", {"company": "Deutsche"}, progress_callback=progress)
        )
    assert done["status"] == "completed" and done["company"] == "Deutsche Telekom"
    assert answerer.asked[0][0].startswith("Which company do you mean")
    assert progress.messages[0] == f"{done['run_id']}: started"
    assert "save done" in progress.messages


def test_http_refuses_other_hosts_and_other_sites(http_server: _HttpServer) -> None:
    """A Host that is not loopback (DNS rebinding) and a POST from another site's page are
    refused before the MCP layer, as the web page does."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    rebound = httpx.post(http_server.url, json=body, headers={**headers, "host": "evil.example"})
    cross = httpx.post(
        http_server.url, json=body, headers={**headers, "origin": "http://evil.example"}
    )
    assert rebound.status_code == 421
    assert cross.status_code == 403


def test_http_beyond_loopback_needs_allowed_host(tmp_path: Path) -> None:
    """--host 0.0.0.0 without --allowed-host is refused in one line, exit status 2."""
    done = subprocess.run(
        [sys.executable, "-m", "research_fsm", "mcp", "--transport", "http", "--host", "0.0.0.0"],
        env=server_env(tmp_path / "home"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "needs --allowed-host" in done.stderr and "Traceback" not in done.stderr


async def test_cancelled_research_leaves_a_resumable_session(
    tmp_path: Path, tavily_server: FakeTavily
) -> None:
    """Cancelling deep_research while it searches the web stops the run (the session is
    free again at once) and leaves it listed as running; continue_run finishes it."""
    slow = {"on": True}
    page = tv.result(
        "Spring Boot 3 migration",
        "https://example.org/boot3",
        SPRING[:100],
        0.9,
        raw_content=SPRING,
    )

    def reply(body: dict[str, Any]) -> Any:
        return tv.delay(30, tv.results([page])) if slow["on"] else tv.results([page])

    tavily_server.auto(reply)
    server = _HttpServer(
        tmp_path / "home",
        TAVILY_API_KEY="tvly-test-secret-0123456789",
        TAVILY_BASE_URL=tavily_server.url,
    )
    progress: list[str] = []
    try:
        async with Client(server.url) as client:
            with anyio.CancelScope() as scope:

                async def heard(done: float, total: float | None, message: str | None) -> None:
                    progress.append(message or "")
                    if message == "search started":
                        scope.cancel()

                with anyio.fail_after(60):
                    await client.call_tool(
                        "deep_research",
                        {"topic": "Spring Boot 3 migration"},
                        progress_callback=heard,
                    )
            assert scope.cancelled_caught, progress
            session = progress[0].split(":")[0]
            listed = _ok(await client.call_tool("list_sessions", {}))["sessions"]
            assert [(s["id"], s["status"]) for s in listed] == [(session, "running")]
            slow["on"] = False
            with anyio.fail_after(60):
                done = _ok(await client.call_tool("continue_run", {"run_id": session}))
            listed = _ok(await client.call_tool("list_sessions", {}))["sessions"]
    finally:
        server.stop()
    research = done["research"]
    assert research["session_id"] == session and research["status"] == "completed"
    assert (
        research["mode"] == "web" and research["sources"][0]["url"] == "https://example.org/boot3"
    )
    assert [(s["id"], s["status"]) for s in listed] == [(session, "completed")]
