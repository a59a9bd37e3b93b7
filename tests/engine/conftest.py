"""Fixtures shared by the engine tests: the one parametrised ``store`` fixture."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from research_fsm.engine import CheckpointStore, JsonFileCheckpointStore, MemoryCheckpointStore
from research_fsm.engine._fs import FileSystem

STORE_KINDS = ["memory", "file-none", "file-fsync", "file-flock", "postgres"]


def postgres_store(request: pytest.FixtureRequest, **kwargs: Any) -> CheckpointStore:
    """A PostgreSQL store on the session's server, in a schema of its own (empty)."""
    from research_fsm.stores.postgres import PostgresCheckpointStore

    server = request.getfixturevalue("postgres_server")
    schema = f"test_{secrets.token_hex(6)}"
    return PostgresCheckpointStore(server.dsn, schema=schema, pool_size=4, **kwargs)


async def close_store(store: CheckpointStore) -> None:
    """Close what a store holds open (the Postgres store's connections)."""
    aclose = getattr(store, "aclose", None)
    if aclose is not None:
        await aclose()


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    """Every store implementation: in memory, JSON files without and with fsync (and
    without, leasing with `flock` as where there are no range locks), PostgreSQL."""
    kind: str = request.param
    made: CheckpointStore
    if kind == "memory":
        made = MemoryCheckpointStore()
    elif kind == "postgres":
        made = postgres_store(request)
    else:
        durability: Literal["fsync", "none"] = "fsync" if kind == "file-fsync" else "none"
        fs = FileSystem(range_locks=False) if kind == "file-flock" else None
        made = JsonFileCheckpointStore(tmp_path / "store", durability=durability, fs=fs)
    yield made
    await close_store(made)


@pytest.fixture
async def make_store(
    store: CheckpointStore, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., CheckpointStore]]:
    """A factory for more stores of the same kind as ``store`` (each in its own directory)."""
    counter = itertools.count(1)
    made: list[CheckpointStore] = []

    def make(**kwargs: Any) -> CheckpointStore:
        new: CheckpointStore
        if isinstance(store, MemoryCheckpointStore):
            new = MemoryCheckpointStore(**kwargs)
        elif isinstance(store, JsonFileCheckpointStore):
            directory = tmp_path / f"store-{next(counter)}"
            fs = FileSystem(range_locks=store.fs.range_locks)
            new = JsonFileCheckpointStore(directory, durability=store.durability, fs=fs, **kwargs)
        else:
            new = postgres_store(request, **kwargs)
        made.append(new)
        return new

    yield make
    for new in made:
        await close_store(new)


@pytest.fixture
async def pg(postgres_server: Any) -> AsyncIterator[Callable[..., Any]]:
    """PostgreSQL stores on one fresh schema (as processes sharing a database would be);
    ``pg.schema`` names it."""
    from research_fsm.stores.postgres import PostgresCheckpointStore

    schema = f"test_{secrets.token_hex(6)}"
    made: list[PostgresCheckpointStore] = []

    def make(**kwargs: Any) -> PostgresCheckpointStore:
        kwargs.setdefault("schema", schema)
        made.append(PostgresCheckpointStore(postgres_server.dsn, **kwargs))
        return made[-1]

    make.schema = schema  # type: ignore[attr-defined]
    yield make
    for store in made:
        await store.aclose()


@pytest.fixture
def file_store(tmp_path: Path) -> JsonFileCheckpointStore:
    """A JSON file store for the tests that are about files on disk."""
    return JsonFileCheckpointStore(tmp_path / "store", durability="fsync")
