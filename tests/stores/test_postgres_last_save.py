"""A run's last save ends its lease in the same round trip (PostgreSQL store)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from engine.helpers import Ask, ask_graph, chain

from research_fsm.engine import ThreadBusy

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore  # noqa: E402
from research_fsm.stores.postgres import leases as _pgleases  # noqa: E402

Make = Callable[[], PostgresCheckpointStore]


class Probe:
    """Wraps ``PgLease.release``: before the engine's release runs, another store takes
    the thread (only possible if the last save already ended the lease); after it, a
    third store must still find the thread busy (the release let nobody else's go)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, other: Any, third: Any) -> None:
        self.taken_before_release: list[bool] = []
        self.busy_after_release: list[bool] = []
        original = _pgleases.PgLease.release

        async def release(lease: _pgleases.PgLease) -> None:
            try:
                theirs = await other.acquire(lease._thread_id)
            except ThreadBusy:
                self.taken_before_release.append(False)
                await original(lease)
                return
            self.taken_before_release.append(True)
            await original(lease)
            try:
                await (await third.acquire(lease._thread_id)).release()
                self.busy_after_release.append(False)
            except ThreadBusy:
                self.busy_after_release.append(True)
            await original(theirs)

        monkeypatch.setattr(_pgleases.PgLease, "release", release)


async def test_a_completed_runs_lease_ends_with_its_last_save(
    pg: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the run reaches END the thread is free before release() is even called."""
    mine, other, third = pg(), pg(), pg()
    app = chain("a", "b", store=mine)
    await mine._open()
    probe = Probe(monkeypatch, other, third)
    assert 2 == (await app.run({}, thread_id="t")).state.n
    assert 4 == (await app.run({}, thread_id="t")).state.n
    assert [True, True] == probe.taken_before_release
    assert [True, True] == probe.busy_after_release
    assert [4, 3, 2, 2, 1, 0] == [s.state.n async for s in app.history("t")]


async def test_a_suspended_runs_lease_ends_with_its_last_save(
    pg: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suspension is a run's last save too; the resume then runs once, from it."""
    mine, other, third = pg(), pg(), pg()
    ask = Ask()
    app = ask_graph(ask, store=mine)
    await mine._open()
    probe = Probe(monkeypatch, other, third)
    paused = await app.run({}, thread_id="t")
    assert paused.suspension is not None
    done = await app.resume(paused.suspension.token, "Ada")
    assert ["answer:Ada", "after"] == done.state.log[-2:]
    assert [True, True] == probe.taken_before_release
    assert (1, 1) == (ask.run_calls, ask.resume_calls)


async def test_a_failing_last_save_statement_falls_back_and_still_releases(
    pg: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the combined statement fails, the save goes the usual way and release() unlocks."""
    mine, other = pg(), pg()
    app = chain("a", "b", store=mine)
    calls: list[int] = []

    async def refuse(conn: Any, finals: list[Any], held: set[int]) -> list[BaseException]:
        calls.append(len(finals))
        return [psycopg.errors.SerializationFailure("injected") for _ in finals]

    monkeypatch.setattr(_pgleases, "save_then_unlock", refuse)
    assert 2 == (await app.run({}, thread_id="t")).state.n
    assert [1] == calls
    await (await other.acquire("t")).release()  # the usual release freed it
    snapshot = await chain("a", "b", store=other).get_state("t")
    assert snapshot is not None
    assert ("completed", 2) == (snapshot.status, snapshot.state.n)


async def test_a_run_cancelled_while_its_last_save_falls_back_is_still_cancelled(
    pg: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cancelled during a slow, failing combined save is cancelled; the save itself
    still lands. (Cancelled once the combined save has started, not after a fixed time: on
    a loaded machine a fixed timeout can fire before the run gets that far.)"""
    mine, other = pg(), pg()
    app = chain("a", "b", store=mine)
    started = asyncio.Event()

    async def slow_refusal(conn: Any, finals: list[Any], held: set[int]) -> list[BaseException]:
        started.set()
        await asyncio.sleep(0.3)
        return [psycopg.errors.SerializationFailure("injected") for _ in finals]

    monkeypatch.setattr(_pgleases, "save_then_unlock", slow_refusal)
    run = asyncio.create_task(app.run({}, thread_id="t"))
    await asyncio.wait_for(started.wait(), 30)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await (await other.acquire("t")).release()
    snapshot = await chain("a", "b", store=other).get_state("t")
    assert snapshot is not None
    assert ("completed", 2) == (snapshot.status, snapshot.state.n)


async def test_a_blocked_last_save_gives_way_and_keeps_the_other_leases(
    postgres_server: Any,
) -> None:
    """A last save stuck on a row lock is cancelled after LAST_SAVE_MS and goes the usual
    way: the lease connection is not closed (its other leases hold), and lease requests
    behind it wait that long at most."""
    schema = f"blk_{secrets.token_hex(6)}"
    mine = PostgresCheckpointStore(postgres_server.dsn, schema=schema, lease_connections=1)
    other = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    try:
        held = await mine.acquire("x")
        app = chain("a", store=mine)
        await mine._open()
        blocker = await psycopg.AsyncConnection.connect(postgres_server.dsn)
        await blocker.execute(  # an uncommitted row where y's last save (seq 2) goes
            f"INSERT INTO {mine.schema}.research_fsm_checkpoints "
            "(thread_id, seq, checkpoint_id, full_row, body) VALUES ('y', 2, '', false, '')"
        )
        run = asyncio.ensure_future(app.run({}, thread_id="y"))
        await asyncio.sleep(0.05)  # y's last save is waiting on the row lock now
        started = asyncio.get_running_loop().time()
        await (await mine.acquire("z")).release()
        waited = asyncio.get_running_loop().time() - started
        with pytest.raises(ThreadBusy):
            await other.acquire("x")
        await asyncio.sleep(0.2)
        with pytest.raises(ThreadBusy):
            await other.acquire("x")
        assert not run.done()  # the usual save waits for the blocker
        await blocker.rollback()
        await blocker.close()
        assert 1 == (await run).state.n
        assert waited < 0.5
        await held.release()
        await (await other.acquire("x")).release()
        await (await other.acquire("y")).release()
    finally:
        await mine.aclose()
        await other.aclose()


async def test_last_saves_of_runs_ending_together_are_all_saved(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs ending together: a last save goes with the unlock only on an idle lease
    connection (one at a time), the others the usual way; every thread ends right."""
    schema = f"many_{secrets.token_hex(6)}"
    store = PostgresCheckpointStore(postgres_server.dsn, schema=schema, lease_connections=1)
    other = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    sizes: list[int] = []
    original = _pgleases.save_then_unlock

    async def counted(conn: Any, finals: list[Any], held: set[int]) -> Any:
        sizes.append(len(finals))
        return await original(conn, finals, held)

    monkeypatch.setattr(_pgleases, "save_then_unlock", counted)
    try:
        app = chain("a", "b", store=store)
        threads = [f"t{i}" for i in range(60)]
        for _ in range(2):
            results = await asyncio.gather(*(app.run({}, thread_id=t) for t in threads))
        assert [4] * 60 == [r.state.n for r in results]
        assert sizes and {1} == set(sizes)
        for t in threads:  # every lease ended
            await (await other.acquire(t)).release()
    finally:
        await store.aclose()
        await other.aclose()
