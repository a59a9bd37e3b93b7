"""What the PostgreSQL store's modules share: a cursor kept per connection, the row and
statement types, and the store's connection error."""

from __future__ import annotations

import weakref
from typing import Any

import psycopg

from research_fsm.engine import EngineError

__all__ = ["Rows", "Statement", "StoreUnavailable", "client_cursor", "cursor"]

Rows = list[tuple[Any, ...]]
Statement = tuple[bytes, dict[str, Any]]
"""A statement and its named parameters."""


_CURSORS: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], psycopg.AsyncCursor[Any]]
_CURSORS = weakref.WeakKeyDictionary()


def cursor(conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncCursor[Any]:
    """A cursor kept for ``conn`` (one object less per statement), with binary results
    (a bytea body comes as its bytes, not hex to decode). One statement at a time."""
    cur = _CURSORS.get(conn)
    if cur is None or cur.closed:
        cur = _CURSORS[conn] = conn.cursor(binary=True)
    return cur


_CLIENT_CURSORS: weakref.WeakKeyDictionary[
    psycopg.AsyncConnection[Any], psycopg.AsyncClientCursor[Any]
] = weakref.WeakKeyDictionary()


def client_cursor(conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncClientCursor[Any]:
    """A client-side-binding cursor kept for ``conn``: it quotes parameters itself
    (``mogrify``) and sends a query without them as it is, with the simple query protocol,
    so one query may hold several statements (text results). One query at a time."""
    cur = _CLIENT_CURSORS.get(conn)
    if cur is None or cur.closed:
        cur = _CLIENT_CURSORS[conn] = psycopg.AsyncClientCursor(conn)
    return cur


class StoreUnavailable(EngineError, ConnectionError):
    """The PostgreSQL server could not be reached or refused the store's request."""

    def __init__(self, thread_id: str | None, action: str, cause: BaseException) -> None:
        self.thread_id = thread_id
        subject = f" for thread `{thread_id}`" if thread_id else ""
        detail = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        super().__init__(f"PostgreSQL store could not {action}{subject}: {detail}")
