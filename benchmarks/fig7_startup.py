"""Figure 7: what a person feels at the command line.

* ``import research_fsm``: measured inside a fresh interpreter (``perf_counter``
  around the import), median of ``fig7_runs`` processes; LangGraph's column:
  ``import langgraph.graph`` measured the same way.
* ``research-fsm ask "What's happening with Apple?"`` from a cold process,
  offline (no API keys, ``RESEARCH_FSM_HOME`` a new temporary directory per run):
  wall time of the whole subprocess, median of ``fig7_runs``.
* Detail: ``python -X importtime`` top offenders of the cold ``ask`` (by self
  time, and top-level packages by cumulative time), and the cold ``ask`` phase
  by phase (the directory loads in a worker thread, which a profiler of the
  main thread would only see as waiting).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import ROOT, FigureResult, Row, Sizes, at_most, fmt, md_table, median, temp_dir

TITLE = "Startup: import time and a cold offline `research-fsm ask`"
QUESTION = "What's happening with Apple?"
GOAL_S = 1.0
IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for key in (
        "ANTHROPIC_API_KEY",
        "TAVILY_API_KEY",
        "RESEARCH_DATA_SOURCE",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "PYTHONPROFILEIMPORTTIME",
    ):
        env.pop(key, None)
    env["RESEARCH_FSM_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def cli_command() -> list[str]:
    """The installed ``research-fsm`` script next to this interpreter (not a
    pyenv-style shim, whose own start-up is not ours), else ``python -m research_fsm``."""
    script = Path(sys.executable).parent / "research-fsm"
    if script.exists():
        return [str(script)]
    found = shutil.which("research-fsm")
    if found and "shims" not in found:
        return [found]
    return [sys.executable, "-m", "research_fsm"]


def _import_seconds(module: str, runs: int) -> float:
    times = []
    with temp_dir("fig7-import") as home:
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", IMPORT_SNIPPET.format(module=module)],
                capture_output=True,
                text=True,
                timeout=120,
                env=_env(home),
                cwd=home,
            )
            if out.returncode != 0:
                raise RuntimeError(f"import {module} failed:\n{out.stderr}")
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return median(times)


def _wall(command: list[str], runs: int, check: str | None = None) -> float:
    times = []
    for _ in range(runs):
        home = Path(tempfile.mkdtemp(prefix="rfsm-bench-fig7-"))
        try:
            t0 = time.perf_counter()
            out = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=120,
                env=_env(home),
                cwd=home,
                stdin=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - t0)
            if out.returncode != 0 or (check is not None and check not in out.stdout):
                raise RuntimeError(
                    f"{' '.join(command)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
                )
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return median(times)


_LINE = re.compile(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s+)(\S+)")


def importtime_offenders(command_args: list[str]) -> dict[str, list[tuple[str, float]]]:
    """``-X importtime`` of ``python <command_args>``: top modules by self time
    and top-level imports by cumulative time (milliseconds)."""
    with temp_dir("fig7-importtime") as home:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", *command_args],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(home),
            cwd=home,
            stdin=subprocess.DEVNULL,
        )
    entries = []
    for line in out.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            entries.append(
                (
                    match.group(4),
                    int(match.group(1)) / 1e3,
                    int(match.group(2)) / 1e3,
                    len(match.group(3)),
                )
            )
    if not entries:
        return {"self": [], "cumulative": []}
    top_level = min(e[3] for e in entries)
    by_self = sorted(entries, key=lambda e: -e[1])[:12]
    by_cum = sorted((e for e in entries if e[3] == top_level), key=lambda e: -e[2])[:12]
    return {"self": [(e[0], e[1]) for e in by_self], "cumulative": [(e[0], e[2]) for e in by_cum]}


PHASES_SCRIPT = """
import asyncio, json, sys, time
t0 = time.perf_counter()
import research_fsm.cli
t1 = time.perf_counter()
from research_fsm import ResearchAssistant
from research_fsm.sources import create_data_source
async def main():
    assistant = ResearchAssistant.from_env()
    s0 = time.perf_counter()
    await assistant.source.companies()          # the directory: load + index
    s1 = time.perf_counter()
    await assistant.graph()                     # the assistant's graph (its own name index)
    s2 = time.perf_counter()
    reply = await assistant.ask(sys.argv[1], thread_id="bench")
    s3 = time.perf_counter()
    reply2 = await assistant.ask(sys.argv[1], thread_id="bench2")
    s4 = time.perf_counter()
    return [s1 - s0, s2 - s1, s3 - s2, s4 - s3], reply.path
