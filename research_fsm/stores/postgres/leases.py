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

Round trips are shared (``batch``): the requests that wait while a connection's
round trip is in flight go together in its next one. The lock and unlock requests
first: one call of the schema's lease function (``schema``), which unlocks,
then locks each key and reads its thread's newest rows; without the function,
one statement for the unlocks and one for the locks (``unnest`` of their keys),
then each read as its own statement, in one pipeline. Either way a read's
snapshot is taken after its lock is held and sees every save of the previous
holder (who saved, then unlocked). The store hands those rows to the
``load_latest`` that follows. Then the saves, in one query and one commit
(``save_held``; a save waiting on a row lock gives way after a while).

``release`` returns once the unlock has run on the server: a run ends only after
its lease is free, so whoever learns of the end (another process or machine, the
user) can take the thread at once; an unlock sent later would have them told
``ThreadBusy`` for a thread nobody runs. Concurrent releases share that round
trip, so it costs a busy store next to nothing.

A leased thread's saves go on the connection holding the run's advisory lock,
fencing the run: a statement that runs there runs in the session
holding the lock, so the lock is held until it commits (a session that ends aborts
its transaction before the server drops its locks), and whoever takes the thread
next reads that commit. When the connection ends (backend terminated, server
restarted), its locks are lost with it and never taken again on the next
connection: the saves of those leases raise ``LeaseLost`` and write nothing
(without a round trip once the connection is known dead), so a run that lost its
lease stops before more node code, and no step is saved by two runs.

The saves go as one query of several statements (the simple query protocol):
``SET LOCAL`` of a time limit, the saves, ``COMMIT``, so the saves of threads held
there share one round trip and one commit. A save waiting on a lock for longer than
``LOCK_WAIT_MS`` (a row another transaction is writing) gives up, nothing committed,
and is sent again after the lease requests that waited meanwhile: a save may not
hold the lease connection, and every lease request behind it, for long.

A checkpoint with status completed or suspended is the last its run saves (see
``CheckpointStore.save``). Its query also unlocks, after the ``COMMIT``, so a lease
ends only once its last save is committed, and in the save's round trip (the
``release`` after has nothing left to send). Runs ending together share that query
and its commit. If any statement fails or takes longer than ``LAST_SAVE_MS``,
nothing is committed or unlocked and every caller saves the usual way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.errors import LockNotAvailable

from research_fsm.engine import LeaseLost, ThreadBusy

from .batch import Batcher, complete
from .common import Rows, Statement, StoreUnavailable, client_cursor, cursor

__all__ = ["LeaseManager", "PgLease"]

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]
_LOCK = b"SELECT k, pg_try_advisory_lock(k) FROM unnest(%s::bigint[]) AS u(k)"
_MOST = 256  # requests per round trip


LAST_SAVE_MS = 100
"""A last save slower than this is cancelled and goes the usual way: it may not hold the
lease connection, and every lease round trip waiting for it, for longer."""

LOCK_WAIT_MS = LAST_SAVE_MS
"""A save waiting on a lock for longer than this gives up and is sent again later."""

UNLOCK = b"SELECT pg_advisory_unlock(k) FROM unnest(%s::bigint[]) AS u(k)"


class NotHeld(Exception):
    """The lock of a save was lost with its connection: it was not sent."""


class Blocked(Exception):
    """A save waited ``LOCK_WAIT_MS`` on a lock and gave up (nothing committed): send it
    again, after the lease requests waiting meanwhile."""


async def save_held(
    conn: psycopg.AsyncConnection[Any], saves: list[tuple[int, Statement]], held: set[int]
) -> list[Any]:
    """Each ``(key, save)`` of ``saves`` run on ``conn``, which holds the locks in ``held``,
    in one round trip and one commit: each save's row, ``NotHeld`` for a lock ``conn``
    no longer holds (not sent), ``Blocked``, or the error the save failed with (saves
    that fail together are run again one at a time). Raises only when the connection died."""
    mine = [(key, save) for key, save in saves if key in held]
    rows: dict[int, Any] = {}
    if mine:
        try:
            found = await _together(conn, f"lock_timeout = {LOCK_WAIT_MS}", mine)
            rows = dict(zip([key for key, _ in mine], found, strict=True))
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                raise  # the connection died: its locks went with it
            if len(mine) > 1:  # one failed and took the others with it: each alone
                for one in mine:
                    rows[one[0]] = (await save_held(conn, [one], held))[0]
            else:
                rows[mine[0][0]] = Blocked() if isinstance(exc, LockNotAvailable) else exc
    return [rows.get(key, NotHeld()) for key, _ in saves]


