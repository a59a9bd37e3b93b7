"""Figure 7: what a person feels at the command line.

``python -m benchmarks.fig7_startup [--runs N] [--out PATH]`` runs this figure alone
(a table and JSON); ``python -m benchmarks --only 7`` with the others.

Every process runs with its bytecode cached, as an installed package has it: the
children run without ``PYTHONDONTWRITEBYTECODE``, and each command runs once to warm
``__pycache__`` before anything is timed.

* ``import research_fsm``: measured inside a fresh interpreter (``perf_counter``
  around the import), median of ``fig7_runs`` processes; LangGraph's column:
  ``import langgraph.graph`` measured the same way.
* A process that imports the engine, builds a 3-node graph (three async nodes in a
  line, a pydantic state) and runs it once, beside the same with pydantic-graph
  (``GraphBuilder``, three steps over a dataclass state) and with LangGraph when
  installed: wall time of the whole process from spawn to exit, and its CPU time;
  paired (each round runs every engine back to back, in rotated order), medians of
  ``fig7_runs`` rounds and the ratio from the same rounds. Goal: no slower than
  pydantic-graph.
* ``research-fsm ask "What's happening with Apple?"`` from a cold process,
  offline (no API keys, ``RESEARCH_FSM_HOME`` a new temporary directory per run):
  wall time of the whole subprocess, median of ``fig7_runs``. Goal: < 0.5 s.
* Detail: ``python -X importtime`` top offenders of the cold ``ask`` (by self
  time, and top-level packages by cumulative time), and the cold ``ask`` phase
  by phase (the directory loads in a worker thread, which a profiler of the
  main thread would only see as waiting).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import (
    FULL,
    ROOT,
    FigureResult,
    Row,
    Sizes,
    alternate,
    at_most,
    fmt,
    langgraph_available,
    md_table,
    median,
    summary_table,
    temp_dir,
    version_of,
)

TITLE = "Startup: import time, a 3-node run in a fresh process, a cold offline `research-fsm ask`"
QUESTION = "What's happening with Apple?"
GOAL_S = 0.5
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "fig7_startup.json"

_PYDANTIC_GRAPH = """
import asyncio
{imports}
from pydantic_graph import GraphBuilder, StepContext

{state}

g = GraphBuilder(state_type=State, output_type=int)

@g.step
async def a(ctx: StepContext[State, None, None]) -> None:
    ctx.state.n += 1

@g.step
async def b(ctx: StepContext[State, None, None]) -> None:
    ctx.state.n += 1

@g.step
async def c(ctx: StepContext[State, None, None]) -> int:
    ctx.state.n += 1
    return ctx.state.n

g.add(
    g.edge_from(g.start_node).to(a),
    g.edge_from(a).to(b),
    g.edge_from(b).to(c),
    g.edge_from(c).to(g.end_node),
)
assert asyncio.run(g.build().run(state=State())) == 3
"""
"""pydantic-graph's 3-node process; ``{state}`` is its state class (a dataclass, its own
style, or a pydantic model, as ours needs)."""

THREE_NODES = {
    "research_fsm": """
import asyncio
from pydantic import BaseModel
from research_fsm.engine import END, START, StateGraph

class State(BaseModel):
    n: int = 0

async def a(state): return {"n": state.n + 1}
async def b(state): return {"n": state.n + 1}
async def c(state): return {"n": state.n + 1}

graph = StateGraph(State)
graph.add_node("a", a).add_node("b", b).add_node("c", c)
graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
result = asyncio.run(graph.compile().run({"n": 0}, thread_id="t"))
assert result.state.n == 3, result
""",
    "pydantic_graph": _PYDANTIC_GRAPH.format(
        imports="from dataclasses import dataclass",
        state="@dataclass\nclass State:\n    n: int = 0",
    ),
    "pydantic_graph_model_state": _PYDANTIC_GRAPH.format(
        imports="from pydantic import BaseModel",
        state="class State(BaseModel):\n    n: int = 0",
    ),
    "langgraph": """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class State(TypedDict):
    n: int

def a(state): return {"n": state["n"] + 1}
def b(state): return {"n": state["n"] + 1}
def c(state): return {"n": state["n"] + 1}

