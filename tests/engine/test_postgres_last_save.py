"""A run's last save ends its lease in the same round trip (PostgreSQL store)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from research_fsm.engine import ThreadBusy

from .helpers import Ask, ask_graph, chain

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores import _pgleases  # noqa: E402
from research_fsm.stores.postgres import PostgresCheckpointStore  # noqa: E402

Make = Callable[[], PostgresCheckpointStore]


@pytest.fixture
async def stores(postgres_server: Any) -> AsyncIterator[Make]:
    """Stores on one fresh schema, closed afterwards."""
    schema = f"last_{secrets.token_hex(6)}"
    made: list[PostgresCheckpointStore] = []

    def make() -> PostgresCheckpointStore:
        made.append(PostgresCheckpointStore(postgres_server.dsn, schema=schema))
        return made[-1]

    yield make
    for store in made:
        await store.aclose()


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
    stores: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the run reaches END the thread is free before release() is even called."""
    mine, other, third = stores(), stores(), stores()
    app = chain("a", "b", store=mine)
    await mine._open()
    probe = Probe(monkeypatch, other, third)
    assert 2 == (await app.run({}, thread_id="t")).state.n
    assert 4 == (await app.run({}, thread_id="t")).state.n
    assert [True, True] == probe.taken_before_release
    assert [True, True] == probe.busy_after_release
    assert [4, 3, 2, 2, 1, 0] == [s.state.n async for s in app.history("t")]


async def test_a_suspended_runs_lease_ends_with_its_last_save(
    stores: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suspension is a run's last save too; the resume then runs once, from it."""
    mine, other, third = stores(), stores(), stores()
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
    stores: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the combined statement fails, the save goes the usual way and release() unlocks."""
    mine, other = stores(), stores()
    app = chain("a", "b", store=mine)
    calls: list[int] = []

    async def refuse(self: Any, conn: Any, finals: list[Any]) -> list[BaseException]:
        calls.append(len(finals))
        return [psycopg.errors.SerializationFailure("injected") for _ in finals]

    monkeypatch.setattr(_pgleases._Shard, "_save_then_unlock", refuse)
    assert 2 == (await app.run({}, thread_id="t")).state.n
    assert [1] == calls
    await (await other.acquire("t")).release()  # the usual release freed it
    snapshot = await chain("a", "b", store=other).get_state("t")
    assert snapshot is not None
    assert ("completed", 2) == (snapshot.status, snapshot.state.n)


async def test_last_saves_of_many_runs_share_lease_round_trips(
    postgres_server: Any, stores: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs ending together send their last saves together; every thread ends right."""
    store = PostgresCheckpointStore(
        postgres_server.dsn, schema=f"many_{secrets.token_hex(6)}", lease_connections=1
    )
    sizes: list[int] = []
    original = _pgleases._Shard._save_then_unlock

    async def counted(self: Any, conn: Any, finals: list[Any]) -> Any:
        sizes.append(len(finals))
        return await original(self, conn, finals)

    monkeypatch.setattr(_pgleases._Shard, "_save_then_unlock", counted)
    try:
        app = chain("a", "b", store=store)
        threads = [f"t{i}" for i in range(60)]
        for _ in range(2):
            results = await asyncio.gather(*(app.run({}, thread_id=t) for t in threads))
        assert [4] * 60 == [r.state.n for r in results]
        assert 120 == sum(sizes)
        assert max(sizes) > 1
        other = stores()
        for t in threads:  # every lease ended
            await (await other.acquire(t)).release()
    finally:
        await store.aclose()
