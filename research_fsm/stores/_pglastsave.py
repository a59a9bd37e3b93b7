"""Saves on the connection holding their thread's lease (``PostgresCheckpointStore``).

A leased thread's saves go on the connection holding the run's advisory lock
(``_pgleases``), fencing the run: a statement that runs there runs in the session
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
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.errors import LockNotAvailable

from research_fsm.engine import LeaseLost

from ._pgbatch import complete
from ._pgcommon import Statement, StoreUnavailable, client_cursor

if TYPE_CHECKING:
    from ._pgleases import PgLease, _Shard

__all__ = [
    "LAST_SAVE_MS",
    "LOCK_WAIT_MS",
    "UNLOCK",
    "Blocked",
    "LeaseSaves",
    "NotHeld",
    "save_held",
    "save_then_unlock",
    "settled",
]

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


class LeaseSaves:
    """The saves of a ``LeaseManager``'s leases, on the connections holding them (its base)."""

    _leases: dict[str, PgLease]

    def _shard(self, key: int) -> _Shard:
        raise NotImplementedError

    def _ended(self, thread_id: str) -> None:
        raise NotImplementedError

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
