"""Figure 12: the PostgreSQL store against LangGraph's AsyncPostgresSaver.

``python -m benchmarks.postgres``'s measurements (see that module) on a throwaway
server with ``fsync=on`` started like the tests' own: per durable step (runs on new
threads one after the other), runs/s of many threads spread over worker processes
sharing one database and gathered in one process, and disk after one long
conversation. Needs the PostgreSQL server binaries and the ``postgres`` extra; without
them the figure is reported as skipped, saying why. ``--quick``: a handful of runs, 2
worker processes and one database per engine for the timed parts (a few seconds).
"""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import replace
from typing import Any

from ._common import FigureResult, Row, Sizes, at_least, at_most

TITLE = "PostgreSQL store vs AsyncPostgresSaver"


def _missing() -> str | None:
    """Why the figure cannot run here, or ``None``."""
    for module, extra in (("psycopg", "postgres"), ("psycopg_pool", "postgres")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'research-fsm[{extra}]')"
    return None


def _peer_available() -> bool:
    try:
        return importlib.util.find_spec("langgraph.checkpoint.postgres") is not None
    except ModuleNotFoundError:
        return False


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(12, TITLE)
    fig.skipped = _missing()
    if fig.skipped is not None:
        return fig
    from . import postgres as bench

    plan = bench.FULL if sizes.name == "full" else replace(bench.QUICK, processes=2)
    peer = peer and _peer_available()
    try:
        server = bench.throwaway_server()
    except RuntimeError as exc:  # no server binaries (ServerUnavailable says which)
        fig.skipped = f"no PostgreSQL server could be started: {exc}"
        return fig
    try:
        dbs = bench.Databases(server.dsn, shared=plan.shared)
        result = asyncio.run(bench.measure(dbs, plan, peer=peer))
    finally:
        server.stop()
    fig.rows = _rows(result, plan)
    fig.detail = {"plan": plan.__dict__, **result}
    fig.detail_md = [
        f"PostgreSQL on this machine (unix socket, `fsync=on`), a throwaway server; LangGraph "
        f'with `durability="sync"` on a pool of 10 like ours. Medians of {plan.reps} '
        "repetitions, engines alternating. Per durable step: runs on new threads one after "
        f"the other, run time / 3 steps. Runs/s: {plan.threads} threads at once, over "
        f"{plan.processes} spawned worker processes (each its own event loop and pool of 10, "
        "released together by a barrier) and in one process. Disk: every table's "
        "`pg_total_relation_size` after a plain `VACUUM` every 25 turns and at the end; "
        f"with `keep=24`: {_kb(result['disk']['research_fsm keep=24'])} kB. Same as "
        "`python -m benchmarks.postgres`.",
    ]
    return fig


def _rows(result: dict[str, Any], plan: Any) -> list[Row]:
    (step_r, step_l), (one_r, one_l) = result["step_us"], result["runs_per_s"]
    procs_r, procs_l = result["runs_per_s_procs"]
    disk = result["disk"]
    step = Row(
        metric=f"per durable step, {plan.runs} runs on new threads",
        unit="µs",
        research_fsm=step_r,
        langgraph=step_l,
        goal="≥ 3x faster than LangGraph",
    )
    step.holds, step.margin = at_most(step.ratio, 1 / 3) if step.ratio else (None, "n/a")
    procs = Row(
        metric=f"runs/s, {plan.threads} threads at once, {plan.processes} worker processes, "
        "one database",
        unit="runs/s",
        research_fsm=procs_r,
        langgraph=procs_l,
        goal="≥ 5x LangGraph",
    )
    procs.holds, procs.margin = at_least(procs.ratio, 5.0) if procs.ratio else (None, "n/a")
    one = Row(
        metric=f"runs/s, {plan.threads} threads at once, one process",
        unit="runs/s",
        research_fsm=one_r,
        langgraph=one_l,
    )
    size = Row(
        metric=f"disk after {plan.turns} turns of one conversation (no keep)",
        unit="kB",
        research_fsm=_kb(disk["research_fsm"]),
        langgraph=_kb(disk["LangGraph"]),
        goal="≤ 1/20 of LangGraph",
    )
    size.holds, size.margin = at_most(size.ratio, 1 / 20) if size.ratio else (None, "n/a")
    return [step, procs, one, size]


def _kb(size: int | None) -> float | None:
    return None if size is None else size / 1024
