"""``research-fsm doctor`` against the local stand-in: one clear line and an exit status
for each outcome (answers through tools, answers in text only, no tool support, unknown
model, nothing listening, too slow), never a traceback."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from servers._http import delay
from servers.local_llm import LocalLLM

from research_fsm.cli import main
from research_fsm.diagnostics import describe_backends

MODEL = "qwen3:4b"


def ok(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """A model that says yes."""
    return {"ok": True} if schema is not None else "yes"


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """``main`` points structlog at this test's captured stderr: put it back after."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "TAVILY_API_KEY",
        "RESEARCH_DOCS",
        "RESEARCH_DATA_SOURCE",
        "RESEARCH_FSM_LLM_TIMEOUT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RESEARCH_FSM_MODEL", MODEL)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalLLM]:
    """The stand-in, named by RESEARCH_FSM_LLM_URL."""
    with LocalLLM(ok, models=(MODEL, "gemma2:2b"), no_tools=("gemma2:2b",)) as local:
        monkeypatch.setenv("RESEARCH_FSM_LLM_URL", local.url)
        yield local


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``research-fsm doctor``; its exit status, stdout and stderr."""
    status = main(["doctor", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def check_line(out: str) -> str:
    """The line of the LLM check."""
    (line,) = [row for row in out.splitlines() if row.startswith("check")]
    return line


def test_a_model_that_uses_tools_is_ok(
    server: LocalLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0; the LLM line names the local model and the server; one tiny forced tool
    call was sent, with the placeholder key (none was set)."""
    status, out, _ = doctor(capsys)
    assert 0 == status
    assert f"llm        local model {MODEL} at {server.url}" in out
    assert check_line(out).startswith("check      ok: the model qwen3:4b")
    (request,) = server.requests
    assert request.body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert request.body["max_tokens"] <= 256
    sent = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "local-no-key" in sent


def test_an_unknown_model_fails_with_what_to_do(
    server: LocalLLM, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ollama's 404 for a model it has not pulled: exit 1, the message says so and how to fix it."""
    monkeypatch.setenv("RESEARCH_FSM_MODEL", "llama9:70b")
    status, out, _ = doctor(capsys)
    line = check_line(out)
    assert 1 == status
    assert "does not know the model" in line and "model 'llama9:70b' not found" in line
    assert "ollama pull llama9:70b" in line


def test_a_model_without_tools_is_degraded(
    server: LocalLLM, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model the server says cannot use tools: exit 5 and what will happen instead."""
    monkeypatch.setenv("RESEARCH_FSM_MODEL", "gemma2:2b")
    status, out, _ = doctor(capsys)
    line = check_line(out)
    assert 5 == status
    assert "WARNING" in line and "cannot use tools" in line and "JSON in text" in line


def test_a_model_that_answers_in_text_is_degraded(
    server: LocalLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that ignores the forced tool call (Ollama ignores tool_choice): exit 5."""
    server.mode = "text_for_tool"
    status, out, _ = doctor(capsys)
    assert 5 == status
    assert "answered in text instead of calling the tool" in check_line(out)


def test_nothing_listening_fails_with_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port nobody listens on: exit 1, the address and how to start a server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RESEARCH_FSM_LLM_URL", f"http://127.0.0.1:{port}")
    status, out, _ = doctor(capsys)
    line = check_line(out)
    assert 1 == status
    assert f"could not connect to the LLM server at http://127.0.0.1:{port}" in line
    assert "ollama serve" in line


def test_a_slow_server_times_out(
    server: LocalLLM, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server slower than RESEARCH_FSM_LLM_TIMEOUT: exit 1, the timeout and the fix."""
    monkeypatch.setenv("RESEARCH_FSM_LLM_TIMEOUT", "0.3")
    server.enqueue(delay(5, server.default))
    status, out, _ = doctor(capsys)
    line = check_line(out)
    assert 1 == status
    assert "did not answer within 0.3 s" in line and "RESEARCH_FSM_LLM_TIMEOUT" in line


def test_no_llm_is_not_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing configured: the rule-based agents, exit 0, and how to add an LLM."""
    status, out, _ = doctor(capsys)
    assert 0 == status
    assert "llm        none: the rule-based agents" in out and "RESEARCH_FSM_LLM_URL" in out


def test_json_names_each_backend(server: LocalLLM, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json``: the backends by role, the extras by name, and the check."""
    status, out, _ = doctor(capsys, "--json", "--source", "mock")
    found = json.loads(out)
    assert 0 == status
    roles = {b["role"]: b["name"] for b in found["backends"]}
    assert ("mock data", "none") == (roles["search"], roles["web"])
    assert {"semantic", "minilm", "ja", "pdf-ja"} == {e["name"] for e in found["extras"]}
    assert ("ok", None) == (found["llm_check"]["status"], found["llm_check"]["kind"])


def test_a_bad_address_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL that is not http(s): one line naming the variable and the value, exit 1."""
    monkeypatch.setenv("RESEARCH_FSM_LLM_URL", "localhost:11434")
    status, _, err = doctor(capsys)
    assert 1 == status
    assert "RESEARCH_FSM_LLM_URL must be an http:// or https:// address" in err
    with pytest.raises(ValueError, match="localhost:11434"):
        describe_backends()


def test_ask_prints_what_degraded_once(
    server: LocalLLM, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``research-fsm ask`` with a model that leaves out required fields: the answer, the
    note on stderr once per agent, "cost unknown"; ``--json`` carries the notes."""

    def model(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
        if schema is None:
            return "Apple is doing fine."
        if "is_clear" in schema["properties"]:
            return {"is_clear": True, "detected_company": "Apple Inc.", "intent": "general"}
        return {"is_sufficient": True, "reasoning": "enough"}

    monkeypatch.setenv("RESEARCH_DATA_SOURCE", "directory")
    server.brain, server.mode = model, "missing_field"
    status, out, err = doctor_free(capsys, "ask", "What's new at Apple?")
    note = "clarity: the LLM's answer could not be used (schema); the rules did this step"
    assert 0 == status and "cost unknown" in out
    assert 1 == err.count(f"note: {note}")
    status, out, _ = doctor_free(capsys, "ask", "What's new at Apple?", "--json")
    assert note in json.loads(out)["notes"]


def doctor_free(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run any command; its exit status, stdout and stderr (never a traceback)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err
