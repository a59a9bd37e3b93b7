"""``python -m benchmarks.postgres [--dsn DSN] [--quick]``: the PostgreSQL store vs LangGraph.

``PostgresCheckpointStore`` against LangGraph's ``AsyncPostgresSaver``
(``langgraph-checkpoint-postgres``, ``durability="sync"``) on the same server in
one run, the happy-path graph of ``_graphs`` (3 nodes), engines alternating:

* per durable step: runs on new threads one after the other (µs per node step);
* runs/s with many threads: ``--threads`` runs on as many threads, spread over
  ``--processes`` worker processes (4) sharing one database, each with its own event
  loop and pool of 10 connections, released together by a barrier (``_pgprocs``);
  and the same threads gathered at once in one process on one pool of 10;
* disk after ``--turns`` turns of one conversation: ``pg_total_relation_size`` of
  every table the engine made (heap, indexes, TOAST, free-space and visibility
  maps), after a plain ``VACUUM`` every 25 turns and at the end (what autovacuum
  does; never ``VACUUM FULL``), for both engines; research_fsm without ``keep``,
  and with the assistant's ``keep=24``.

Without ``--dsn`` it starts a throwaway server like the tests do, but with
``fsync=on`` (needs the PostgreSQL server binaries). Each measurement gets a database of its
own (``--quick``: one per engine for the timed parts, fewer ``CREATE DATABASE``). Figure 12 of
``python -m benchmarks`` runs the same measurements (``fig12_postgres``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from research_fsm.stores.postgres import PostgresCheckpointStore

from ._common import throwaway_server
from ._graphs import STEPS, build_langgraph, build_rfsm, lg_config, lg_input, question_input
from ._pgprocs import runs_per_s, setup_tables

SCENARIO = "happy"


@dataclass(frozen=True)
class Plan:
    """How much one measurement does."""

    runs: int
    """Runs on new threads one after the other (per durable step)."""
    threads: int
    """Threads run at once (runs/s)."""
    turns: int
    """Turns of one conversation (disk)."""
    reps: int
    """Repetitions of the timed parts (medians are reported)."""
    processes: int
    """Worker processes sharing one database (runs/s)."""
    shared: bool = False
    """One database per engine for the timed parts instead of one per measurement."""


FULL = Plan(runs=200, threads=1000, turns=200, reps=3, processes=4)
QUICK = Plan(runs=5, threads=20, turns=10, reps=1, processes=4, shared=True)


class Databases:
    """Makes a fresh database per measurement on the server ``dsn`` reaches (with
    ``shared``, one per tag except the disk measure's ``d``)."""

    def __init__(self, dsn: str, *, shared: bool = False) -> None:
        self.dsn = dsn
        self._count = 0
        self._shared = shared
        self._made: dict[str, str] = {}

    def new(self, tag: str) -> str:
        if self._shared and tag != "d" and tag in self._made:
            return self._made[tag]
        self._count += 1
        name = f"bench_{tag}_{self._count}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name}")
        self._made[tag] = make_conninfo(self.dsn, dbname=name)
        return self._made[tag]

    def size(self, dsn: str) -> int:
        """Bytes of every table (with indexes and TOAST) in the database, after VACUUM."""
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM")
            row = conn.execute(
                "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            ).fetchone()
        return int(row[0]) if row else 0


VACUUM_EVERY = 25  # turns between plain VACUUMs in the disk measure (as autovacuum would)


async def rfsm_runs(
    dsn: str, threads: list[str], *, gather: bool, keep: int | None = None, vacuum: bool = False
) -> float:
    """Seconds for one run on each of ``threads`` (one after the other, or all at once);
    ``vacuum``: a plain VACUUM every ``VACUUM_EVERY`` runs (one after the other only)."""
    store = PostgresCheckpointStore(dsn, keep=keep, pool_size=10)
    app = build_rfsm(store)
    await store.load_latest("warm-up")
    try:
        return await _timed(
            threads,
            gather,
            lambda t: app.run(question_input(SCENARIO), thread_id=t),
            vacuum and dsn,
        )
    finally:
        await store.aclose()


async def lg_runs(dsn: str, threads: list[str], *, gather: bool, vacuum: bool = False) -> float:
    """The same with LangGraph's AsyncPostgresSaver on a pool of 10 connections."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(dsn, max_size=10, kwargs=kwargs, open=False) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        app = build_langgraph(saver)
        seen: set[str] = set()

        def run(t: str) -> Awaitable[Any]:
            first = t not in seen
            seen.add(t)
            return app.ainvoke(lg_input(SCENARIO, first=first), lg_config(t), durability="sync")

        return await _timed(threads, gather, run, vacuum and dsn)


async def _timed(
    threads: list[str], gather: bool, run: Callable[[str], Awaitable[Any]], vacuum: str = ""
) -> float:
    start = time.perf_counter()
    if gather:
        await asyncio.gather(*(run(t) for t in threads))
    else:
        for done, t in enumerate(threads, 1):
            await run(t)
            if vacuum and done % VACUUM_EVERY == 0:
                await asyncio.to_thread(_vacuum, vacuum)
    return time.perf_counter() - start


def _vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM")


async def procs_rate(dbs: Databases, engine: str, threads: list[str], processes: int) -> float:
    """Runs/s of ``threads`` spread over ``processes`` worker processes on a new database."""
    db = dbs.new("p")
    await setup_tables(engine, db)
    return await asyncio.to_thread(runs_per_s, engine, db, threads, processes)


async def measure(dbs: Databases, plan: Plan, *, peer: bool = True) -> dict[str, Any]:
    """Every measurement, engines alternating; LangGraph's values ``None`` without ``peer``."""
    runs, threads = plan.runs, plan.threads
    samples: dict[str, list[float]] = {k: [] for k in ("sr", "sl", "rr", "rl", "pr", "pl")}
    for rep in range(plan.reps):
        fresh = [f"t{rep}-{i}" for i in range(runs)]
        many = [f"c{rep}-{i}" for i in range(threads)]
        steps = runs * STEPS["happy"]
        samples["sr"].append(await rfsm_runs(dbs.new("r"), fresh, gather=False) / steps)
        if peer:
            samples["sl"].append(await lg_runs(dbs.new("l"), fresh, gather=False) / steps)
        samples["rr"].append(threads / await rfsm_runs(dbs.new("r"), many, gather=True))
        if peer:
            samples["rl"].append(threads / await lg_runs(dbs.new("l"), many, gather=True))
        samples["pr"].append(await procs_rate(dbs, "research_fsm", many, plan.processes))
        if peer:
            samples["pl"].append(await procs_rate(dbs, "langgraph", many, plan.processes))
    med = {k: statistics.median(v) if v else None for k, v in samples.items()}
    return {
        "step_us": (med["sr"] * 1e6 if med["sr"] else None, med["sl"] * 1e6 if med["sl"] else None),
        "runs_per_s": (med["rr"], med["rl"]),
        "runs_per_s_procs": (med["pr"], med["pl"]),
        "disk": await disk_sizes(dbs, plan.turns, peer=peer),
    }


async def disk_sizes(dbs: Databases, turns: int, *, peer: bool) -> dict[str, int | None]:
    """Bytes of every table after ``turns`` turns of one conversation, per engine."""
    one = ["conversation"] * turns
    disk: dict[str, int | None] = {}
    for label, keep in (("research_fsm", None), ("research_fsm keep=24", 24)):
        db = dbs.new("d")
        await rfsm_runs(db, one, gather=False, keep=keep, vacuum=True)
        disk[label] = dbs.size(db)
    disk["LangGraph"] = None
    if peer:
        db = dbs.new("d")
        await lg_runs(db, one, gather=False, vacuum=True)
        disk["LangGraph"] = dbs.size(db)
    return disk


def report(result: dict[str, Any], plan: Plan) -> str:
    """The Markdown table of ``measure``'s result (LangGraph measured too)."""
    r, lg = result["step_us"]
    rr, rl = result["runs_per_s"]
    pr, pl = result["runs_per_s_procs"]
    disk = result["disk"]
    return "\n".join(
        [
            "| metric | research_fsm | LangGraph AsyncPostgresSaver | ratio |",
            "| --- | --- | --- | --- |",
            f"| per durable step, {plan.runs} runs on new threads (µs) "
            f"| {r:.0f} | {lg:.0f} | {lg / r:.1f}x faster |",
            f"| runs/s, {plan.threads} threads at once, {plan.processes} worker processes, "
            f"one database | {pr:.0f} | {pl:.0f} | {pr / pl:.1f}x |",
            f"| runs/s, {plan.threads} threads at once, one process "
            f"| {rr:.0f} | {rl:.0f} | {rr / rl:.1f}x |",
            disk_row(disk, plan.turns),
        ]
    )


def disk_row(disk: dict[str, int | None], turns: int) -> str:
    ours, kept, theirs = disk["research_fsm"], disk["research_fsm keep=24"], disk["LangGraph"]
    assert ours and kept and theirs
    return (
        f"| disk after {turns} turns of one conversation (kB) | {ours / 1024:.0f} "
        f"(keep=24: {kept / 1024:.0f}) | {theirs / 1024:.0f} | 1/{theirs / ours:.1f} |"
    )


def disk_report(disk: dict[str, int | None], turns: int) -> str:
    """The Markdown table of ``disk_sizes``'s result alone (``--only disk``)."""
    header = "| metric | research_fsm | LangGraph AsyncPostgresSaver | ratio |\n| --- | --- | --- | --- |"
    return header + "\n" + disk_row(disk, turns)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres")
    parser.add_argument("--dsn", help="a superuser connection to a scratch server")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (4)")
    parser.add_argument("--only", choices=["disk"], help="run only this measure")
    args = parser.parse_args(argv)
    plan = replace(QUICK if args.quick else FULL, processes=args.processes)
    server = None
    dsn = args.dsn
    if dsn is None:
        server = throwaway_server()
        dsn = server.dsn
    try:
        conninfo_to_dict(dsn)
        dbs = Databases(dsn, shared=plan.shared)
        if args.only == "disk":
            disk = asyncio.run(disk_sizes(dbs, plan.turns, peer=True))
        else:
            result = asyncio.run(measure(dbs, plan))
    finally:
        if server is not None:
            server.stop()
    if args.only == "disk":
        print(disk_report(disk, plan.turns))
    else:
        print(report(result, plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
