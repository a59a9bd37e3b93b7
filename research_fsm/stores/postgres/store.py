"""``PostgresCheckpointStore``: checkpoints in PostgreSQL, for apps on several machines.

Needs the ``postgres`` extra (``pip install 'research-fsm[postgres]'``: psycopg 3
and psycopg-pool). One table holds every thread's checkpoints, one row each,
keyed by ``(thread_id, seq)``; like the file store's lines, a row holds the whole
state every ``min(keep, 128)`` checkpoints and otherwise only what its step
changed, compressed against the rows before it (``rows``). A save is one statement:
insert after the expected parent, and (a full row under ``keep``) prune what ``keep`` no
longer needs; the other saves send a statement without the prune. Leases are
session advisory locks (see ``leases``), released by the server when the holder's
connection ends; taking one also reads the thread's newest rows in the same round
trip, for the ``load_latest`` that follows. A run's saves go on the connection
holding its lease (fencing: once that connection ended they raise ``LeaseLost`` and
write nothing), and a run's last save (status completed or suspended) is committed
and then unlocked in one round trip (the ``release`` after it has nothing left to
send). Saves that wait while a connection's round trip is in flight share its next
one (``batch``): one transaction, one commit, and each returns once that commit
is done. Reads, and the saves of threads without a lease here, go on a connection
pool; nothing is serialised store-wide.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from research_fsm.engine import (
    Checkpoint,
    CheckpointConflict,
    CheckpointNotFound,
    LeaseLost,
    StoreWriteError,
    ThreadInfo,
    ThreadPage,
)
from research_fsm.engine.store import (
    Lease,
    seq_hint,
    standing_node,
    thread_query,
    validate_keep,
    validate_thread_id,
)

from .common import StoreUnavailable, cursor
from .common import cursor as cursor_of
from .connections import Connections, safe_dsn
from .leases import PgLease
from .rows import Folder, encode, pack, slide, stored_id
from .schema import SchemaTooNew, threads_statement

__all__ = ["PostgresCheckpointStore", "SchemaTooNew", "StoreUnavailable"]

_ROWS_PER_FULL = 128  # a full row at least this often (fewer with a smaller keep)
_CHANGES_BYTES = 1 << 20  # ... and once the changes rows since it pass this size
_CACHED_HEADS = 4096  # threads whose newest row this store remembers (LRU)
_LAST_OF_RUN = ("completed", "suspended")  # a run saves nothing after these (``CheckpointStore``)


@dataclass(slots=True)
class _Head:
    """What this store last saw of a thread: enough to decide full row or changes row."""

    checkpoint_id: str
    seq: int
    full_seq: int
    changes_bytes: int
    window: bytes  # the dictionary of its next row (see ``rows.pack``)


class PostgresCheckpointStore(Connections):
    """Keeps checkpoints in a PostgreSQL database (9.6 or newer; tested on 15).

    Args:
        dsn: a libpq connection string or ``postgresql://`` URL (passwords may
            also come from ``PGPASSWORD`` or ``~/.pgpass``). Give this or ``pool``.
        pool: an existing ``psycopg_pool.AsyncConnectionPool`` to save and load on
            (its connections must be in autocommit mode; the store never closes it).
        lease_dsn: where the lease connections go, when ``dsn`` or ``pool`` point at
            PgBouncer in transaction mode: a direct (or session-mode) connection to
            the same database. Default: ``dsn`` (or the pool's connection string).
        schema: the Postgres schema holding the store's tables (created if missing).
        keep: prune each thread's history to its newest ``keep`` checkpoints.
        secret: key for signing resume tokens (default: one kept in the database,
            shared by every store on the same tables).
        pool_size: connections of the pool the store makes from ``dsn``.
        lease_connections: connections that hold the leases' advisory locks.
    """

    saves_changes = True
    """Asks the engine for ``Checkpoint.changes``: a save writes only those."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        lease_dsn: str | None = None,
        schema: str = "public",
        keep: int | None = None,
        secret: bytes | str | None = None,
        pool_size: int = 10,
        lease_connections: int = 2,
    ) -> None:
        keep = validate_keep(keep)
        super().__init__(dsn, pool, lease_dsn, schema, pool_size, lease_connections)
        self.keep = keep
        self._rows_per_full = min(keep or _ROWS_PER_FULL, _ROWS_PER_FULL)
        self._heads: OrderedDict[str, _Head] = OrderedDict()
        self._secret = secret.encode() if isinstance(secret, str) else secret
        self._listings: dict[tuple[bool, ...], bytes] = {}  # ``threads`` statements made

    def __repr__(self) -> str:
        return (
            f"PostgresCheckpointStore({safe_dsn(self._lease_dsn)!r}, schema={self.schema!r}, "
            f"keep={self.keep!r})"
        )

    # -- the CheckpointStore protocol ------------------------------------------

    async def acquire(self, thread_id: str) -> PgLease:
        validate_thread_id(thread_id)
        await self._open_for(thread_id, "take the lease")
        lease, rows = await self._leases.acquire(thread_id, read=True)
        if rows is not None:
            self._peeked[thread_id] = rows  # what the engine's load_latest asks next
        return lease

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        validate_thread_id(thread_id)
        rows = self._peeked.pop(thread_id, None)
        if rows is None:

            async def read(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
                query = self._queries["load_latest"]
                cur = await cursor(conn).execute(query, {"thread": thread_id})
                return await cur.fetchall()

            rows = await self._run(thread_id, "load the thread", read)
        if not rows:
            self._heads.pop(thread_id, None)
            return None
        folder = Folder(thread_id)
        changes_bytes = 0
        for seq, full, key, body in rows:
            folder.add(seq, full, bytes(key), bytes(body))
            changes_bytes = 0 if full else changes_bytes + len(body)
        latest = folder.latest
        assert latest is not None
        head = _Head(latest.checkpoint_id, latest.seq, rows[0][0], changes_bytes, folder.window)
        self._remember(thread_id, head)
        return latest

    async def save(self, checkpoint: Checkpoint) -> None:
        cp = checkpoint
        thread_id = validate_thread_id(cp.thread_id)
        self._peeked.pop(thread_id, None)
        head = self._heads.get(thread_id)
        full = (
            head is None
            or head.checkpoint_id != cp.parent_id
            or cp.changes is None
            or not isinstance(cp.state, BaseModel)
            or cp.seq - head.full_seq >= self._rows_per_full
            or head.changes_bytes > _CHANGES_BYTES
        )
        raw = encode(cp, full=full)
        window = b"" if full or head is None else head.window
        key = stored_id(cp.checkpoint_id)
        body = pack(raw, window, key)
        params = {
            "thread": thread_id,
            "seq": cp.seq,
            "id": key,
            "parent": None if cp.parent_id is None else stored_id(cp.parent_id),
            "full": full,
            "body": body,
            "prune": full and self.keep is not None,
            "below": cp.seq if self.keep == 1 else None,
            "oldest_kept": cp.seq - (self.keep or 1) + 1,
            # the thread's row of the listing (``research_fsm_threads``)
            "cid": cp.checkpoint_id,
            "status": cp.status,
            "node": standing_node(cp),
            "updated": cp.created_at,
            "pthread": cp.parent_thread_id,
        }
        try:
            done, row, cancelled = False, None, False
            if not self._leases.holds(thread_id):  # no lease here: nothing to fence
                row, cancelled = await self._submit_save(thread_id, params)
            else:  # on the lease's connection (``leases``): LeaseLost once it ended
                statement = (self._save_query(params), params)
                if cp.status in _LAST_OF_RUN:
                    done, row, cancelled = await self._leases.save_and_release(thread_id, statement)
                if not done:
                    row, late = await self._leases.save(thread_id, statement)
                    cancelled = cancelled or late
        except StoreUnavailable as exc:
            self._heads.pop(thread_id, None)
            raise StoreWriteError(thread_id, exc) from exc
        except LeaseLost:
            self._heads.pop(thread_id, None)
            raise
        if cancelled:
            raise asyncio.CancelledError
        if row is None or not (row[0] or row[1] == key):
            self._heads.pop(thread_id, None)
            raise CheckpointConflict(thread_id, cp.parent_id)
        if full or head is None:
            new_head = _Head(cp.checkpoint_id, cp.seq, cp.seq, 0, slide(b"", raw))
        else:
            changes = head.changes_bytes + len(body)
            new_head = _Head(cp.checkpoint_id, cp.seq, head.full_seq, changes, slide(window, raw))
        self._remember(thread_id, new_head)

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        validate_thread_id(thread_id)
        if limit is not None or before is not None:  # a page: read just its rows
            page = await self._page(thread_id, limit, before, inclusive=False)
            if page is None:
                assert before is not None
                raise CheckpointNotFound(thread_id, before)
            for checkpoint in page:
                yield checkpoint
            return

        async def read(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await cursor(conn).execute(self._queries["history"], {"thread": thread_id})
            return await cur.fetchall()

        rows = await self._run(thread_id, "read the history", read)
        folder = Folder(thread_id)
        checkpoints = [folder.add(s, f, bytes(k), bytes(b)) for s, f, k, b in rows]
        if self.keep is not None:
            checkpoints = checkpoints[-self.keep :]
        for cp in reversed(checkpoints):
            yield cp

    async def load(self, thread_id: str, checkpoint_id: str) -> Checkpoint | None:
        validate_thread_id(thread_id)
        page = await self._page(thread_id, 1, checkpoint_id, inclusive=True)
        return page[0] if page else None

    async def _page(
        self, thread_id: str, limit: int | None, at: str | None, *, inclusive: bool
    ) -> list[Checkpoint] | None:
        """Up to ``limit`` checkpoints, newest first, older than checkpoint ``at``
        (``inclusive``: from it); ``None`` when the thread has no (unpruned)
        checkpoint ``at``. Two round trips on one connection: find the page, read
        its rows (from the full row at or below its oldest)."""

        async def read(conn: AsyncConnection[Any]) -> tuple[int, list[tuple[Any, ...]]] | None:
            hint = seq_hint(at) if at is not None else None
            params = {
                "thread": thread_id,
                "hint": -1 if hint is None else hint,
                "id": None if at is None else stored_id(at),
            }
            cur = await cursor(conn).execute(self._queries["locate"], params)
            located = await cur.fetchone()
            newest, found = located if located is not None else (None, None)
            if newest is None:
                return None if at is not None else (0, [])
            oldest = newest - self.keep + 1 if self.keep is not None else 0
            if at is None:
                end = newest + 1
            elif found is None or found < oldest:
                return None
            else:
                end = found + 1 if inclusive else found
            low = oldest if limit is None else max(oldest, end - limit)
            params = {"thread": thread_id, "end": end, "low": low}
            cur = await cursor(conn).execute(self._queries["page"], params)
            return low, await cur.fetchall()

        result = await self._run(thread_id, "read the history", read)
        if result is None:
            return None
        low, rows = result
        folder = Folder(thread_id)
        checkpoints = [folder.add(s, f, bytes(k), bytes(b)) for s, f, k, b in rows]
        return [cp for cp in reversed(checkpoints) if cp.seq >= low][:limit]

    async def delete(self, thread_id: str, *, lease: Lease | None = None) -> None:
        await self._open_for(validate_thread_id(thread_id), "delete the thread")
        held = isinstance(lease, PgLease) and lease.holds(self._leases, thread_id)
        own = None if held else (await self._leases.acquire(thread_id))[0]  # ThreadBusy
        try:

            async def remove(conn: AsyncConnection[Any]) -> None:
                await conn.execute(self._queries["delete"], {"thread": thread_id})

            await self._run(thread_id, "delete the thread", remove)
            self._heads.pop(thread_id, None)
        finally:
            if own is not None:
                await own.release()

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str = "",
        status: str | Collection[str] | None = None,
        children: bool = True,
    ) -> ThreadPage:
        """A page of the schema's threads (``ThreadListing``): one statement on the
        listing's table, ``research_fsm_threads``, which every save keeps, read
        newest first through its index."""
        query = thread_query(
            limit=limit, cursor=cursor, prefix=prefix, status=status, children=children
        )
        params: dict[str, Any] = {
            "prefix": query.prefix,
            "prefix_length": len(query.prefix),
            "statuses": None if query.statuses is None else sorted(query.statuses),
            "limit": query.limit + 1,
        }
        if query.after is not None:
            params["after_time"], params["after_thread"] = query.after
        filters = (
            bool(query.prefix),
            query.statuses is not None,
            not query.children,
            query.after is not None,
        )

        async def read(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            statement = self._listings.get(filters)
            if statement is None:
                statement = threads_statement(self.schema, filters).as_bytes(conn)
                self._listings[filters] = statement
            cur = await cursor_of(conn).execute(statement, params)
            return await cur.fetchall()

        rows = await self._run(None, "list the threads", read)
        return query.cut(
            [
                ThreadInfo(
                    thread_id=thread_id,
                    status=status_,
                    node=node,
                    updated_at=updated_at,
                    checkpoints=seq if self.keep is None else min(seq, self.keep),
                    parent_thread_id=parent,
                    checkpoint_id=checkpoint_id,
                )
                for thread_id, status_, node, updated_at, seq, parent, checkpoint_id in rows
            ]
        )

    async def secret(self) -> bytes:
        if self._secret is None:

            async def read_or_create(conn: AsyncConnection[Any]) -> str:
                await conn.execute(self._queries["write_secret"], (secrets.token_hex(32),))
                cur = await conn.execute(self._queries["read_secret"])
                row = await cur.fetchone()
                assert row is not None
                return str(row[0])

            self._secret = bytes.fromhex(
                await self._run(None, "read the signing key", read_or_create)
            )
        return self._secret

    def _remember(self, thread_id: str, head: _Head) -> None:
        self._heads[thread_id] = head
        self._heads.move_to_end(thread_id)
        if len(self._heads) > _CACHED_HEADS:
            self._heads.popitem(last=False)
