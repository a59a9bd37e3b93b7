"""Figure 16: what the thread inspector opens: a thread of 10,000 checkpoints, and the
thread list of a store of 20,000 threads.

The thread: one thread of the benchmark graph answers a question, then grows by
``update_state`` calls (as figure 15's) to ``BIG`` checkpoints. Its first page is what
the inspector shows first: ``get_state`` and the newest ``PAGE`` snapshots of
``history``, read through a store opened afresh (as a new process would: no thread of
it cached), the median of ``READS``.

The list: ``THREADS`` threads saved straight into the store, one checkpoint each (a
quarter suspended, a tenth failed, every fifth a subgraph's child naming a parent), at
increasing times. Its first page is ``threads(limit=PAGE)`` on a store opened afresh
(the file store then reads its whole journal, ``.threads``), then the same page again
on that store ("warm"), the page after it by its cursor, and a filtered page
(``status="failed", children=False``). The goal of each first page: under
``GOAL_MS``. Stores: the JSON file store (``durability="none"`` to grow, read through
an ``"fsync"`` store: the files are the same) and PostgreSQL (a throwaway server, when
its binaries and the ``postgres`` extra are there; its listing statement's plan is in
the detail).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from research_fsm.engine import Checkpoint, CompiledGraph
from research_fsm.engine.store import SuspensionRecord, new_checkpoint_id
from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sizes,
    at_most,
    fmt,
    md_table,
    median,
    postgres_server,
    temp_dir,
    timed,
)
from ._graphs import build_rfsm, question_input

TITLE = "the inspector's first pages: a 10,000-checkpoint thread, a 20,000-thread list"
PAGE = 50
GOAL_MS = 200.0
FULL = {"big": 10_000, "threads": 20_000, "reads": 7}
QUICK = {"big": 300, "threads": 1_000, "reads": 3}
LABELS = {"file": "JsonFileCheckpointStore(fsync)", "postgres": "PostgresCheckpointStore"}


class Listed(BaseModel):
    """A listed thread's state (the list never reads it)."""

    topic: str = ""
    n: int = 0


def _update(i: int) -> dict[str, Any]:
    return {"conversation_summary": f"note {i}", "confidence_score": i % 100}


async def _grow_thread(app: CompiledGraph[Any], size: int) -> None:
    await app.run(question_input("happy"), thread_id="big")
    count = len([s async for s in app.history("big")])
    for i in range(count, size):
        await app.update_state("big", _update(i), as_node="synthesis")


def _listed_checkpoint(n: int) -> Checkpoint:
    """Thread ``n`` of the list: one checkpoint, saved at second ``n`` of the day."""
    status = "suspended" if n % 4 == 1 else "failed" if n % 10 == 3 else "completed"
    thread_id = f"user-{n // 5:05d}.child.{n:012x}" if n % 5 == 4 else f"user-{n:05d}"
    return Checkpoint(
        thread_id=thread_id,
        checkpoint_id=new_checkpoint_id(1),
        parent_id=None,
        seq=1,
        run_id=f"{n:016x}",
        step=1,
        status=status,  # type: ignore[arg-type]
        next=None,
        state=Listed(topic=f"thread {n}", n=n),
        created_at=f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000+00:00",
        suspension=SuspensionRecord(node="ask", payload={"q": n})
        if status == "suspended"
        else None,
        error=(
            {"node": "work", "exc_type": "KeyError", "message": "x"} if status == "failed" else None
        ),
        last_node="work",
        parent_thread_id=f"user-{n // 5:05d}" if n % 5 == 4 else None,
    )


async def _grow_list(store: Any, count: int) -> None:
    for first in range(0, count, 200):
        batch = [_listed_checkpoint(n) for n in range(first, min(first + 200, count))]
        await asyncio.gather(*(store.save(cp) for cp in batch))


async def _close(store: Any) -> None:
    close = getattr(store, "aclose", None)
    if close is not None:
        await close()


def _stores(kind: str, root: Path, dsn: str | None, schema: str) -> tuple[Any, Any]:
    """A store to grow and a fresh one to read (the same files or schema)."""
    if kind == "file":
        folder = root / schema
        return (
            JsonFileCheckpointStore(folder, durability="none"),
            lambda: JsonFileCheckpointStore(folder, durability="fsync"),
        )
    from research_fsm.stores.postgres import PostgresCheckpointStore

    assert dsn is not None
    return (
        PostgresCheckpointStore(dsn, schema=schema),
        lambda: PostgresCheckpointStore(dsn, schema=schema),
    )


async def _thread_page(kind: str, root: Path, dsn: str | None, size: int, reads: int) -> float:
    """Median ms to open the thread's first page through a fresh store."""
    grow, fresh = _stores(kind, root, dsn, "thread")
    try:
        await _grow_thread(build_rfsm(grow), size)
    finally:
        await _close(grow)
    times = []
    for _ in range(reads):
        store = fresh()
        try:
            app = build_rfsm(store)
            await store.load_latest("someone-else")  # connections open, no thread read
            with timed() as sample:
                snapshot = await app.get_state("big")
                page = [s async for s in app.history("big", limit=PAGE)]
            assert snapshot is not None and len(page) == PAGE
            assert page[0].checkpoint_id == snapshot.checkpoint_id
            times.append(sample.wall * 1e3)
        finally:
            await _close(store)
    return median(times)


