"""``python -m benchmarks.mcp_startup [--runs N] [--out PATH]``: how soon a desktop client
sees the MCP server's tools.

Each run starts ``research-fsm mcp`` over stdio from a cold process (a new temporary
``RESEARCH_FSM_HOME``, no API keys) with the MCP SDK's own client, and times, from the
spawn: the tools listed (``initialize`` + ``tools/list``: the goal, ≤ 1 s), then the first
answer (``ask "What does Apple do?"``: the assistant and the company directory load on
the first call). The CPU seconds of the listing run are the server process's whole life
(start, list, exit): less sensitive than wall time to other processes. Beside them, the floors no server on this SDK can go under, each in a
fresh interpreter: ``python -c pass`` and ``import mcp.server.mcpserver`` (the SDK's own
import). Medians of ``--runs``; the load average is printed with them, since start-up
is CPU-bound and scales with a busy machine's load. Prints a Markdown table, writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._common import ROOT, median, temp_dir
from ._machine import machine_info

GOAL_S = 1.0
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mcp_startup.json"


def _env(home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RESEARCH_FSM_HOME": str(home),
        "XDG_DATA_HOME": str(home / "xdg"),
        "PYTHONPATH": str(ROOT),
    }
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _python_seconds(code: str, home: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c code``."""
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=_env(home), check=True, timeout=120)
    return time.perf_counter() - started, _children_cpu() - cpu


def _list_only(home: Path) -> tuple[float, float]:
    """Wall seconds from spawn to the tools listed, and the server process's CPU seconds
    (start, list, exit: it ends when the client leaves)."""
    cpu = _children_cpu()
    listed, _ = asyncio.run(_cold_start(home, ask=False))
    return listed, _children_cpu() - cpu


async def _cold_start(home: Path, *, ask: bool = True) -> tuple[float, float]:
    """Seconds from spawn to the tools listed, and to the first answer."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "research_fsm", "mcp"],
        env=_env(home),
        cwd=str(ROOT),
    )
    started = time.perf_counter()
    async with Client(params) as client:
        tools = await client.list_tools()
        listed = time.perf_counter() - started
        if "ask" not in {tool.name for tool in tools.tools}:
            raise RuntimeError("the server listed no ask tool")
        if not ask:
            return listed, listed
        result = await client.call_tool("ask", {"question": "What does Apple do?"})
        answered = time.perf_counter() - started
        if result.is_error:
            raise RuntimeError(f"ask failed: {result.content}")
    return listed, answered


def measure(runs: int) -> dict[str, Any]:
    """Every run's seconds and their medians."""
    names = ["python", "sdk_import", "listed", "answered"]
    samples: dict[str, list[float]] = {name: [] for name in names}
    samples.update({f"{name}_cpu": [] for name in names[:3]})
    for _ in range(runs):
        with temp_dir("mcp-startup") as home:
            for name, code in (("python", "pass"), ("sdk_import", "import mcp.server.mcpserver")):
                wall, cpu = _python_seconds(code, home)
                samples[name].append(wall)
                samples[f"{name}_cpu"].append(cpu)
            listed, cpu = _list_only(home)
            samples["listed"].append(listed)
            samples["listed_cpu"].append(cpu)
        with temp_dir("mcp-startup") as home:
            _, answered = asyncio.run(_cold_start(home))
            samples["answered"].append(answered)
    medians = {name: median(values) for name, values in samples.items()}
    return {
        "runs": runs,
        "goal_s": GOAL_S,
        "met": medians["listed"] <= GOAL_S,
        "median_s": medians,
        "samples_s": samples,
        "load_average": os.getloadavg()[0],
        "machine": machine_info(),
    }


def table(result: dict[str, Any]) -> str:
    """The medians as a Markdown table."""
    m = result["median_s"]
    rows = [
        ("`python -c pass` (the interpreter)", m["python"], m["python_cpu"], ""),
        ("`import mcp.server.mcpserver` (the SDK)", m["sdk_import"], m["sdk_import_cpu"], ""),
        (
            "`research-fsm mcp`: spawn to tools listed",
            m["listed"],
            m["listed_cpu"],
            f"≤ {GOAL_S:g} s: {'met' if result['met'] else 'NOT met'}",
        ),
        ("… to the first answer (`ask`)", m["answered"], None, ""),
    ]
    lines = ["| what | median wall s | CPU s | goal |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {name} | {wall:.3f} | {'-' if cpu is None else f'{cpu:.3f}'} | {goal} |"
        for name, wall, cpu, goal in rows
    ]
    lines.append(f"\n{result['runs']} runs, load average {result['load_average']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcp_startup")
    parser.add_argument("--runs", type=int, default=5, help="cold starts (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON file")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    print(table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nJSON: {args.out}")


if __name__ == "__main__":
    main()