graph = StateGraph(State)
graph.add_node("a", a); graph.add_node("b", b); graph.add_node("c", c)
graph.add_edge(START, "a"); graph.add_edge("a", "b"); graph.add_edge("b", "c")
graph.add_edge("c", END)
assert graph.compile().invoke({"n": 0})["n"] == 3
""",
}
"""The same 3-node graph, built and run once, in each engine (a whole script). Ours needs
a pydantic model for its state; pydantic-graph's own examples use a dataclass (which spares
it importing pydantic), so it also runs with the same pydantic model as ours."""
DISTRIBUTIONS = {
    "research_fsm": "research-fsm",
    "pydantic_graph": "pydantic-graph",
    "pydantic_graph_model_state": "pydantic-graph",
    "langgraph": "langgraph",
}
IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)


def _env(home: Path, root: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    for key in (
        "ANTHROPIC_API_KEY",
        "TAVILY_API_KEY",
        "RESEARCH_DATA_SOURCE",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONDONTWRITEBYTECODE",  # an installed package's bytecode is cached
    ):
        env.pop(key, None)
    env["RESEARCH_FSM_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
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
        for i in range(runs + 1):  # the first warms the bytecode cache
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
            if i:
                times.append(float(out.stdout.strip().splitlines()[-1]))
    return median(times)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _spawn(
    command: list[str], check: str | None = None, home: Path | None = None, root: Path = ROOT
) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` from spawn to exit, with the code of ``root``,
    in ``home`` (default: a new temporary one)."""
    fresh = home is None
    where = Path(tempfile.mkdtemp(prefix="rfsm-bench-fig7-")) if home is None else home
    try:
        cpu0, t0 = _children_cpu(), time.perf_counter()
        out = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(where, root),
            cwd=where,
            stdin=subprocess.DEVNULL,
        )
        wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
        if out.returncode != 0 or (check is not None and check not in out.stdout):
            raise RuntimeError(
                f"{' '.join(command)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
            )
        return wall, cpu
    finally:
        if fresh:
            shutil.rmtree(where, ignore_errors=True)


def _cold(command: list[str], runs: int, check: str | None = None) -> tuple[float, float]:
    """Median wall and CPU seconds of ``runs`` cold processes (after one that warms
    the bytecode cache)."""
    _spawn(command, check)
    samples = [_spawn(command, check) for _ in range(runs)]
    return median([w for w, _ in samples]), median([c for _, c in samples])


def _wall(command: list[str], runs: int, check: str | None = None) -> float:
    return _cold(command, runs, check)[0]


def warm_home_ask(runs: int, roots: dict[str, Path]) -> dict[str, Any]:
    """A cold ``research-fsm ask`` in a home that has run one before (the company
    directory's checked profiles cached there, as from a user's second command on), for
    each checkout of ``roots``: wall and CPU medians of ``runs`` rounds, the checkouts
    back to back in rotated order; and the ratios to the first checkout's."""
    command = [*cli_command(), "ask", QUESTION]
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    with contextlib.ExitStack() as stack:
        homes = {name: stack.enter_context(temp_dir(f"fig7-warm-{name}")) for name in roots}
        for name, root in roots.items():
            _spawn(command, "Apple", homes[name], root)  # bytecode and the directory cache
        for rep in range(runs):
            for name in alternate(rep, *roots):
                samples[name].append(_spawn(command, "Apple", homes[name], roots[name]))
    return _paired(samples)


