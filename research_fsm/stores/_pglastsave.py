"""A run's last save and the end of its lease in one round trip (``PostgresCheckpointStore``).

A checkpoint with status completed or suspended is the last its run saves (see
``CheckpointStore.save``). It goes on the connection holding the run's advisory lock
as one query of several statements (the simple query protocol): the saves, ``COMMIT``,
then the unlocks, so a lease ends only once its last save is committed, and in the
save's round trip (the ``release`` after has nothing left to send). Runs ending
together share that query and its commit. If any statement fails, nothing is committed
or unlocked and every caller saves the usual way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg

from ._pgcommon import Statement

__all__ = ["LAST_SAVE_MS", "UNLOCK", "NotHeld", "save_then_unlock", "settled"]

LAST_SAVE_MS = 100
"""A last save slower than this is cancelled and goes the usual way: it may not hold the
lease connection, and every lease round trip waiting for it, for longer."""

UNLOCK = b"SELECT pg_advisory_unlock(k) FROM unnest(%s::bigint[]) AS u(k)"


class NotHeld(Exception):
    """The lock of a last save was lost with its connection: save the usual way."""


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
        client = psycopg.AsyncClientCursor(conn)
        text = ";\n".join([
            f"SET LOCAL statement_timeout = {LAST_SAVE_MS}",  # ends with the COMMIT
            *(client.mogrify(*save) for _, save in mine),
            "COMMIT",
            client.mogrify(UNLOCK, (keys,)),
        ])  # fmt: skip
        cur = conn.cursor()  # text results: no parameters, so several statements may go
        try:
            await cur.execute(text.encode())
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                raise  # the connection died: the lease round trip reconnects
            # A statement failed or was cancelled (the connection is idle again):
            # nothing committed before it and no lock released.
            return [exc for _ in finals]
        cur.nextset()  # past the SET
        for key, _ in mine:
            rows[key] = await cur.fetchone()
            cur.nextset()
        held.difference_update(keys)
    return [rows[key] if key in rows else NotHeld() for key, _ in finals]


async def settled(future: asyncio.Future[Any]) -> Any:
    """``future``'s outcome, its exception returned rather than raised."""
    try:
        return await future
    except (psycopg.Error, NotHeld) as exc:
        return exc
