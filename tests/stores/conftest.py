"""Fixtures of the store tests: PostgreSQL stores sharing a schema, a durable file store.
(The ``store`` fixture every store runs the engine tests with is in tests/conftest.py.)"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from research_fsm.stores import JsonFileCheckpointStore


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