def _paired(samples: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """Medians of each name's (wall, CPU) samples, and the first name's ratio to each."""
    names = list(samples)
    result: dict[str, Any] = {"runs": len(samples[names[0]]), "engines": names}
    for name, values in samples.items():
        result[name] = {
            "wall_s": median([w for w, _ in values]),
            "cpu_s": median([c for _, c in values]),
            "samples": values,
        }
    first = samples[names[0]]
    for name in names[1:]:
        other = samples[name]
        result[f"ratio_{name}"] = {
            "wall": result[names[0]]["wall_s"] / result[name]["wall_s"],
            "cpu": result[names[0]]["cpu_s"] / result[name]["cpu_s"],
            "wall_median_of_rounds": median(
                [o[0] / p[0] for o, p in zip(first, other, strict=True)]
            ),
            "cpu_median_of_rounds": median(
                [o[1] / p[1] for o, p in zip(first, other, strict=True)]
            ),
        }
    return result


def against(runs: int, other: Path) -> dict[str, Any]:
    """This checkout beside ``other`` (e.g. the last release's), paired: the 3-node
    process, a cold ``ask`` in a new home and in a warm one."""
    roots = {"this": ROOT, "other": other}
    fresh: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    three: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    ask = [*cli_command(), "ask", QUESTION]
    script = [sys.executable, "-c", THREE_NODES["research_fsm"]]
    for root in roots.values():
        _spawn(ask, "Apple", root=root)
        _spawn(script, root=root)
    for rep in range(runs):
        for name in alternate(rep, *roots):
            fresh[name].append(_spawn(ask, "Apple", root=roots[name]))
            three[name].append(_spawn(script, root=roots[name]))
    return {
        "other": str(other),
        "three_nodes": _paired(three),
        "ask_new_home": _paired(fresh),
        "ask_warm_home": warm_home_ask(runs, roots),
    }


def three_node_engines() -> list[str]:
    """The engines of the 3-node row installed here: ours, pydantic-graph, LangGraph."""
    engines = ["research_fsm"]
    if importlib.util.find_spec("pydantic_graph") is not None:
        engines += ["pydantic_graph", "pydantic_graph_model_state"]
    if importlib.util.find_spec("langgraph") is not None:
        engines.append("langgraph")
    return engines


def three_node_runs(runs: int, engines: list[str]) -> dict[str, Any]:
    """Each engine's process that imports it, builds the 3-node graph and runs it once:
    wall and CPU seconds (medians of ``runs`` rounds; each round runs every engine back
    to back in rotated order, after one round that warms the bytecode cache), and each
    peer's ratio research_fsm / peer: of the medians, and the median of the rounds'."""
    commands = {name: [sys.executable, "-c", THREE_NODES[name]] for name in engines}
    for name in engines:
        _spawn(commands[name])
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in engines}
    for rep in range(runs):
        for name in alternate(rep, *engines):
            samples[name].append(_spawn(commands[name]))
    return _paired(samples)


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
import research_fsm.cli._main
from research_fsm.assistant import ResearchAssistant
t1 = time.perf_counter()
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