async def _list_pages(
    kind: str, root: Path, dsn: str | None, count: int, reads: int
) -> tuple[dict[str, float], str]:
    """Median ms of each listing page, and the Postgres plan of the first (else "")."""
    grow, fresh = _stores(kind, root, dsn, "listing")
    try:
        await _grow_list(grow, count)
    finally:
        await _close(grow)
    newest = _listed_checkpoint(count - 1).thread_id
    out: dict[str, list[float]] = {"first": [], "warm": [], "second": [], "filtered": []}
    cpu: dict[str, list[float]] = {name: [] for name in out}
    for _ in range(reads):
        store = fresh()
        try:
            await store.load_latest("someone-else")  # connections open, nothing listed
            with timed() as first:
                page = await store.threads(limit=PAGE)
            assert len(page.threads) == PAGE and page.threads[0].thread_id == newest
            with timed() as warm:
                again = await store.threads(limit=PAGE)
            assert again == page
            with timed() as second:
                after = await store.threads(limit=PAGE, cursor=page.next_cursor)
            assert after.threads[0].updated_at <= page.threads[-1].updated_at
            with timed() as filtered:
                failed = await store.threads(limit=PAGE, status="failed", children=False)
            assert failed.threads and all(t.status == "failed" for t in failed.threads)
            for name, sample in (
                ("first", first),
                ("warm", warm),
                ("second", second),
                ("filtered", filtered),
            ):
                out[name].append(sample.wall * 1e3)
                cpu[name].append(sample.cpu * 1e3)
        finally:
            await _close(store)
    plan = await _plan(dsn) if kind == "postgres" else ""
    medians = {name: median(values) for name, values in out.items()}
    medians.update({f"{name}_cpu": median(values) for name, values in cpu.items()})
    return medians, plan


async def _plan(dsn: str | None) -> str:
    """EXPLAIN of the listing's statements on the grown schema: the first page, and the
    failed top-level threads after a cursor."""
    import psycopg

    from research_fsm.stores.postgres.schema import threads_statement

    assert dsn is not None
    after = {"after_time": "2026-01-01T02:00:00.000+00:00", "after_thread": "user-01440"}
    asked = [
        ((False, False, False, False), {"limit": PAGE + 1}),
        (
            (False, True, True, True),
            {"limit": PAGE + 1, "statuses": ["failed"], **after},
        ),
    ]
    plans = []
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = psycopg.AsyncClientCursor(conn)
        for filters, params in asked:
            statement = threads_statement("listing", filters).as_bytes(conn)
            await cur.execute(b"EXPLAIN " + statement, params)
            plans += [str(row[0]) for row in await cur.fetchall()]
    return "\n".join(plans)


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(16, TITLE)
    plan = QUICK if sizes.name == "quick" else FULL
    server, why = postgres_server()
    kinds = ["file"] + (["postgres"] if server is not None else [])
    if why is not None:
        fig.notes.append(f"PostgreSQL left out: {why}")
    thread_ms: dict[str, float] = {}
    list_ms: dict[str, dict[str, float]] = {}
    plans: dict[str, str] = {}
    try:
        with temp_dir("fig16") as root:
            for kind in kinds:
                dsn = None if server is None else server.dsn
                thread_ms[kind] = asyncio.run(
                    _thread_page(kind, root, dsn, plan["big"], plan["reads"])
                )
                list_ms[kind], plans[kind] = asyncio.run(
                    _list_pages(kind, root, dsn, plan["threads"], plan["reads"])
                )
    finally:
        if server is not None:
            server.stop()
    for kind in kinds:
        for metric, value in (
            (f"first page of a {plan['big']:,}-checkpoint thread", thread_ms[kind]),
            (f"first page of the list of {plan['threads']:,} threads", list_ms[kind]["first"]),
        ):
            holds, margin = at_most(value, GOAL_MS)
            fig.rows.append(
                Row(
                    metric=f"{metric}, {LABELS[kind]}",
                    unit="ms",
                    research_fsm=value,
                    goal=f"under {GOAL_MS:.0f} ms",
                    holds=holds,
                    margin=margin,
                )
            )
    fig.detail = {
        "page": PAGE,
        "plan": plan,
        "thread_page_ms": thread_ms,
        "list_page_ms": list_ms,
        "postgres_plan": plans.get("postgres", ""),
    }
    header = [
        "store",
        f"thread page ({plan['big']:,} cps)",
        "list: first page",
        "list: same page again",
        "list: next page (cursor)",
        "list: failed, top-level only",
    ]
    fig.detail_md = [
        f"ms, the median of {plan['reads']} reads, each through a store opened afresh; a "
        f"page is {PAGE} snapshots or threads. Wall (the goal's measure; a loaded machine "
        "makes it longer), and in parentheses this process's CPU (threads included; not "
        "the PostgreSQL server's).",
        "",
        *md_table(
            header,
            [
                [
                    LABELS[k],
                    fmt(thread_ms[k]),
                    *(
                        f"{fmt(list_ms[k][p])} ({fmt(list_ms[k][p + '_cpu'])})"
                        for p in ("first", "warm", "second", "filtered")
                    ),
                ]
                for k in kinds
            ],
        ),
    ]
    if plans.get("postgres"):
        fig.detail_md += ["", "PostgreSQL's plan of the first list page:", "", "```"]
        fig.detail_md += [*plans["postgres"].splitlines(), "```"]
    return fig
