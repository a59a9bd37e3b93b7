"""What a cold process loads: the offline ``research-fsm ask``, the engine's 3-node run
and ``research-fsm mcp`` up to its tool list leave the heavy modules they do not need
unimported (structural checks of ``sys.modules``; the timings are figure 7 and
``benchmarks/mcp_startup.py``), and the logging set-up that makes structlog wait for
the first line still configures it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from homes import seeded_home

from research_fsm.cli import main

ROOT = Path(__file__).resolve().parents[1]

HEAVY = (
    "anthropic",
    "tavily",
    "httpx",
    "tiktoken",
    "numpy",
    "tokenizers",
    "starlette",
    "uvicorn",
    "mcp",
    "structlog",
    "rich",
    "reportlab",
    "lxml",
    "pypdf",
    "pypdfium2",
    "psycopg",
    "research_fsm.deep",
    "research_fsm.reports",
    "research_fsm.documents",
    "research_fsm.web",
    "research_fsm.mcp",
)
"""Modules a cold offline question does not need (nor their submodules)."""

LOADED = """
import json, sys
{body}
print(json.dumps(sorted(sys.modules)))
"""


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "RESEARCH_FSM_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_DATA_SOURCE", "LOG_LEVEL"):
        env.pop(key, None)
    return env


def _loaded(body: str, home: Path) -> list[str]:
    """``sys.modules`` after ``body`` ran in a fresh interpreter (stdin and stdout no
    terminal, no API keys)."""
    out = subprocess.run(
        [sys.executable, "-c", LOADED.format(body=body)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=True,
    ).stdout
    return list(json.loads(out.splitlines()[-1]))


def _heavy(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in heavy)]


def test_an_offline_ask_loads_no_heavy_module(tmp_path: Path) -> None:
    """A cold ``research-fsm ask`` answered offline loads no LLM or search client, no
    numpy, web server, MCP SDK, structlog or rich, and neither the report nor the
    deep-research app."""
    body = (
        "import contextlib, io\n"
        "from research_fsm.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = main(['ask', \"What's happening with Apple?\"])\n"
        "assert code == 0 and 'Apple' in out.getvalue(), (code, out.getvalue())\n"
    )
    loaded = _loaded(body, seeded_home(tmp_path))
    assert "research_fsm.qa.agents" in loaded  # the question was answered here
    assert [] == _heavy(loaded)


def test_the_check_sees_a_heavy_module() -> None:
    """The filter reports a heavy package and its submodules, not a name that only
    starts the same (``mcp_types``, ``research_fsm.deeper``)."""
    modules = ["mcp", "mcp.server", "mcp_types", "research_fsm.deep._api", "research_fsm.deeper"]
    assert ["mcp", "mcp.server", "research_fsm.deep._api"] == _heavy(modules)


THREE_NODES = """
import asyncio
from pydantic import BaseModel
from research_fsm.engine import END, START, StateGraph

class State(BaseModel):
    n: int = 0

async def step(state):
    return {"n": state.n + 1}

graph = StateGraph(State)
graph.add_node("a", step).add_node("b", step).add_node("c", step)
graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
assert asyncio.run(graph.compile().run({}, thread_id="t")).state.n == 3
"""


def test_the_engine_runs_a_graph_without_structlog_or_the_apps(tmp_path: Path) -> None:
    """Importing the engine and running a 3-node graph loads neither structlog (nor rich)
    nor anything of research_fsm outside the engine (but ``_moved``, the standard-library
    table of names that moved, which the package registers on import)."""
    loaded = _loaded(THREE_NODES, tmp_path)
    assert "research_fsm.engine._runloop" in loaded
    assert [] == _heavy(loaded, ("structlog", "rich"))
    assert [] == [
        m
        for m in loaded
        if m.startswith("research_fsm.")
        and not m.startswith("research_fsm.engine")
        and m != "research_fsm._moved"
    ]


def test_a_node_that_logs_loads_structlog_and_logs(tmp_path: Path) -> None:
    """``ctx.log`` still reaches structlog: a node's warning is printed with its bound
    thread and node (structlog loaded by that first line)."""
    body = THREE_NODES.replace(
        "async def step(state):\n",
        "async def step(state, ctx):\n    ctx.log.warning('counted', n=state.n)\n",
    )
    out = subprocess.run(
        [sys.executable, "-c", body],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
        check=True,
    )
    lines = [line for line in (out.stdout + out.stderr).splitlines() if "counted" in line]
    assert 3 == len(lines), out
    assert "thread_id=t" in lines[0] and "node=a" in lines[0], lines


CONFIGURED = """
import io, sys
from research_fsm import configure_logging
from research_fsm._logging import get_logger
stream = io.StringIO()
configure_logging(level="WARNING", fmt="json", stream=stream)
log = get_logger("research_fsm.test")
log.info("dropped", n=1)
assert "structlog" not in sys.modules, "an INFO line below WARNING loaded structlog"
import structlog  # as the engine or a library would: the configuration applies to it
structlog.get_logger("elsewhere").warning("kept", n=2)
log.warning("also kept", n=3)
print(stream.getvalue(), end="")
"""


def test_logging_configured_before_structlog_loads_applies_when_it_does(
    tmp_path: Path,
) -> None:
    """``configure_logging`` before structlog is imported: a line below the level loads
    nothing, and whoever imports structlog first gets the configuration (JSON to the
    given stream, WARNING and up)."""
    out = subprocess.run(
        [sys.executable, "-c", CONFIGURED],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
        check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [("kept", 2), ("also kept", 3)] == [(x["event"], x["n"]) for x in lines]
    assert {"warning"} == {x["level"] for x in lines}
    assert "" == out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["deep", "Spring Boot migration", "--top", "0"],
        ["report", "--resume", "report-nothing-here"],
    ],
)
def test_a_bad_report_or_research_request_is_still_a_usage_error(
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A report's or deep research's bad request (apps loaded only by their commands)
    exits with status 2 and one line naming what is wrong."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert 2 == main(args)
    err = capsys.readouterr().err
    assert 1 == len(err.splitlines()) and err.startswith("research-fsm: "), err
