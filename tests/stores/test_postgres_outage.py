"""The PostgreSQL store when its server is down at first use, and once it is back."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest
from engine.helpers import Counter, chain
from servers.postgres import PostgresServer

from research_fsm.engine import Checkpoint, EngineError, StoreWriteError

pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore, StoreUnavailable

CALLERS = 4
"""Concurrent callers of each kind."""


def first_checkpoint(thread_id: str) -> Checkpoint:
    """The first checkpoint of a new thread, as the engine would save it."""
    return Checkpoint(
        thread_id=thread_id,
        checkpoint_id=secrets.token_hex(12),
        parent_id=None,
        seq=1,
        run_id="r",
        step=0,
        status="running",
        next="a",
        state=Counter(),
        created_at="2024-01-01T00:00:00.000+00:00",
    )


def test_store_unavailable_is_an_engine_error_and_a_connection_error() -> None:
    """StoreUnavailable shares the engine's root error and stays a ConnectionError."""
    assert (True, True) == (
        issubclass(StoreUnavailable, EngineError),
        issubclass(StoreUnavailable, ConnectionError),
    )


async def test_first_use_during_an_outage_by_many_calls_is_store_unavailable_then_works(
    own_server: PostgresServer,
) -> None:
    """Server down at first use: concurrent runs, get_state, history and store calls all raise StoreUnavailable; once the server is back the same store works."""
    store = PostgresCheckpointStore(own_server.dsn, schema="outage", pool_size=2)
    app = chain("a", "b", store=store)
    own_server.halt()
    try:

        async def history(thread_id: str) -> list[Any]:
            return [snapshot async for snapshot in app.history(thread_id)]

        calls = [
            *(app.run({}, thread_id=f"run-{i}") for i in range(CALLERS)),
            *(app.get_state(f"state-{i}") for i in range(CALLERS)),
            *(history(f"history-{i}") for i in range(CALLERS)),
            *(store.acquire(f"acquire-{i}") for i in range(CALLERS)),
            *(store.load_latest(f"load-{i}") for i in range(CALLERS)),
        ]
        saves = [store.save(first_checkpoint(f"save-{i}")) for i in range(CALLERS)]
        outcomes = await asyncio.gather(*calls, *saves, return_exceptions=True)
        assert [StoreUnavailable.__name__] * len(calls) == [
            type(outcome).__name__ for outcome in outcomes[: len(calls)]
        ]
        # a save says it wrote nothing (StoreWriteError), because the store was unavailable
        assert [(StoreWriteError.__name__, StoreUnavailable.__name__)] * len(saves) == [
            (type(outcome).__name__, type(getattr(outcome, "cause", None)).__name__)
            for outcome in outcomes[len(calls) :]
        ]
    finally:
        own_server.restart()
    try:
        assert 2 == (await app.run({}, thread_id="run-0")).state.n
        snapshot = await app.get_state("run-0")
        assert snapshot is not None
        assert ("completed", 2) == (snapshot.status, snapshot.state.n)
        assert 3 == len([s async for s in app.history("run-0")])
        await store.save(first_checkpoint("save-0"))
        latest = await store.load_latest("save-0")
        assert latest is not None
        assert (1, "a") == (latest.seq, latest.next)
    finally:
        await store.aclose()
