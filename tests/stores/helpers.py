"""Helpers shared by the store tests (and the ``store`` fixtures in tests/conftest.py)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import CheckpointStore
from research_fsm.stores import open_store


def postgres_store(request: pytest.FixtureRequest, **kwargs: Any) -> CheckpointStore:
    """A PostgreSQL store on the session's server, in a schema of its own (empty)."""
    url, options = postgres_url(request)
    return open_store(url, **{**options, **kwargs})


def postgres_url(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """The session's server as a store URL, and the options giving a store there a
    schema of its own (empty)."""
    server = request.getfixturevalue("postgres_server")
    return server.url, {"schema": f"test_{secrets.token_hex(6)}", "pool_size": 4}


@dataclass(frozen=True)
class Opened:
    """How the ``store`` fixture opened a store: again with these, another store object
    over the same data (unless the data lives in the store object itself)."""

    url: str
    options: dict[str, Any]
    in_process: bool
    """The store keeps Python objects in this process: nothing is serialised, and the
    same data is only reachable through the same object (the memory store)."""


OPENED: dict[int, Opened] = {}
"""``id(store)`` -> how the ``store`` and ``make_store`` fixtures opened it."""


def reopen(store: CheckpointStore) -> CheckpointStore:
    """Another store object over the same data, as a fresh process would make (the same
    object for a store whose data lives in it)."""
    opened = OPENED[id(store)]
    return store if opened.in_process else open_store(opened.url, **opened.options)


def in_process(store: CheckpointStore) -> bool:
    """Whether a fixture's store keeps its states as Python objects (never serialised)."""
    return OPENED[id(store)].in_process


async def close_store(store: CheckpointStore) -> None:
    """Close what a store holds open (the Postgres store's connections)."""
    aclose = getattr(store, "aclose", None)
    if aclose is not None:
        await aclose()


def sql(server: Any, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on a PostgreSQL connection of its own (``server``: the test server
    or a DSN); its rows (if any)."""
    import psycopg  # the postgres extra: only the tests that use it need it

    dsn = server if isinstance(server, str) else server.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def segment_data(path: Path) -> bytes:
    """A segment's bytes without the zeros after its last line (a durable file store
    pads the file's last disk block with zeros: ``research_fsm.stores.file.append``)."""
    return path.read_bytes().rstrip(b"\0")
