"""The PostgreSQL store's shared round trips: leases taken and released together, the rows
read with a lease, and saves that commit together."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from engine.helpers import chain

from research_fsm.engine import ThreadBusy

from .helpers import sql
from .test_postgres import Make

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore, StoreUnavailable  # noqa: E402


def held(postgres_server: Any, store: PostgresCheckpointStore, threads: list[str]) -> list[str]:
    """Which of ``threads`` have their advisory lock held on the server (by anyone)."""
    rows = sql(
        postgres_server,
        "SELECT classid::bigint, objid::bigint FROM pg_locks "
        "WHERE locktype = 'advisory' AND objsubid = 1 AND granted",
    )
    locked = {(high << 32) | low for high, low in rows}
    return [t for t in threads if store._leases.key(t) & (2**64 - 1) in locked]


async def take(store: PostgresCheckpointStore, thread_id: str) -> Any:
    """The thread's lease, or ``None`` when it is busy."""
    try:
        return await store.acquire(thread_id)
    except ThreadBusy:
        return None


async def test_two_stores_asking_together_get_one_lease_per_thread(
    pg: Make,
    postgres_server: Any,
) -> None:
    """Forty threads asked for at once by two stores: each thread is leased by exactly one."""
    mine, theirs = pg(), pg()
    threads = [f"t{i}" for i in range(40)]
    got = await asyncio.gather(*(take(s, t) for t in threads for s in (mine, theirs)))
    pairs = [got[i : i + 2] for i in range(0, len(got), 2)]
    assert [1] * 40 == [sum(lease is not None for lease in pair) for pair in pairs]
    assert threads == held(postgres_server, mine, threads)
    await asyncio.gather(*(lease.release() for lease in got if lease is not None))
    assert [] == held(postgres_server, mine, threads)


async def test_leases_released_together_are_free_for_another_store_at_once(
    pg: Make,
    postgres_server: Any,
) -> None:
    """Thirty runs release in shared round trips; another store then takes every thread at once."""
    mine, theirs = pg(), pg()
    app = chain("a", "b", store=mine)
    threads = [f"t{i}" for i in range(30)]
    trips: list[int] = []
    await mine.load_latest("warm-up")  # the store's connections for this event loop
    for shard in mine._leases._shards:
        original = shard._batcher._trip

        async def counted(requests: list[Any], original: Any = original) -> list[Any]:
            trips.append(len(requests))
            return list(await original(requests))

        shard._batcher._trip = counted  # type: ignore[method-assign]
    results = await asyncio.gather(*(app.run({}, thread_id=t) for t in threads))
    assert [2] * 30 == [r.state.n for r in results]
    assert len(trips) < 60  # 30 locks and 30 unlocks, fewer round trips
    leases = await asyncio.gather(*(theirs.acquire(t) for t in threads))
    assert threads == held(postgres_server, theirs, threads)
    await asyncio.gather(*(lease.release() for lease in leases))


async def test_leases_taken_together_end_with_their_connection(
    pg: Make,
    postgres_server: Any,
) -> None:
    """Twenty leases taken in shared round trips end when the holder's connections die."""
    mine, theirs = pg(), pg()
    threads = [f"t{i}" for i in range(20)]
    leases = await asyncio.gather(*(mine.acquire(t) for t in threads))
    sql(
        postgres_server,
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
        "AND pid <> pg_backend_pid()",
    )
    deadline = asyncio.get_running_loop().time() + 5
    while held(postgres_server, theirs, threads):
        assert asyncio.get_running_loop().time() < deadline, "leases still held 5 s later"
        await asyncio.sleep(0.01)
    taken = await asyncio.gather(*(theirs.acquire(t) for t in threads))
    await asyncio.gather(*(lease.release() for lease in taken + leases))


async def test_a_cancelled_acquire_leaves_no_lock_behind(
    pg: Make,
    postgres_server: Any,
) -> None:
    """An acquire cancelled while its round trip is in flight unlocks what it took."""
    mine, theirs = pg(), pg()
    await mine.load_latest("warm-up")
    asking = asyncio.ensure_future(mine.acquire("t"))
    await asyncio.sleep(0)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert [] == held(postgres_server, mine, ["t"])
    await (await theirs.acquire("t")).release()


async def test_taking_a_lease_reads_what_the_last_holder_saved(pg: Make) -> None:
    """The lease's read is the last holder's save, and load_latest then needs no round trip."""
    app = chain("a", "b", store=pg())
    await app.run({}, thread_id="t")
    reader = pg()
    lease = await reader.acquire("t")

    async def no_round_trip(*args: Any) -> Any:
        raise AssertionError("load_latest went to the database")

    reader._run = no_round_trip  # type: ignore[method-assign]
    latest = await reader.load_latest("t")
    assert latest is not None
    assert (3, 2) == (latest.seq, latest.state["n"])
    await lease.release()


async def test_the_rows_read_with_a_lease_go_when_it_ends(pg: Make) -> None:
    """Rows read with a lease are dropped when it ends: a later load sees another store's save."""
    reader, writer = pg(), pg()
    app = chain("a", store=writer)
    await app.run({}, thread_id="t")
    await (await reader.acquire("t")).release()
    await app.run({}, thread_id="t")
    latest = await reader.load_latest("t")
    assert latest is not None
    assert 2 == latest.state["n"]


async def test_saves_waiting_for_a_connection_commit_together(
    pg: Make,
    postgres_server: Any,
) -> None:
    """Thirty runs on one pool connection: saves share commits, and every checkpoint is there."""
    store = pg(pool_size=1)
    app = chain("a", "b", "c", store=store)
    threads = [f"t{i}" for i in range(30)]
    results = await asyncio.gather(*(app.run({}, thread_id=t) for t in threads))
    assert [3] * 30 == [r.state.n for r in results]
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    rows, transactions = sql(
        postgres_server, f"SELECT count(*), count(DISTINCT xmin::text) FROM {table}"
    )[0]
    assert 120 == rows
    assert transactions < rows
    fresh = pg()
    assert [4] * 30 == [len([c async for c in fresh.history(t)]) for t in threads]


async def test_a_save_that_fails_in_a_shared_round_trip_fails_alone(
    pg: Make,
    postgres_server: Any,
) -> None:
    """A save the server refuses in a shared round trip fails alone; the others are saved."""
    store = pg()
    await store.load_latest("warm-up")

    def params(thread: str, seq: int) -> dict[str, Any]:
        return {
            "thread": thread,
            "seq": seq,
            "id": f"{thread}-{seq}",
            "parent": None,
            "full": True,
            "body": b"{}",
            "prune": False,
            "below": None,
            "oldest_kept": 1,
            "cid": f"{thread}-{seq}",
            "status": "running",
            "node": "a",
            "updated": "2024-01-01T00:00:00.000+00:00",
            "pthread": None,
        }

    outcomes = await store._save_trip([params("a", 1), params("b", 2**63), params("c", 1)])
    assert [True, False, True] == [not isinstance(o, Exception) and o[0] for o in outcomes]
    assert isinstance(outcomes[1], StoreUnavailable)
    assert "for thread `b`" in str(outcomes[1])
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    assert [("a",), ("c",)] == sql(postgres_server, f"SELECT thread_id FROM {table} ORDER BY 1")
