"""The connections of ``PostgresCheckpointStore``: its pool, its leases and its round trips.

``Connections`` is the store's base: the pool (made from ``dsn`` or given), opened
and the tables migrated on first use in an event loop; the lease connections
(``leases``); the statements rendered to bytes once; ``_run`` for one round
trip on a pooled connection; and the save round trips of threads without a lease
here (a leased thread's go on its lease connection), shared by the saves that
wait for a connection (``batch``): their statements go in one pipeline, which
is one implicit transaction, so they commit together and each ``save`` returns
once that commit is done. A batch whose statement fails is tried again one save
at a time, so each save gets its own outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from research_fsm.engine import StoreWriteError

from .batch import Batcher, complete
from .common import Rows, StoreUnavailable, cursor
from .leases import LeaseManager
from .schema import Statements, migrate

__all__ = ["Connections", "safe_dsn"]

T = TypeVar("T")
_SAVES_PER_TRIP = 64  # saves sharing one round trip and commit, at most


class Connections:
    """The pool, lease connections and statements of one store (see the module doc)."""

    def __init__(
        self,
        dsn: str | None,
        pool: AsyncConnectionPool[Any] | None,
        lease_dsn: str | None,
        schema: str,
        pool_size: int,
        lease_connections: int,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise ValueError("give PostgresCheckpointStore either dsn= or pool=")
        if pool_size < 1 or lease_connections < 1:
            raise ValueError("pool_size and lease_connections must be >= 1")
        self.schema = schema
        self._dsn = dsn
        given = pool.conninfo if pool is not None else ""
        if not isinstance(given, str):
            given = ""
        self._lease_dsn: str = lease_dsn or dsn or given
        if not self._lease_dsn:
            raise ValueError("a pool with a conninfo callable needs lease_dsn= for the leases")
        self._given_pool = pool
        self._pool: AsyncConnectionPool[Any] | None = pool
        self._pool_size = pool_size
        self._sql = Statements.for_schema(schema)
        self._shards = lease_connections
        self._leases = self._lease_manager()
        self._saves = self._save_batcher()
        self._queries: dict[str, bytes] = {}  # the statements run, rendered once
        self._rendered: dict[str, bytes] = {}  # every statement, rendered once
        self._peeked: dict[str, Rows] = {}  # rows read while taking a lease, for load_latest
        self._ready: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _lease_connection(self) -> AsyncConnection[Any]:
        conn = await AsyncConnection.connect(
            self._lease_dsn, autocommit=True, prepare_threshold=None
        )
        # A read after a lock must see every commit before it: with a role's or database's
        # default of repeatable read its snapshot would predate the lock.
        await conn.execute("SET default_transaction_isolation = 'read committed'")
        return conn

    def _lease_manager(self) -> LeaseManager:
        return LeaseManager(self._lease_connection, self.schema, self._shards, self._forget)

    def _save_batcher(self) -> Batcher[dict[str, Any], Any]:
        width = self._given_pool.max_size if self._given_pool is not None else self._pool_size
        return Batcher(self._save_trip, width=width, most=_SAVES_PER_TRIP)

    def _forget(self, thread_id: str) -> None:
        self._peeked.pop(thread_id, None)

    async def _open(self) -> AsyncConnectionPool[Any]:
        """The pool, opened (and the tables migrated) on first use in this event loop."""
        ready, pool = self._ready, self._pool
        if (
            ready is not None
            and pool is not None
            and ready.done()
            and not ready.cancelled()
            and ready.exception() is None
            and self._loop is asyncio.get_running_loop()
        ):
            return pool
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                raise RuntimeError(
                    "a PostgresCheckpointStore serves the event loop it was first used in; "
                    "make one store per event loop (or aclose() it first)"
                )
            self._loop, self._ready = loop, None
            self._pool = self._given_pool
            # the old loop's lease connections (and their locks) cannot serve this one
            self._leases, self._saves = self._lease_manager(), self._save_batcher()
            self._peeked.clear()
        if self._ready is None:
            self._ready = loop.create_task(self._start())
        ready = self._ready  # (a caller that fails first may set ``_ready`` to None)
        try:
            await asyncio.shield(ready)
        except BaseException as exc:
            if ready.done() and self._ready is ready:
                self._ready = None  # failed: try again on the next call
            if isinstance(exc, psycopg.Error | OSError | TimeoutError):
                raise StoreUnavailable(None, "connect to the database", exc) from exc
            raise
        assert self._pool is not None
        return self._pool

    async def _start(self) -> None:
        if self._pool is not None:  # given: migrate on one of its connections
            async with self._pool.connection(timeout=30) as conn:
                self._use(_render(self._sql, conn), await migrate(conn, self.schema))
            return
        # One direct connection first: a wrong DSN fails at once with libpq's reason
        # (a pool would retry it until its timeout).
        dsn = self._dsn or ""
        async with await AsyncConnection.connect(
            dsn, autocommit=True, prepare_threshold=None
        ) as conn:
            self._use(_render(self._sql, conn), await migrate(conn, self.schema))
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            dsn,
            min_size=1,
            max_size=self._pool_size,
            kwargs={"autocommit": True, "prepare_threshold": None},
            open=False,
        )
        await pool.open(wait=False)
        self._pool = pool

    def _use(self, queries: dict[str, bytes], functions: bool) -> None:
        """Take the rendered statements; with the schema's ``functions``, saves and lease
        round trips call them (``schema``)."""
        self._rendered = queries
        self._queries = dict(queries)
        if functions:
            self._queries["save"] = self._queries["save_pruning"] = queries["save_call"]
        self._leases.use(queries["load_latest"], queries["leases_call"] if functions else None)

    async def _run(
        self,
        thread_id: str | None,
        action: str,
        work: Callable[[AsyncConnection[Any]], Awaitable[T]],
    ) -> T:
        """``work`` on a pooled connection, once more on a fresh one if the first was dead.

        Runs to the end even when cancelled (the cancellation is re-raised after), so
        no connection goes back to the pool halfway through a round trip.
        """
        try:
            result, cancelled = await complete(self._attempts(work))
        except (psycopg.Error, OSError, TimeoutError) as exc:
            if isinstance(exc, StoreWriteError):
                raise
            cause = _cause(exc)
            raise StoreUnavailable(thread_id, action, cause) from cause
        if cancelled:
            raise asyncio.CancelledError
        return result

    async def _attempts(self, work: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        pool = await self._open()
        try:
            async with pool.connection() as conn:
                return await work(conn)
        except psycopg.OperationalError:
            # A connection dropped between runs (server restart, idle kill): the pool
            # replaces it; one more try on a fresh connection.
            await pool.check()
            async with pool.connection() as conn:
                return await work(conn)

    async def _save_trip(self, batch: list[dict[str, Any]]) -> list[Any]:
        """One round trip for ``batch`` (saves of different threads): each one's row,
        or the ``StoreUnavailable`` it raised."""

        async def write(conn: AsyncConnection[Any]) -> list[Any]:
            if len(batch) == 1:
                cur = await cursor(conn).execute(self._save_query(batch[0]), batch[0])
                return [await cur.fetchone()]
            async with conn.pipeline():  # one implicit transaction: one commit for all
                cursors = [conn.cursor(binary=True) for _ in batch]
                for cur, params in zip(cursors, batch, strict=True):
                    await cur.execute(self._save_query(params), params)
            return [await cur.fetchone() for cur in cursors]

        try:
            return await self._attempts(write)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            if len(batch) > 1 and not isinstance(exc, psycopg.OperationalError | OSError):
                # One statement failed and took the transaction with it: each alone.
                return [(await self._save_trip([params]))[0] for params in batch]
            return [_unavailable(params["thread"], exc) for params in batch]

    def _save_query(self, params: dict[str, Any]) -> bytes:
        """The statement that saves ``params``: the pruning one only for a save that prunes."""
        return self._queries["save_pruning" if params["prune"] else "save"]

    async def _submit_save(self, thread_id: str, params: dict[str, Any]) -> tuple[Any, bool]:
        """Save ``params`` in the next round trip with room; its row, and whether the
        caller was cancelled meanwhile (the save went on to its end)."""
        await self._open_for(thread_id, "save a checkpoint")
        return await complete(self._saves.submit(thread_id, params))

    async def _open_for(self, thread_id: str, action: str) -> None:
        """``_open``, its ``StoreUnavailable`` naming ``thread_id`` and ``action``."""
        try:
            await self._open()
        except StoreUnavailable as exc:
            cause = _cause(exc)
            raise StoreUnavailable(thread_id, action, cause) from cause

    async def aclose(self) -> None:
        """Close the lease connections (ending every lease) and the pool the store made."""
        await self._leases.close()
        await self._saves.close()
        pool, self._pool = self._pool, self._given_pool
        if pool is not None and pool is not self._given_pool:
            await pool.close()
        self._ready, self._loop = None, None


def _unavailable(thread_id: str, cause: BaseException) -> StoreUnavailable:
    cause = _cause(cause)
    failure = StoreUnavailable(thread_id, "save a checkpoint", cause)
    failure.__cause__ = cause
    return failure


def _cause(exc: BaseException) -> BaseException:
    """What failed: the driver's error under a ``StoreUnavailable`` (of ``_open``)."""
    if isinstance(exc, StoreUnavailable) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def _render(statements: Statements, conn: AsyncConnection[Any]) -> dict[str, bytes]:
    """Each statement as the bytes sent (not composed again on every call)."""
    return {f.name: getattr(statements, f.name).as_bytes(conn) for f in fields(statements)}


def safe_dsn(dsn: str) -> str:
    """``dsn`` without its password, for reprs and messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "<unparsable dsn>"
    if "password" in parts:
        parts["password"] = "***"
    return make_conninfo(**{k: str(v) for k, v in parts.items()})