times, path = asyncio.run(main())
print(json.dumps({"import_cli": t1 - t0, "directory": times[0], "graph": times[1],
                  "first_ask": times[2], "second_ask": times[3], "path": path}))
"""


def cold_phases(runs: int) -> dict[str, Any]:
    """Where a cold ``ask`` spends its time, phase by phase, in fresh processes
    (medians): importing the CLI, loading the company directory and indexing it,
    building the assistant's graph, the first question, and a second one."""
    samples: list[dict[str, Any]] = []
    with temp_dir("fig7-phases") as home:
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", PHASES_SCRIPT, QUESTION],
                capture_output=True,
                text=True,
                timeout=120,
                env=_env(home),
                cwd=home,
                stdin=subprocess.DEVNULL,
            )
            if out.returncode != 0:
                raise RuntimeError(f"phase script failed:\n{out.stderr}")
            samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = ("import_cli", "directory", "graph", "first_ask", "second_ask")
    result: dict[str, Any] = {k: median([x[k] for x in samples]) for k in keys}
    result["path"] = samples[0]["path"]
    return result


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(7, TITLE)
    runs = sizes.fig7_runs
    ours_import = _import_seconds("research_fsm", runs)
    lg_import = _import_seconds("langgraph.graph", runs) if peer else None
    bare = _wall([sys.executable, "-c", "pass"], runs)
    command = [*cli_command(), "ask", QUESTION]
    ask = _wall(command, runs, check="Apple")
    graph_cmd = _wall([*cli_command(), "graph"], runs, check="flowchart")
    holds, margin = at_most(ask, GOAL_S)
    fig.rows.append(
        Row(
            metric="import research_fsm (LangGraph: import langgraph.graph)",
            unit="ms",
            research_fsm=ours_import * 1e3,
            langgraph=None if lg_import is None else lg_import * 1e3,
        )
    )
    fig.rows.append(
        Row(
            metric=f'cold `research-fsm ask "{QUESTION}"`, offline',
            unit="ms",
            research_fsm=ask * 1e3,
            goal="< 1 s",
            holds=holds,
            margin=margin,
        )
    )
    offenders = importtime_offenders(["-m", "research_fsm", "ask", QUESTION])
    phases = cold_phases(runs)
    fig.detail = {
        "runs": runs,
        "command": command,
        "import_s": ours_import,
        "langgraph_import_s": lg_import,
        "python_startup_s": bare,
        "ask_s": ask,
        "graph_command_s": graph_cmd,
        "importtime_self_ms": offenders["self"],
        "importtime_cumulative_ms": offenders["cumulative"],
        "cold_ask_phases_s": phases,
    }
    fig.detail_md = [
        f"Medians of {runs} cold processes. `{' '.join(command[:1])}`; bare `python -c pass`: "
        f"{fmt(bare * 1e3, 'ms')}; `research-fsm graph` (no question): {fmt(graph_cmd * 1e3, 'ms')}; "
        f"`ask`: {fmt(ask * 1e3, 'ms')}, of which importing research_fsm alone is "
        f"{fmt(ours_import * 1e3, 'ms')}.",
        "",
        "`python -X importtime -m research_fsm ask ...`, top-level imports by cumulative time:",
        "",
        *md_table(["module", "ms"], [(m, fmt(v)) for m, v in offenders["cumulative"]]),
        "",
        "... and modules by self time:",
        "",
        *md_table(["module", "ms"], [(m, fmt(v)) for m, v in offenders["self"]]),
        "",
        f"A cold `ask` phase by phase (fresh processes, medians; path {' -> '.join(phases['path'])}):",
        "",
        *md_table(
            ["phase", "ms"],
            [
                ("interpreter start (`python -c pass`)", fmt(bare * 1e3)),
                ("import research_fsm.cli", fmt(phases["import_cli"] * 1e3)),
                (
                    "company directory: load profiles + build its index",
                    fmt(phases["directory"] * 1e3),
                ),
                ("assistant graph (builds its own name index)", fmt(phases["graph"] * 1e3)),
                (
                    "first question (token counter, file store, agents)",
                    fmt(phases["first_ask"] * 1e3),
                ),
                ("a second question in the same process", fmt(phases["second_ask"] * 1e3)),
            ],
        ),
    ]
    return fig
