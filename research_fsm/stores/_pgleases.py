"""Leases for ``PostgresCheckpointStore``: session advisory locks on a few held connections.

A lease is ``pg_try_advisory_lock(key)`` on one of the store's lease connections
(the key is a 64-bit hash of the schema and thread id; ``key % connections``
picks the connection). One connection holds many locks, so a thousand leased
threads need no thousand connections. Postgres releases a session's locks when
its connection ends, so a lease ends with the process that holds it, on any
machine (the server sees the socket close at once when a process is killed;
a machine that vanishes is noticed by TCP keepalive). Locks are session state:
these connections must reach Postgres directly (or through a session-mode
pooler), never through PgBouncer in transaction mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import psycopg
import structlog

from research_fsm.engine import ThreadBusy

__all__ = ["LeaseManager", "PgLease", "StoreUnavailable", "complete"]

_log = structlog.get_logger("research_fsm.stores.postgres")
T = TypeVar("T")

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]


class StoreUnavailable(ConnectionError):
    """The PostgreSQL server could not be reached or refused the store's request."""

    def __init__(self, thread_id: str | None, action: str, cause: BaseException) -> None:
        self.thread_id = thread_id
        subject = f" for thread `{thread_id}`" if thread_id else ""
        detail = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        super().__init__(f"PostgreSQL store could not {action}{subject}: {detail}")


async def complete(coro: Coroutine[Any, Any, T]) -> tuple[T, bool]:
    """Run ``coro`` to its end even when the caller is cancelled meanwhile.

    Returns its result and whether a cancellation arrived (the caller re-raises
    it once it has undone what must not outlive it). A round trip cut off halfway
    would leave its connection in an unknown state, and a lock taken for a caller
    that is gone would never be given back.
    """
    task = asyncio.ensure_future(coro)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(task), cancelled
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True


class _Shard:
    """One lease connection and the lock keys it holds."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self.keys: set[int] = set()

    async def call(self, function: str, key: int) -> bool:
        """``SELECT function(key)`` on this shard's connection (reconnecting once)."""
        async with self._lock:
            for attempt in (1, 2):
                try:
                    conn = await self._open()
                    cur = await conn.execute(f"SELECT {function}(%s::bigint)", (key,))
                    row = await cur.fetchone()
                    return bool(row is not None and row[0])
                except psycopg.OperationalError:
                    await self.close()
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        lost = bool(self.keys)
        self._conn = await self._connect()
        if lost:  # the old connection took its locks with it: take them again
            for key in list(self.keys):
                cur = await self._conn.execute("SELECT pg_try_advisory_lock(%s::bigint)", (key,))
                row = await cur.fetchone()
                if not (row is not None and row[0]):
                    self.keys.discard(key)
                    _log.warning("lease lost with its connection; another holder took it", key=key)
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


class PgLease:
    """A held thread; ``release()`` unlocks it (twice is harmless)."""

    __slots__ = ("_key", "_manager", "_thread_id")

    def __init__(self, manager: LeaseManager, thread_id: str, key: int) -> None:
        self._manager = manager
        self._thread_id = thread_id
        self._key: int | None = key

    async def release(self) -> None:
        key, self._key = self._key, None
        if key is not None:
            await self._manager.release(self._thread_id, key)

    def __repr__(self) -> str:
        return f"PgLease(thread_id={self._thread_id!r}, held={self._key is not None})"


class LeaseManager:
    """Hands out leases on ``connections`` lease connections made by ``connect``."""

    def __init__(self, connect: Connect, namespace: str, connections: int) -> None:
        self._namespace = namespace
        self._shards = [_Shard(connect) for _ in range(connections)]
        self._held: set[str] = set()

    def key(self, thread_id: str) -> int:
        """The advisory-lock key of ``thread_id`` in this store's namespace."""
        digest = hashlib.blake2b(
            f"{self._namespace}\0{thread_id}".encode(), digest_size=8, person=b"research_fsm"
        ).digest()
        return int.from_bytes(digest, "big", signed=True)

    def _shard(self, key: int) -> _Shard:
        return self._shards[key % len(self._shards)]

    async def acquire(self, thread_id: str) -> PgLease:
        """Lock the thread or raise ``ThreadBusy`` at once (never waits for the holder)."""
        if thread_id in self._held:
            raise ThreadBusy(thread_id)
        self._held.add(thread_id)
        key = self.key(thread_id)
        shard = self._shard(key)
        try:
            got, cancelled = await complete(shard.call("pg_try_advisory_lock", key))
            if got:
                shard.keys.add(key)
            if cancelled:
                if got:
                    await complete(self._unlock(shard, key))
                raise asyncio.CancelledError
        except psycopg.Error as exc:
            self._held.discard(thread_id)
            raise StoreUnavailable(thread_id, "take the lease", exc) from exc
        except BaseException:
            self._held.discard(thread_id)
            raise
        if not got:
            self._held.discard(thread_id)
            raise ThreadBusy(thread_id)
        return PgLease(self, thread_id, key)

    async def release(self, thread_id: str, key: int) -> None:
        """Unlock ``key``; a connection lost meanwhile already released it."""
        try:
            _, cancelled = await complete(self._unlock(self._shard(key), key))
        finally:
            self._held.discard(thread_id)
        if cancelled:
            raise asyncio.CancelledError

    async def _unlock(self, shard: _Shard, key: int) -> None:
        if key not in shard.keys:
            return
        shard.keys.discard(key)
        try:
            await shard.call("pg_advisory_unlock", key)
        except psycopg.Error:  # the connection is gone, and with it the lock
            await shard.close()

    async def close(self) -> None:
        """Close the lease connections (every lock they hold ends with them)."""
        for shard in self._shards:
            shard.keys.clear()
            await shard.close()
        self._held.clear()
