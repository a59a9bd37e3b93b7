"""Helpers of the MCP tests: the server's subprocess environment, a free loopback port,
and an elicitation callback that answers (or declines) and records what it was asked."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

ROOT = Path(__file__).resolve().parents[2]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The server process's environment: a temporary home, no API keys (offline)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RESEARCH_FSM_HOME": str(home),
        "XDG_DATA_HOME": str(home / "xdg"),
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",
    }
    env.update(extra)
    return env


def stdio_params(home: Path, *args: str, **env: str) -> StdioServerParameters:
    """``python -m research_fsm mcp ARGS`` from this checkout, over stdio."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "research_fsm", "mcp", *args],
        env=server_env(home, **env),
        cwd=str(ROOT),
    )


def free_port() -> int:
    """A loopback port free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Answerer:
    """An elicitation callback: answers ``answer`` (``None``: declines), records questions."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append((params.message, dict(params.requested_schema)))
        if self.answer is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"answer": self.answer})


class Recorder:
    """A progress callback that keeps every message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")
