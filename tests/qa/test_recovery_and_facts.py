"""Error recovery per failed agent, no invented facts, logging formats, the terminal prompt."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from research_fsm import ResearchAssistant, configure_logging
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import ScriptedLLM
from research_fsm.sources import DirectorySource, MockDataSource


def _assistant(
    script: dict[str, list[object]], source: MockDataSource | None = None
) -> ResearchAssistant:
    return ResearchAssistant(
        llm=ScriptedLLM(script), source=source or MockDataSource(), store=MemoryCheckpointStore()
    )


async def test_clarity_crash_recovers_with_understanding_message() -> None:
    """An unexpected clarity failure ends in error recovery's "trouble understanding" answer."""
    reply = await _assistant({"clarity": [RuntimeError("boom")]}).ask(
        "Tell me about Apple", thread_id="e1"
    )
    assert ["clarity", "error_recovery"] == reply.path
    assert reply.text.startswith("I had trouble understanding your question.")
    assert reply.state.error_context is None


async def test_synthesis_crash_returns_unpolished_findings() -> None:
    """An unexpected synthesis failure still returns the findings, unpolished, with sources."""
    script: dict[str, list[object]] = {
        "clarity": [{"is_clear": True, "detected_company": "Apple"}],
        "synthesis": [RuntimeError("boom")],
    }
    reply = await _assistant(script).ask("Tell me about Apple", thread_id="e2")
    assert "error_recovery" == reply.path[-1]
    assert "here are the findings about Apple Inc." in reply.text
    assert "$89.5B" in reply.text
    assert "Sources:" in reply.text


async def test_validator_crash_returns_findings_with_disclaimer() -> None:
    """An unexpected validator failure returns the partial findings with a disclaimer."""
    script: dict[str, list[object]] = {
        "clarity": [{"is_clear": True, "detected_company": "Apple", "intent": "news"}],
        "validator": [RuntimeError("boom")],
    }
    reply = await _assistant(script, MockDataSource(fields={"stock_info"})).ask(
        "What's new at Apple?", thread_id="e3"
    )
    assert ["clarity", "research", "validator", "error_recovery"] == reply.path
    assert reply.text.startswith("I couldn't double-check these findings")
    assert "AAPL trading at $195" in reply.text


_NUMBER = re.compile(r"\d[\d,.]*\d|\d")


@pytest.mark.parametrize(
    "question", ["Tell me about Apple", "What about Microsoft's stock?", "Who runs Tesla?"]
)
async def test_offline_answer_invents_no_numbers(question: str) -> None:
    """Every number in a rule-based answer appears in the findings it was written from."""
    assistant = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    reply = await assistant.ask(question, thread_id="facts")
    findings = reply.state.research_findings
    assert findings is not None
    source_text = findings.model_dump_json()
    for number in _NUMBER.findall(reply.text):
        assert number in source_text, number


def test_json_log_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """With LOG_FORMAT=json and LOG_LEVEL=INFO each agent step is one JSON line with its ids."""
    import asyncio

    stream = io.StringIO()
    monkeypatch.setenv("LOG_FORMAT", "json")
    monkeypatch.setenv("LOG_LEVEL", "INFO")
    configure_logging(stream=stream)
    try:
        assistant = ResearchAssistant(source=MockDataSource(), store=MemoryCheckpointStore())
        asyncio.run(assistant.ask("Tell me about Amazon", thread_id="logs"))
    finally:
        structlog.reset_defaults()
    steps = [json.loads(line) for line in stream.getvalue().splitlines() if '"agent step"' in line]
    assert ["clarity", "research", "synthesis"] == [s["agent"] for s in steps]
    assert {"logs"} == {s["thread_id"] for s in steps}
    assert 1 == len({s["correlation_id"] for s in steps})


def test_bad_log_level_is_a_clear_error() -> None:
    """An unknown LOG_LEVEL names the allowed values."""
    with pytest.raises(ValueError, match="DEBUG, INFO, WARNING"):
        configure_logging(level="LOUD")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_terminal_prompts_for_clarification(tmp_path: Path) -> None:
    """On a terminal, ``ask`` prompts for the clarification and continues in the same process."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "RESEARCH_FSM_HOME": str(tmp_path), "LOG_LEVEL": "WARNING"}
    env.pop("ANTHROPIC_API_KEY", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "research_fsm",
            "ask",
            "Tell me about the company",
            "--source",
            "mock",
        ],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    os.close(slave)
    os.write(master, b"Tesla\n")
    out, err = process.communicate(timeout=60)
    os.close(master)
    assert 0 == process.returncode, err
    assert "Which company" in out
    assert "Here's what I found about Tesla, Inc." in out