async def _together(
    conn: psycopg.AsyncConnection[Any],
    limit: str,
    saves: list[tuple[int, Statement]],
    after: tuple[bytes, Any] | None = None,
) -> list[Any]:
    """Run ``saves`` in one query on ``conn``: ``SET LOCAL limit``, the saves, ``COMMIT``,
    and the statement ``after`` (if any); each save's row."""
    cur = client_cursor(conn)
    statements = [f"SET LOCAL {limit}"]  # ends with the COMMIT
    statements += [cur.mogrify(*save) for _, save in saves]
    statements.append("COMMIT")
    if after is not None:
        statements.append(cur.mogrify(*after))
    text = ";\n".join(statements)
    await cur.execute(text.encode())  # no parameters: as it is, several statements
    cur.nextset()  # past the SET
    rows = []
    for _ in saves:
        rows.append(await cur.fetchone())
        cur.nextset()
    return rows


async def save_then_unlock(
    conn: psycopg.AsyncConnection[Any], finals: list[tuple[int, Statement]], held: set[int]
) -> list[Any]:
    """Each ``(key, save)`` of ``finals`` saved, then ``key`` unlocked, in one round trip
    on ``conn``, which holds the locks in ``held`` (updated): each save's row, or the
    exception all of them failed with (``NotHeld`` for a lock ``conn`` no longer holds).
    Raises only when the connection died."""
    mine = [(key, save) for key, save in finals if key in held]
    keys = [key for key, _ in mine]
    rows: dict[int, Any] = {}
    if mine:
        limit = f"statement_timeout = {LAST_SAVE_MS}"
        try:
            found = await _together(conn, limit, mine, (UNLOCK, (keys,)))
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                raise  # the connection died: the lease round trip reconnects
            # A statement failed or was cancelled (the connection is idle again):
            # nothing committed before it and no lock released.
            return [exc for _ in finals]
        rows = dict(zip(keys, found, strict=True))
        held.difference_update(keys)
    return [rows[key] if key in rows else NotHeld() for key, _ in finals]


async def settled(future: asyncio.Future[Any]) -> Any:
    """``future``'s outcome, its exception returned rather than raised."""
    try:
        return await future
    except (psycopg.Error, NotHeld, Blocked) as exc:
        return exc


@dataclass(slots=True)
class _Request:
    """Lock ``key`` (and then read thread ``read``'s newest rows), or unlock it (after
    committing ``save``, a run's last save), or (``plain``) run ``save`` while holding it."""

    key: int
    lock: bool
    read: str | None = None
    save: Statement | None = None
    plain: bool = False


@dataclass(slots=True)
class _Queries:
    """The statements a lease round trip runs (set once the store has started)."""

    load_latest: bytes = b""
    """A thread's newest rows (parameter ``thread``), without the lease function."""
    leases_call: bytes | None = None
    """The schema's lease function (``schema``), if it has one."""


Got = tuple[bool, Rows | None]
"""Whether the lock was taken, and the rows of its read (``None``: no read)."""
Outcome = Got | tuple[Any, ...] | None
"""A lock's ``Got``, a save's row, or an unlock's ``None``; a plain save may also end in
``NotHeld`` (its lock was lost with the connection), ``Blocked`` or the driver's error."""