def _three_node_rows(three: dict[str, Any], peer: bool) -> list[Row]:
    ours = three["research_fsm"]
    pg = three.get("pydantic_graph")
    lg = three.get("langgraph") if peer else None
    if pg is None:
        holds, margin = None, "n/a (pydantic-graph not installed: the bench extra)"
    else:
        ratio = three["ratio_pydantic_graph"]["wall"]
        same = three["ratio_pydantic_graph_model_state"]
        holds = ratio <= 1.0
        margin = (
            f"{'yes' if holds else 'no'}: pydantic-graph {fmt(pg['wall_s'] * 1e3, 'ms')}, "
            f"ratio {ratio:.2f} (CPU {fmt(ours['cpu_s'] * 1e3, 'ms')} vs "
            f"{fmt(pg['cpu_s'] * 1e3, 'ms')}, ratio {three['ratio_pydantic_graph']['cpu']:.2f}); "
            f"with a pydantic state as ours, ratio {same['wall']:.2f} (CPU {same['cpu']:.2f})"
        )
    return [
        Row(
            metric="a process: import the engine, build a 3-node graph, run it once",
            unit="ms",
            research_fsm=ours["wall_s"] * 1e3,
            langgraph=None if lg is None else lg["wall_s"] * 1e3,
            goal="no slower than pydantic-graph",
            holds=holds,
            margin=margin,
        )
    ]


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(7, TITLE)
    runs = sizes.fig7_runs
    ours_import = _import_seconds("research_fsm", runs)
    lg_import = _import_seconds("langgraph.graph", runs) if peer else None
    three = three_node_runs(runs, three_node_engines())
    bare = _wall([sys.executable, "-c", "pass"], runs)
    command = [*cli_command(), "ask", QUESTION]
    ask, ask_cpu = _cold(command, runs, check="Apple")
    warm = warm_home_ask(runs, {"research_fsm": ROOT})["research_fsm"]
    graph_cmd = _wall([*cli_command(), "graph"], runs, check="flowchart")
    holds, margin = at_most(warm["wall_s"], GOAL_S)
    fig.rows.append(
        Row(
            metric="import research_fsm (LangGraph: import langgraph.graph)",
            unit="ms",
            research_fsm=ours_import * 1e3,
            langgraph=None if lg_import is None else lg_import * 1e3,
        )
    )
    fig.rows += _three_node_rows(three, peer)
    fig.rows.append(
        Row(
            metric=f'cold `research-fsm ask "{QUESTION}"`, offline, in a home that has '
            "run one before (the directory's checked profiles cached)",
            unit="ms",
            research_fsm=warm["wall_s"] * 1e3,
            goal=f"< {GOAL_S:g} s",
            holds=holds,
            margin=f"{margin}; CPU {fmt(warm['cpu_s'] * 1e3, 'ms')}",
        )
    )
    fig.rows.append(
        Row(
            metric="... the same in a new home (the first command: checks and caches the "
            "directory)",
            unit="ms",
            research_fsm=ask * 1e3,
            margin=f"CPU {fmt(ask_cpu * 1e3, 'ms')}",
        )
    )
    offenders = importtime_offenders(["-m", "research_fsm", "ask", QUESTION])
    phases = cold_phases(runs)
    fig.detail = {
        "runs": runs,
        "command": command,
        "import_s": ours_import,
        "langgraph_import_s": lg_import,
        "three_nodes": three,
        "versions": {
            name: version_of(name) for name in ("pydantic", "pydantic-graph", "langgraph")
        },
        "python_startup_s": bare,
        "ask_s": ask,
        "ask_cpu_s": ask_cpu,
        "ask_warm_home": warm,
        "graph_command_s": graph_cmd,
        "importtime_self_ms": offenders["self"],
        "importtime_cumulative_ms": offenders["cumulative"],
        "cold_ask_phases_s": phases,
        "load_average": os.getloadavg()[0],
    }
    engines = three["engines"]
    fig.detail_md = [
        f"Medians of {runs} cold processes, bytecode cached. `{' '.join(command[:1])}`; "
        f"bare `python -c pass`: {fmt(bare * 1e3, 'ms')}; `research-fsm graph` (no question): "
        f"{fmt(graph_cmd * 1e3, 'ms')}; `ask`: {fmt(ask * 1e3, 'ms')} "
        f"(CPU {fmt(ask_cpu * 1e3, 'ms')}), of which importing research_fsm alone is "
        f"{fmt(ours_import * 1e3, 'ms')}.",
        "",
        "A process that imports the engine, builds the 3-node graph and runs it once "
        f"(spawn to exit; paired rounds, medians of {runs}):",
        "",
        *md_table(
            ["engine", "version", "wall ms", "CPU ms", "ours / it (wall)", "ours / it (CPU)"],
            [
                (
                    name,
                    version_of(DISTRIBUTIONS[name]) or "-",
                    fmt(three[name]["wall_s"] * 1e3),
                    fmt(three[name]["cpu_s"] * 1e3),
                    "-" if name == "research_fsm" else f"{three[f'ratio_{name}']['wall']:.2f}",
                    "-" if name == "research_fsm" else f"{three[f'ratio_{name}']['cpu']:.2f}",
                )
                for name in engines
            ],
        ),
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
                ("import the CLI and the assistant", fmt(phases["import_cli"] * 1e3)),
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


def main(argv: list[str] | None = None) -> None:
    """This figure alone: the summary rows and the detail, printed; JSON written."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fig7_startup")
    parser.add_argument(
        "--runs", type=int, default=FULL.fig7_runs, help=f"cold runs (default {FULL.fig7_runs})"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON file")
    parser.add_argument("--no-peer", action="store_true", help="leave LangGraph out")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="instead: this checkout beside another (e.g. `git archive v0.1.0`), paired",
    )
    args = parser.parse_args(argv)
    if args.against is not None:
        print_against(against(args.runs, args.against.resolve()), args.out)
        return
    sizes = dataclasses.replace(FULL, fig7_runs=args.runs)
    fig = run(sizes, langgraph_available() and not args.no_peer)
    print("\n".join(summary_table([fig])))
    print()
    print("\n".join(fig.detail_md))
    print(f"\nload average {fig.detail['load_average']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fig.to_json(), indent=2, default=str) + "\n", encoding="utf-8")
    print(f"JSON: {args.out}")


def print_against(result: dict[str, Any], out: Path) -> None:
    """The ``--against`` table (medians, ratios this / other), and its JSON."""
    rows = []
    for key, what in (
        ("three_nodes", "import the engine, build a 3-node graph, run it once"),
        ("ask_new_home", "cold `ask`, a new home"),
        ("ask_warm_home", "cold `ask`, a home that has run one"),
    ):
        pair = result[key]
        rows.append(
            (
                what,
                fmt(pair["other"]["wall_s"] * 1e3),
                fmt(pair["this"]["wall_s"] * 1e3),
                f"{pair['ratio_other']['wall']:.2f}",
                fmt(pair["other"]["cpu_s"] * 1e3),
                fmt(pair["this"]["cpu_s"] * 1e3),
                f"{pair['ratio_other']['cpu']:.2f}",
            )
        )
    header = ["process", "other ms", "this ms", "this/other", "other CPU ms", "this CPU ms"]
    print(
        f"This checkout ({ROOT}) beside {result['other']}, paired, medians of "
        f"{result['three_nodes']['runs']} rounds:\n"
    )
    print("\n".join(md_table([*header, "this/other CPU"], rows)))
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
