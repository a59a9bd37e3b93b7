"""Figure 12: ``PostgresCheckpointStore`` against LangGraph's ``AsyncPostgresSaver``.

The measurements of ``python -m benchmarks.postgres`` (see its docstring), as a
figure of the suite: per durable step, runs/s of many threads over worker
processes sharing one database, runs/s in one process, and disk after a long
conversation, on one server in one run, engines alternating. The server is
``$RESEARCH_FSM_BENCH_DSN`` (a superuser connection to a scratch server) or a
throwaway one started here with ``fsync=on`` (the PostgreSQL server binaries,
as the tests use). With neither the figure is skipped, saying why.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from ._common import FigureResult, Row, Sizes, at_least, at_most, fmt, md_table
from ._graphs import STEPS

TITLE = "PostgreSQL store vs LangGraph's AsyncPostgresSaver"
DSN_ENV = "RESEARCH_FSM_BENCH_DSN"
GOAL_STEP = 3.0  # at least this many times faster per durable step
GOAL_PROCS = 5.0  # at least this many times LangGraph's runs/s with worker processes
GOAL_DISK = 20.0  # at most 1/this of LangGraph's disk


class Skipped(Exception):
    """The figure cannot run here; the message says why."""


def _server() -> tuple[str, Any]:
    """A DSN and the server to stop afterwards (``None`` for ``$RESEARCH_FSM_BENCH_DSN``)."""
    dsn = os.environ.get(DSN_ENV)
    if dsn:
        return dsn, None
    tests = str(Path(__file__).resolve().parent.parent / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from servers.postgres import PostgresServer, ServerUnavailable, find_bindir

    if find_bindir() is None:
        raise Skipped(
            f"no PostgreSQL server binaries (Debian: apt-get install postgresql) and no ${DSN_ENV}"
        )
    server = PostgresServer(fsync=True)  # commits reach the disk
    try:
        server.start()
    except ServerUnavailable as exc:
        raise Skipped(f"no PostgreSQL server could be started: {exc}") from None
    return server.dsn, server


async def _measure(dsn: str, sizes: Sizes, peer: bool) -> dict[str, Any]:
    from .postgres import Databases, lg_runs, procs_rate, rfsm_runs

    dbs = Databases(dsn)
    steps = STEPS["happy"]
    out: dict[str, list[float]] = {
        k: [] for k in ("step", "lg_step", "one", "lg_one", "procs", "lg_procs")
    }
    for rep in range(sizes.fig12_reps):
        fresh = [f"t{rep}-{i}" for i in range(sizes.fig12_runs)]
        out["step"].append(
            await rfsm_runs(dbs.new("r"), fresh, gather=False) / (len(fresh) * steps)
        )
        many = [f"c{rep}-{i}" for i in range(sizes.fig12_threads)]
        out["one"].append(len(many) / await rfsm_runs(dbs.new("r"), many, gather=True))
        out["procs"].append(await procs_rate(dbs, "research_fsm", many, sizes.fig12_processes))
        if peer:
            out["lg_step"].append(
                await lg_runs(dbs.new("l"), fresh, gather=False) / (len(fresh) * steps)
            )
            out["lg_one"].append(len(many) / await lg_runs(dbs.new("l"), many, gather=True))
            out["lg_procs"].append(await procs_rate(dbs, "langgraph", many, sizes.fig12_processes))
    result: dict[str, Any] = {k: statistics.median(v) if v else None for k, v in out.items()}
    turns = ["conversation"] * sizes.fig12_turns
    for key, keep in (("disk", None), ("disk_keep", 24)):
        db = dbs.new("d")
        await rfsm_runs(db, turns, gather=False, keep=keep, vacuum=True)
        result[key] = dbs.size(db)
    result["lg_disk"] = None
    if peer:
        db = dbs.new("d")
        await lg_runs(db, turns, gather=False, vacuum=True)
        result["lg_disk"] = dbs.size(db)
    return result


def _times(peer_value: float | None, mine: float | None) -> float | None:
    return None if peer_value is None or not mine else peer_value / mine


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(12, TITLE)
    if peer:
        try:
            import langgraph.checkpoint.postgres.aio  # noqa: F401
        except ImportError:
            peer = False
            fig.notes.append("LangGraph's Postgres saver is not installed: research_fsm only.")
    try:
        dsn, server = _server()
    except Skipped as exc:
        fig.notes.append(f"skipped: {exc}")
        return fig
    try:
        m = asyncio.run(_measure(dsn, sizes, peer))
    finally:
        if server is not None:
            server.stop()
    step_x = _times(m["lg_step"], m["step"])
    procs_x = _times(m["procs"], m["lg_procs"])
    disk_x = _times(m["lg_disk"], m["disk"])
    holds, margin = at_least(step_x, GOAL_STEP)
    fig.rows.append(Row(
        metric=f"per durable step, {sizes.fig12_runs} runs on new threads", unit="µs",
        research_fsm=m["step"] * 1e6, langgraph=None if m["lg_step"] is None else m["lg_step"] * 1e6,
        goal=f"≥ {GOAL_STEP:g}x faster", holds=holds, margin=margin,
    ))  # fmt: skip
    holds, margin = at_least(procs_x, GOAL_PROCS)
    fig.rows.append(Row(
        metric=f"runs/s, {sizes.fig12_threads} threads, {sizes.fig12_processes} worker "
        "processes, one database", unit="runs/s", research_fsm=m["procs"],
        langgraph=m["lg_procs"], goal=f"≥ {GOAL_PROCS:g}x LangGraph", holds=holds, margin=margin,
    ))  # fmt: skip
    fig.rows.append(Row(
        metric=f"runs/s, {sizes.fig12_threads} threads at once, one process", unit="runs/s",
        research_fsm=m["one"], langgraph=m["lg_one"], goal="(reported)",
    ))  # fmt: skip
    holds, margin = at_most(None if disk_x is None else 1 / disk_x, 1 / GOAL_DISK)
    fig.rows.append(Row(
        metric=f"disk after {sizes.fig12_turns} turns of one conversation", unit="kB",
        research_fsm=m["disk"] / 1024, langgraph=None if m["lg_disk"] is None else m["lg_disk"] / 1024,
        goal=f"≤ 1/{GOAL_DISK:g} of LangGraph", holds=holds, margin=margin,
    ))  # fmt: skip
    fig.rows.append(Row(
        metric="the same with keep=24 (the assistant's default)", unit="kB",
        research_fsm=m["disk_keep"] / 1024, langgraph=None if m["lg_disk"] is None else m["lg_disk"] / 1024,
        goal="(reported)",
    ))  # fmt: skip
    fig.detail = dict(m)
    fig.detail_md = [
        f"Happy-path graph ({STEPS['happy']} nodes) on one PostgreSQL server (fsync on), a fresh "
        f"database per measurement, medians of {sizes.fig12_reps}; LangGraph with "
        '`durability="sync"` on a pool of 10 connections like ours. Disk: '
        "`pg_total_relation_size` of every table after a plain `VACUUM` every 25 turns and at "
        "the end, for both engines.",
        "",
        *md_table(
            ["per step, x faster", "runs/s with processes, x", "disk, 1/x"],
            [[fmt(step_x), fmt(procs_x), fmt(disk_x)]],
        ),
    ]
    return fig