class _Shard:
    """One lease connection, the lock keys it holds, and its shared round trips."""

    def __init__(self, connect: Connect, queries: _Queries) -> None:
        self._connect = connect
        self._queries = queries
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self.keys: set[int] = set()
        """The locks ``_conn`` holds (emptied when it ends: they end with it)."""
        self._batcher: Batcher[_Request, Outcome] = Batcher(self._trip, width=1, most=_MOST)

    def lock(self, key: int, read: str | None) -> asyncio.Future[Outcome]:
        return self._batcher.submit(key, _Request(key, True, read))

    def unlock(self, key: int) -> asyncio.Future[Outcome]:
        return self._batcher.submit(key, _Request(key, False))

    def save(self, key: int, save: Statement) -> asyncio.Future[Outcome]:
        """Run ``save`` on the connection holding ``key`` (see ``Outcome``)."""
        return self._batcher.submit(key, _Request(key, False, save=save, plain=True))

    @property
    def idle(self) -> bool:
        """No round trip in flight or waiting."""
        return self._batcher.idle

    def save_then_unlock(self, key: int, save: Statement) -> asyncio.Future[Outcome]:
        return self._batcher.submit(key, _Request(key, False, save=save))

    async def _trip(self, requests: list[_Request]) -> list[Outcome | BaseException]:
        """One round trip for the lease requests of ``requests``, then one for its saves."""
        saves = [r for r in requests if r.plain]
        if not saves:
            return await self._lease_trip(requests)
        rest = [r for r in requests if not r.plain]
        outcomes: dict[int, Outcome | BaseException] = {}
        if rest:
            try:
                outcomes.update(zip(map(id, rest), await self._lease_trip(rest), strict=True))
            except psycopg.Error as exc:
                outcomes.update((id(r), exc) for r in rest)
        outcomes.update(zip(map(id, saves), await self._saves(saves), strict=True))
        return [outcomes[id(r)] for r in requests]

    async def _saves(self, saves: list[_Request]) -> list[Outcome | BaseException]:
        """Each save's outcome (``save_held``), run on the connection holding its lock:
        never on another (it holds no lock), so ``NotHeld`` once that one ended."""
        conn = self._conn
        if conn is None or conn.closed:
            await self.close()
            return [NotHeld() for _ in saves]
        statements = [(r.key, r.save) for r in saves if r.save is not None]
        assert len(statements) == len(saves)
        try:
            return await save_held(conn, statements, self.keys)
        except psycopg.Error:  # the connection died, and its locks with it
            await self.close()
            return [NotHeld() for _ in saves]

    async def _lease_trip(self, requests: list[_Request]) -> list[Outcome | BaseException]:
        """One round trip for ``requests`` (reconnecting once if the connection was dead)."""
        for attempt in (1, 2):
            try:
                conn = await self._open()
                return await self._send(conn, requests, unlock=attempt == 1)
            except psycopg.OperationalError:
                await self.close()  # its locks went with it: no unlock left to send
                if attempt == 2:
                    raise
            except psycopg.Error:
                # Which locks the statements took is unknown: drop them all with the
                # connection (the saves of the leases it held raise ``LeaseLost``).
                await self.close()
                raise
        raise AssertionError("unreachable")

    async def _send(
        self, conn: psycopg.AsyncConnection[Any], requests: list[_Request], *, unlock: bool
    ) -> list[Outcome | BaseException]:
        finals = [r for r in requests if r.save is not None]
        if not finals:
            return await self._send_leases(conn, requests, unlock=unlock)
        last = [(r.key, r.save) for r in finals if r.save is not None]
        saved = iter(await save_then_unlock(conn, last, self.keys))
        others = [r for r in requests if r.save is None]
        rest = iter(await self._send_leases(conn, others, unlock=unlock) if others else [])
        return [next(saved) if r.save is not None else next(rest) for r in requests]

    async def _send_leases(
        self, conn: psycopg.AsyncConnection[Any], requests: list[_Request], *, unlock: bool
    ) -> list[Outcome | BaseException]:
        locks = [r for r in requests if r.lock]
        unlocks = [r.key for r in requests if not r.lock] if unlock else []
        call = self._queries.leases_call
        if call is not None and any(r.read is not None for r in locks):
            return await self._call(conn, call, requests, locks, unlocks)
        reads: list[psycopg.AsyncCursor[Any] | None] = []
        taken: psycopg.AsyncCursor[Any] | None = None
        if locks and not unlocks and len(locks) == 1 and locks[0].read is None:
            taken = await cursor(conn).execute(_LOCK, ([locks[0].key],))
        elif unlocks and not locks:
            await cursor(conn).execute(UNLOCK, (unlocks,))
        elif locks or unlocks:
            async with conn.pipeline():  # one round trip; each statement its own snapshot
                if unlocks:
                    await conn.cursor(binary=True).execute(UNLOCK, (unlocks,))
                if locks:
                    taken = await conn.cursor(binary=True).execute(_LOCK, ([r.key for r in locks],))
                for r in locks:
                    if r.read is None:
                        reads.append(None)
                    else:
                        read = (self._queries.load_latest, {"thread": r.read})
                        reads.append(await conn.cursor(binary=True).execute(*read))
        got: dict[int, bool] = {}
        if taken is not None:
            got = {key: bool(ok) for key, ok in await taken.fetchall()}
            self.keys.update(key for key, ok in got.items() if ok)
        outcomes: list[Outcome | BaseException] = []
        pending = iter(reads)
        for r in requests:
            if r.lock:
                cur = next(pending, None)
                outcomes.append((got[r.key], None if cur is None else await cur.fetchall()))
            else:
                outcomes.append(None)
        return outcomes

    async def _call(
        self,
        conn: psycopg.AsyncConnection[Any],
        call: bytes,
        requests: list[_Request],
        locks: list[_Request],
        unlocks: list[int],
    ) -> list[Outcome | BaseException]:
        """``_send`` as one call of the lease function."""
        keys, threads = [r.key for r in locks], [r.read for r in locks]
        cur = await cursor(conn).execute(call, (unlocks, keys, threads))
        got: dict[int, bool] = {}
        rows: dict[int, Rows] = {}
        for key, ok, seq, full, row_id, body in await cur.fetchall():
            got[key] = ok
            if seq is not None:
                rows.setdefault(key, []).append((seq, full, row_id, body))
        self.keys.update(key for key, ok in got.items() if ok)
        return [
            (got[r.key], None if r.read is None else rows.get(r.key, [])) if r.lock else None
            for r in requests
        ]

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        await self.close()  # the old connection's locks ended with it: never taken again
        self._conn = await self._connect()
        return self._conn

    async def close(self) -> None:
        """Close the connection; every lock it held is lost (``keys`` emptied)."""
        conn, self._conn = self._conn, None
        self.keys.clear()
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    async def shutdown(self) -> None:
        """Stop the round trips and close the connection (its locks end with it)."""
        await self._batcher.close()
        await self.close()


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

    def holds(self, manager: LeaseManager, thread_id: str) -> bool:
        """Whether this is ``manager``'s lease on ``thread_id``, not yet released."""
        return self._manager is manager and self._thread_id == thread_id and self._key is not None


