"""Runs/s of many threads spread over worker processes sharing one PostgreSQL database.

``runs_per_s(engine, dsn, threads, processes)`` starts ``processes`` worker
processes (``spawn``: each imports afresh and runs its own event loop and its own
connection pool of 10). Each worker builds its engine, warms its pool up, then
waits at a ``multiprocessing.Barrier``; all are released together and each runs
its share of the threads gathered at once. Runs/s is all threads over the span
from the first worker's start to the last worker's end (``time.monotonic``, one
clock for every process on Linux). The tables are made once, in the parent,
before the workers start (LangGraph's ``setup()`` is not safe to run in parallel).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from multiprocessing.synchronize import Barrier
from typing import Any

__all__ = ["runs_per_s", "setup_tables"]

_SCENARIO = "happy"
_POOL = 10
_TIMEOUT = 600.0


async def setup_tables(engine: str, dsn: str) -> None:
    """Create ``engine``'s tables in the database ``dsn`` reaches."""
    if engine == "research_fsm":
        from research_fsm.stores.postgres import PostgresCheckpointStore

        store = PostgresCheckpointStore(dsn, pool_size=1)
        await store.load_latest("warm-up")
        await store.aclose()
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()


async def _rfsm(dsn: str, threads: list[str], barrier: Barrier) -> tuple[float, float]:
    from research_fsm.stores.postgres import PostgresCheckpointStore

    from ._graphs import build_rfsm, question_input

    store = PostgresCheckpointStore(dsn, pool_size=_POOL)
    app = build_rfsm(store)
    try:
        await store.load_latest("warm-up")
        await _fill(store._pool)  # every connection open before the clock starts
        await asyncio.to_thread(barrier.wait, _TIMEOUT)
        start = time.monotonic()
        await asyncio.gather(*(app.run(question_input(_SCENARIO), thread_id=t) for t in threads))
        return start, time.monotonic()
    finally:
        await store.aclose()


async def _langgraph(dsn: str, threads: list[str], barrier: Barrier) -> tuple[float, float]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from ._graphs import build_langgraph, lg_config, lg_input

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(dsn, max_size=_POOL, kwargs=kwargs, open=False) as pool:
        app = build_langgraph(AsyncPostgresSaver(pool))  # type: ignore[arg-type]
        await _fill(pool)
        await asyncio.to_thread(barrier.wait, _TIMEOUT)
        start = time.monotonic()
        await asyncio.gather(
            *(app.ainvoke(lg_input(_SCENARIO), lg_config(t), durability="sync") for t in threads)
        )
        return start, time.monotonic()


async def _fill(pool: Any) -> None:
    """Open every connection of ``pool`` (as the one-process measure's warm pool has)."""
    if pool is None:
        return
    await pool.wait(timeout=60)

    async def hold() -> None:
        async with pool.connection() as conn:
            await conn.execute("SELECT 1")
            await asyncio.sleep(0.05)

    await asyncio.gather(*(hold() for _ in range(pool.max_size)))


def _worker(engine: str, dsn: str, threads: list[str], barrier: Barrier, out: Any) -> None:
    from ._common import quiet_logging

    quiet_logging()
    work = _rfsm if engine == "research_fsm" else _langgraph
    try:
        out.put(("ok", asyncio.run(work(dsn, threads, barrier))))
    except BaseException as exc:
        barrier.abort()
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def runs_per_s(engine: str, dsn: str, threads: list[str], processes: int) -> float:
    """Runs per second of one run on each of ``threads``, split over ``processes`` workers."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    out = ctx.Queue()
    shares = [threads[i::processes] for i in range(processes)]
    workers = [
        ctx.Process(target=_worker, args=(engine, dsn, share, barrier, out)) for share in shares
    ]
    for w in workers:
        w.start()
    try:
        results = [out.get(timeout=_TIMEOUT) for _ in workers]
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
    errors = [detail for status, detail in results if status != "ok"]
    if errors:
        raise RuntimeError(f"{engine} worker failed: {errors[0]}")
    spans = [detail for _, detail in results]
    return len(threads) / (max(end for _, end in spans) - min(start for start, _ in spans))