class LeaseManager:
    """Hands out leases on ``connections`` lease connections made by ``connect``.

    ``on_release(thread_id)`` runs when a lease of this manager ends.
    """

    def __init__(
        self,
        connect: Connect,
        namespace: str,
        connections: int,
        on_release: Callable[[str], object] = lambda thread_id: None,
    ) -> None:
        self._namespace = namespace
        self._queries = _Queries()
        self._shards = [_Shard(connect, self._queries) for _ in range(connections)]
        self._held: set[str] = set()
        self._leases: dict[str, PgLease] = {}
        self._on_release = on_release

    def use(self, load_latest: bytes, leases_call: bytes | None) -> None:
        """The statements of the reads that ride with the locks (see ``_Queries``)."""
        self._queries.load_latest, self._queries.leases_call = load_latest, leases_call

    def key(self, thread_id: str) -> int:
        """The advisory-lock key of ``thread_id`` in this store's namespace."""
        digest = hashlib.blake2b(
            f"{self._namespace}\0{thread_id}".encode(), digest_size=8, person=b"research_fsm"
        ).digest()
        return int.from_bytes(digest, "big", signed=True)

    def _shard(self, key: int) -> _Shard:
        return self._shards[key % len(self._shards)]

    async def acquire(self, thread_id: str, *, read: bool = False) -> tuple[PgLease, Rows | None]:
        """Lock the thread or raise ``ThreadBusy`` at once (never waits for the holder);
        with ``read``, also its newest rows, read once the lock is held."""
        if thread_id in self._held:
            raise ThreadBusy(thread_id)
        self._held.add(thread_id)
        key = self.key(thread_id)
        shard = self._shard(key)
        try:
            outcome, cancelled = await complete(shard.lock(key, thread_id if read else None))
            assert outcome is not None
            got, rows = outcome
            if cancelled:
                if got:
                    await self._unlock(shard, key)
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
        lease = self._leases[thread_id] = PgLease(self, thread_id, key)
        return lease, rows

    def holds(self, thread_id: str) -> bool:
        """Whether a lease of this manager is on the thread (held, or lost with its
        connection and not released yet): its saves then go through ``save``."""
        return thread_id in self._leases

    async def save(self, thread_id: str, save: Statement) -> tuple[Any, bool]:
        """Run ``save`` on the connection holding the thread's lease (see ``holds``): its
        row, and whether the caller was cancelled meanwhile (the save went on to its end).

        Raises ``LeaseLost`` when the lock is gone, sending nothing once its connection
        is known to have ended; ``StoreUnavailable`` when the statement failed.
        """
        lease = self._leases.get(thread_id)
        key = None if lease is None else lease._key
        shard = None if key is None else self._shard(key)
        if key is None or shard is None or key not in shard.keys:
            raise LeaseLost(thread_id)
        outcome, cancelled = await complete(settled(shard.save(key, save)))
        while isinstance(outcome, Blocked) and not cancelled:  # after the requests behind
            outcome, cancelled = await complete(settled(shard.save(key, save)))
        if cancelled and isinstance(outcome, BaseException):
            raise asyncio.CancelledError
        if isinstance(outcome, NotHeld):
            raise LeaseLost(thread_id)
        if isinstance(outcome, BaseException):
            raise StoreUnavailable(thread_id, "save a checkpoint", outcome) from outcome
        return outcome, cancelled

    async def save_and_release(
        self, thread_id: str, save: Statement
    ) -> tuple[bool, tuple[Any, ...] | None, bool]:
        """Run ``save``, a run's last, then (once committed) end the thread's lease, in one
        round trip of its lease connection, if that connection has nothing else to do.
        Whether it was done, the save's row, and whether the caller was cancelled
        meanwhile. Not done (nothing saved or unlocked) when this manager holds no
        lease on the thread, its connection is busy, or the statement failed: then save
        the usual way (and re-raise a cancellation after)."""
        lease = self._leases.get(thread_id)
        key = None if lease is None else lease._key
        if lease is None or key is None:
            return False, None, False
        shard = self._shard(key)
        if key not in shard.keys or not shard.idle:
            return False, None, False
        outcome, cancelled = await complete(settled(shard.save_then_unlock(key, save)))
        if isinstance(outcome, BaseException):
            return False, None, cancelled
        lease._key = None
        self._ended(thread_id)
        assert outcome is None or isinstance(outcome, tuple)
        return True, outcome, cancelled

    async def release(self, thread_id: str, key: int) -> None:
        """Unlock ``key``; a connection lost meanwhile already released it."""
        cancelled = False
        try:
            cancelled = await self._unlock(self._shard(key), key)
        finally:
            self._ended(thread_id)
        if cancelled:
            raise asyncio.CancelledError

    def _ended(self, thread_id: str) -> None:
        """Forget the thread's lease, which has just ended."""
        self._leases.pop(thread_id, None)
        self._held.discard(thread_id)
        self._on_release(thread_id)

    async def _unlock(self, shard: _Shard, key: int) -> bool:
        """Unlock ``key`` to the end; whether the caller was cancelled meanwhile."""
        if key not in shard.keys:
            return False
        shard.keys.discard(key)
        try:
            return (await complete(shard.unlock(key)))[1]
        except psycopg.Error:  # the round trip closed the connection: the lock went with it
            return False

    async def close(self) -> None:
        """Close the lease connections (every lock they hold ends with them)."""
        for shard in self._shards:
            await shard.shutdown()
        for thread_id in self._held:
            self._on_release(thread_id)
        self._held.clear()
        self._leases.clear()
