"""The table of ``PostgresCheckpointStore``, its migrations and the statements it runs.

Every statement is plain SQL with client-side parameters: nothing is prepared on
the server by the client, so the store works behind PgBouncer in transaction mode.
Saves and lease round trips call two PL/pgSQL functions the store keeps in its
schema (``research_fsm_save_v1``, ``research_fsm_leases_v1``): the server plans
their statements once per server connection and keeps the plans, where a plain
statement is planned on every call. A role that may not create them runs the
same plain statements instead. Migrations run in one transaction under a
transaction-level advisory lock (also safe behind PgBouncer), so stores starting
together on several machines migrate once.

Since layout 3 the store keeps one table, ``research_fsm_checkpoints``, and a view
``research_fsm_meta`` (no storage) whose definition holds the layout version:

* the resume-token key is a reserved row of the table, thread ``.secret`` (no thread
  id can start with a dot, see ``validate_thread_id``), its body the key in hex;
* the version is the view's one row ``('schema_version', '3')``, read with the very
  query older stores run on their meta *table*: an older research_fsm opening a
  layout-3 schema finds the name taken (its ``CREATE TABLE IF NOT EXISTS`` skips),
  reads version 3 and raises its ``SchemaTooNew`` ("upgrade research_fsm") instead of
  making a new meta table and taking the rows for a fresh store.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import psycopg
import structlog
from psycopg import AsyncConnection, sql

from research_fsm.engine import CorruptCheckpoint
from research_fsm.engine.store import thread_info

from .rows import Folder

__all__ = [
    "SCHEMA_VERSION",
    "SECRET_THREAD",
    "SchemaTooNew",
    "Statements",
    "migrate",
    "threads_statement",
]

_log = structlog.get_logger("research_fsm.stores.postgres")

SCHEMA_VERSION = 4
"""The newest table layout this version of the store creates and reads (2: bodies may be
compressed, see ``rows``; 3: checkpoint ids stored as bytes (``rows.stored_id``),
bodies compressed against them too, no meta table; 4: ``research_fsm_threads``, one row
per thread as its latest checkpoint says, for thread listings)."""

SECRET_THREAD = ".secret"
"""The reserved thread whose row 0 holds the signing key (never a valid thread id)."""

_MIGRATE_LOCK = 0x7265_7366_6D01  # pg_advisory_xact_lock key for migrations ("resfm")

# A new schema: ``seq`` first, so no padding aligns it (a row is 24 bytes of header,
# then 8 + 1 + len(thread_id) + 1 + 12 + 1 + 1 + len(body) for an engine's id and a
# body under 127 bytes, which most changes rows are).
_CREATE = (
    """
    CREATE TABLE {checkpoints} (
        seq bigint NOT NULL,
        thread_id text NOT NULL,
        checkpoint_id bytea NOT NULL,
        full_row boolean NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )
    """,
    # bodies come compressed (``rows.pack``): Postgres need not try again
    "ALTER TABLE {checkpoints} ALTER COLUMN body SET STORAGE EXTERNAL",
)

# Layout 4: a thread listing's table, one row per thread, kept by each save (``_SAVE``,
# ``_SAVE_FUNCTION``) and read newest first through its index (``_THREADS``). "C"
# collation: the order is the code points' (as every store orders, and as cursors say).
_THREADS_TABLE = (
    """
    CREATE TABLE {threads} (
        thread_id text COLLATE "C" PRIMARY KEY,
        updated_at text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        status text NOT NULL,
        node text,
        parent_thread text,
        checkpoint_id text NOT NULL
    )
    """,
    "CREATE INDEX {threads_order} ON {threads} (updated_at, thread_id)",
)

# ``rows.stored_id`` in SQL, for the ids of layout 2 (text).
_STORED_ID = """
    CASE WHEN length(checkpoint_id) = 24 AND checkpoint_id !~ '[^0-9a-f]'
        THEN decode(checkpoint_id, 'hex')
    WHEN octet_length(convert_to(checkpoint_id, 'UTF8')) = 12
        THEN convert_to(checkpoint_id, 'UTF8') || '\\xff'::bytea
    ELSE convert_to(checkpoint_id, 'UTF8') END
"""

# The statements taking a schema of layout ``n - 1`` to layout ``n``. Layout 1 was a
# table ``(thread_id text, seq bigint, checkpoint_id text, full_row, body)`` and a meta
# table holding the version and the key. Every row and the key are kept; the table is
# altered in place (rewritten once), so grants stay and so does its column order.
_UPGRADES: dict[int, tuple[str, ...]] = {
    4: _THREADS_TABLE,  # (its rows: ``backfill``)
    2: ("ALTER TABLE {checkpoints} ALTER COLUMN body SET STORAGE EXTERNAL",),
    3: (
        "ALTER TABLE {checkpoints} ALTER COLUMN checkpoint_id TYPE bytea USING" + _STORED_ID,
        "INSERT INTO {checkpoints} (thread_id, seq, checkpoint_id, full_row, body) "
        "SELECT {secret}, 0, '', false, convert_to(value, 'UTF8') FROM {meta} "
        "WHERE key = 'secret'",
        "DROP TABLE {meta}",
    ),
}


class SchemaTooNew(RuntimeError):
    """The database's tables were made by a newer research_fsm than this one."""

    def __init__(self, schema: str, found: int) -> None:
        self.schema = schema
        self.found = found
        super().__init__(
            f"the research_fsm tables in schema {schema!r} have layout version {found}; "
            f"this research_fsm knows up to {SCHEMA_VERSION}: upgrade research_fsm"
        )


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements, with its schema's table names filled in."""

    save: sql.Composed
    save_pruning: sql.Composed
    save_call: sql.Composed
    """``save`` and ``save_pruning`` in one call of the schema's save function."""
    leases_call: sql.Composed
    """The schema's lease function: unlock, lock and read in one statement (``leases``)."""
    load_latest: sql.Composed
    history: sql.Composed
    locate: sql.Composed
    """The thread's newest seq, and the seq of one of its checkpoints (``history`` pages)."""
    page: sql.Composed
    """The rows a page of ``history`` folds: from the full row at or below its oldest."""
    delete: sql.Composed
    read_secret: sql.Composed
    write_secret: sql.Composed

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        names = _names(schema)
        return cls(
            save=sql.SQL(_SAVE.format(prune="")).format(**names),
            save_pruning=sql.SQL(_SAVE.format(prune=_PRUNE)).format(**names),
            save_call=sql.SQL(
                "SELECT * FROM {save_fn}(%(thread)s::text, %(seq)s::bigint, %(id)s::bytea, "
                "%(parent)s::bytea, %(full)s::boolean, %(body)s::bytea, %(prune)s::boolean, "
                "%(below)s::bigint, %(oldest_kept)s::bigint, %(cid)s::text, %(status)s::text, "
                "%(node)s::text, %(updated)s::text, %(pthread)s::text)"
            ).format(**names),
            leases_call=sql.SQL(
                "SELECT * FROM {leases_fn}(%s::bigint[], %s::bigint[], %s::text[])"
            ).format(**names),
            load_latest=sql.SQL(_LOAD_LATEST).format(**names),
            history=sql.SQL(_HISTORY).format(**names),
            locate=sql.SQL(_LOCATE).format(**names),
            page=sql.SQL(_PAGE).format(**names),
            delete=sql.SQL(
                "WITH gone AS (DELETE FROM {threads} WHERE thread_id = %(thread)s) "
                "DELETE FROM {checkpoints} WHERE thread_id = %(thread)s"
            ).format(**names),
            read_secret=sql.SQL(
                "SELECT convert_from(body, 'UTF8') FROM {checkpoints} "
                "WHERE thread_id = {secret} AND seq = 0"
            ).format(**names),
            write_secret=sql.SQL(
                "INSERT INTO {checkpoints} (thread_id, seq, checkpoint_id, full_row, body) "
                "VALUES ({secret}, 0, '', false, convert_to(%s, 'UTF8')) "
                "ON CONFLICT (thread_id, seq) DO NOTHING"
            ).format(**names),
        )


def _names(schema: str) -> dict[str, sql.Composable]:
    return {
        "checkpoints": sql.Identifier(schema, "research_fsm_checkpoints"),
        "meta": sql.Identifier(schema, "research_fsm_meta"),
        "secret": sql.Literal(SECRET_THREAD),
        "threads": sql.Identifier(schema, "research_fsm_threads"),
        "threads_order": sql.Identifier("research_fsm_threads_order"),
        "save_fn": sql.Identifier(schema, "research_fsm_save_v2"),
        "leases_fn": sql.Identifier(schema, "research_fsm_leases_v1"),
    }


# One statement per save: insert after the expected parent (nothing when the parent
# is not the thread's latest), and report the checkpoint id now at that position (a
# retried save whose first try committed finds its own id there). Ids are
# ``rows.stored_id`` bytes. ``{prune}`` is empty, or ``_PRUNE`` for the saves that
# prune (full rows under ``keep``): most saves carry no DELETE to plan and run.
_SAVE = """
WITH ins AS (
    INSERT INTO {{checkpoints}} (thread_id, seq, checkpoint_id, full_row, body)
    SELECT %(thread)s, %(seq)s, %(id)s, %(full)s, %(body)s
    WHERE CASE WHEN %(parent)s::bytea IS NULL
        THEN %(seq)s = 1 AND NOT EXISTS (
            SELECT 1 FROM {{checkpoints}} WHERE thread_id = %(thread)s)
        ELSE EXISTS (
            SELECT 1 FROM {{checkpoints}}
            WHERE thread_id = %(thread)s AND seq = %(seq)s - 1
              AND checkpoint_id = %(parent)s)
    END
    ON CONFLICT (thread_id, seq) DO NOTHING
    RETURNING seq
), summary AS (
    INSERT INTO {{threads}} AS t
        (thread_id, updated_at, seq, status, node, parent_thread, checkpoint_id)
    SELECT %(thread)s, %(updated)s, %(seq)s, %(status)s, %(node)s, %(pthread)s, %(cid)s
    WHERE EXISTS (SELECT 1 FROM ins)
    ON CONFLICT (thread_id) DO UPDATE SET updated_at = EXCLUDED.updated_at,
        seq = EXCLUDED.seq, status = EXCLUDED.status, node = EXCLUDED.node,
        parent_thread = EXCLUDED.parent_thread, checkpoint_id = EXCLUDED.checkpoint_id
){prune}
SELECT EXISTS (SELECT 1 FROM ins),
       (SELECT checkpoint_id FROM {{checkpoints}} WHERE thread_id = %(thread)s AND seq = %(seq)s)
"""

# Prune what ``keep`` no longer needs, once the insert happened.
_PRUNE = """, pruned AS (
    DELETE FROM {checkpoints}
    WHERE thread_id = %(thread)s AND EXISTS (SELECT 1 FROM ins)
      AND seq < COALESCE(%(below)s::bigint, (
          SELECT max(seq) FROM {checkpoints}
          WHERE thread_id = %(thread)s AND full_row AND seq <= %(oldest_kept)s), 0)
)"""

# The newest full row and the changes rows after it: enough to rebuild the latest.
_LOAD_LATEST = """
SELECT seq, full_row, checkpoint_id, body FROM {checkpoints}
WHERE thread_id = %(thread)s AND seq >= (
    SELECT max(seq) FROM {checkpoints} WHERE thread_id = %(thread)s AND full_row)
ORDER BY seq
"""

_HISTORY = """
SELECT seq, full_row, checkpoint_id, body FROM {checkpoints}
WHERE thread_id = %(thread)s ORDER BY seq
"""

# A page of the history starts by finding the thread's newest seq (``keep`` counts from
# it) and the checkpoint the page is relative to: at the seq its id names (an engine's
# id starts with it, see ``research_fsm.engine.store.seq_hint``: one primary-key probe),
# else (an id of another kind) among the thread's rows. COALESCE evaluates the second
# look-up only when the first found nothing.
_LOCATE = """
SELECT (SELECT max(seq) FROM {checkpoints} WHERE thread_id = %(thread)s),
    COALESCE(
        (SELECT seq FROM {checkpoints}
         WHERE thread_id = %(thread)s AND seq = %(hint)s AND checkpoint_id = %(id)s),
        (SELECT seq FROM {checkpoints}
         WHERE thread_id = %(thread)s AND checkpoint_id = %(id)s LIMIT 1))
"""

# The rows below ``end`` from the newest full row at or below ``low`` (the page's oldest
# seq): a page folds at most one full row's worth of rows more than it shows.
_PAGE = """
SELECT seq, full_row, checkpoint_id, body FROM {checkpoints}
WHERE thread_id = %(thread)s AND seq < %(end)s AND seq >= COALESCE((
    SELECT max(seq) FROM {checkpoints}
    WHERE thread_id = %(thread)s AND full_row AND seq <= %(low)s), 0)
ORDER BY seq
"""

# A page of the thread listing, newest first: a backward scan of ``{threads_order}``
# from the cursor, each filter present only when asked for (so the plan stays that scan).
_THREADS = """
SELECT thread_id, status, node, updated_at, seq, parent_thread, checkpoint_id
FROM {threads} WHERE true"""
_THREADS_FILTERS = (
    " AND left(thread_id, %(prefix_length)s) = %(prefix)s",
    " AND status = ANY(%(statuses)s::text[])",
    " AND parent_thread IS NULL",
    ' AND (updated_at, thread_id) < (%(after_time)s::text COLLATE "C", '
    '%(after_thread)s::text COLLATE "C")',
)


def threads_statement(schema: str, filters: tuple[bool, bool, bool, bool]) -> sql.Composed:
    """The listing's statement with the filters asked for: (prefix, statuses, top-level
    only, after a cursor)."""
    text = _THREADS + "".join(f for f, on in zip(_THREADS_FILTERS, filters, strict=True) if on)
    text += "\nORDER BY updated_at DESC, thread_id DESC LIMIT %(limit)s"
    return sql.SQL(text).format(**_names(schema))


# Server-side functions (PL/pgSQL, versioned by name, created with the table or on the
# first start of a store that knows them; any store version reads the same rows). A
# call is a statement too small to take long to plan, and the function's own
# statements are planned once per server connection and kept, which a plain statement
# without server-side prepared statements never is (so they stay safe behind
# PgBouncer). Stores that may not create them run the plain statements above.

# ``_SAVE`` (and ``_PRUNE`` when ``p_prune``), one row: whether the row went in, and
# else the id now at ``p_seq`` (a retried save whose first try committed finds its own).
_SAVE_FUNCTION = """
CREATE OR REPLACE FUNCTION {save_fn}(
    p_thread text, p_seq bigint, p_id bytea, p_parent bytea, p_full boolean, p_body bytea,
    p_prune boolean, p_below bigint, p_oldest_kept bigint, p_cid text, p_status text,
    p_node text, p_updated text, p_parent_thread text
) RETURNS TABLE (inserted boolean, at_id bytea) LANGUAGE plpgsql AS {tag}
BEGIN
    IF (p_parent IS NULL AND p_seq = 1 AND NOT EXISTS (
            SELECT 1 FROM {checkpoints} c WHERE c.thread_id = p_thread))
        OR EXISTS (  -- (no row has a NULL id)
            SELECT 1 FROM {checkpoints} c
            WHERE c.thread_id = p_thread AND c.seq = p_seq - 1 AND c.checkpoint_id = p_parent)
    THEN
        INSERT INTO {checkpoints} (thread_id, seq, checkpoint_id, full_row, body)
        VALUES (p_thread, p_seq, p_id, p_full, p_body)
        ON CONFLICT (thread_id, seq) DO NOTHING;
        IF FOUND THEN
            INSERT INTO {threads} AS t
                (thread_id, updated_at, seq, status, node, parent_thread, checkpoint_id)
            VALUES (p_thread, p_updated, p_seq, p_status, p_node, p_parent_thread, p_cid)
            ON CONFLICT (thread_id) DO UPDATE SET updated_at = EXCLUDED.updated_at,
                seq = EXCLUDED.seq, status = EXCLUDED.status, node = EXCLUDED.node,
                parent_thread = EXCLUDED.parent_thread, checkpoint_id = EXCLUDED.checkpoint_id;
            IF p_prune THEN
                DELETE FROM {checkpoints} c
                WHERE c.thread_id = p_thread AND c.seq < COALESCE(p_below, (
                    SELECT max(o.seq) FROM {checkpoints} o
                    WHERE o.thread_id = p_thread AND o.full_row AND o.seq <= p_oldest_kept), 0);
            END IF;
            RETURN QUERY SELECT true, p_id;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT false, (
        SELECT c.checkpoint_id FROM {checkpoints} c
        WHERE c.thread_id = p_thread AND c.seq = p_seq);
END
{tag}
"""

# A lease round trip (``leases``): unlock ``p_unlock``, then lock each of ``p_lock`` and,
# when taken and its ``p_read`` names a thread, read that thread's rows as
# ``_LOAD_LATEST`` does (each read its own snapshot, taken after its lock). One row per
# row read, and one with NULL row columns for a lock with none.
_LEASES_FUNCTION = """
CREATE OR REPLACE FUNCTION {leases_fn}(p_unlock bigint[], p_lock bigint[], p_read text[])
RETURNS TABLE (lock_key bigint, taken boolean, row_seq bigint, row_full boolean,
               row_id bytea, row_body bytea) LANGUAGE plpgsql AS {tag}
DECLARE
    i integer;
BEGIN
    PERFORM pg_advisory_unlock(u) FROM unnest(p_unlock) AS u;
    FOR i IN 1 .. COALESCE(array_length(p_lock, 1), 0) LOOP
        lock_key := p_lock[i];
        taken := pg_try_advisory_lock(lock_key);
        IF taken AND p_read[i] IS NOT NULL THEN
            RETURN QUERY
                SELECT lock_key, taken, c.seq, c.full_row, c.checkpoint_id, c.body
                FROM {checkpoints} c
                WHERE c.thread_id = p_read[i] AND c.seq >= (
                    SELECT max(o.seq) FROM {checkpoints} o
                    WHERE o.thread_id = p_read[i] AND o.full_row)
                ORDER BY c.seq;
            CONTINUE WHEN FOUND;
        END IF;
        row_seq := NULL;
        row_full := NULL;
        row_id := NULL;
        row_body := NULL;
        RETURN NEXT;
    END LOOP;
END
{tag}
"""


async def migrate(conn: AsyncConnection[Any], schema: str) -> bool:
    """Create or upgrade the store's table in ``schema`` (one transaction); whether the
    schema has the store's functions (made here when missing and allowed)."""
    names = _names(schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cur.fetchone() is None:  # (a role with rights on its schema alone gets by)
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        found = await _layout(conn, schema, names["meta"])
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(schema, found)
        if found < SCHEMA_VERSION:
            await _upgrade(conn, found, names)
            if found:
                await _backfill(conn, names)
        return await _functions(conn, schema, names)


async def _backfill(conn: AsyncConnection[Any], names: dict[str, sql.Composable]) -> None:
    """The listing's row of every thread of an older layout, from its latest rows
    (once, in the upgrade's transaction)."""
    cur = await conn.execute(
        sql.SQL("SELECT DISTINCT thread_id FROM {checkpoints} WHERE thread_id <> {secret}").format(
            **names
        )
    )
    threads = [str(row[0]) for row in await cur.fetchall()]
    latest_rows = sql.SQL(_LOAD_LATEST).format(**names)
    insert = sql.SQL(
        "INSERT INTO {threads} (thread_id, updated_at, seq, status, node, parent_thread, "
        "checkpoint_id) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
    ).format(**names)
    for thread_id in threads:
        cur = await conn.execute(latest_rows, {"thread": thread_id})
        folder = Folder(thread_id)
        try:
            for seq, full, key, body in await cur.fetchall():
                folder.add(seq, full, bytes(key), bytes(body))
        except CorruptCheckpoint as exc:  # listed as the store reads it: not at all
            _log.warning("thread left out of the listing", thread_id=thread_id, error=str(exc))
            continue
        if folder.latest is None:
            continue
        info = thread_info(folder.latest, folder.latest.seq)
        await conn.execute(
            insert,
            (
                thread_id,
                info.updated_at,
                folder.latest.seq,
                info.status,
                info.node,
                info.parent_thread_id,
                info.checkpoint_id,
            ),
        )


async def _upgrade(
    conn: AsyncConnection[Any], found: int, names: dict[str, sql.Composable]
) -> None:
    steps = (
        (*_CREATE, *_THREADS_TABLE)
        if found == 0
        else [step for n in range(found + 1, SCHEMA_VERSION + 1) for step in _UPGRADES[n]]
    )
    for statement in steps:
        await conn.execute(sql.SQL(statement).format(**names))
    await conn.execute(
        sql.SQL(
            "CREATE OR REPLACE VIEW {meta} (key, value) AS "
            "VALUES ('schema_version'::text, {version}::text)"
        ).format(version=sql.Literal(str(SCHEMA_VERSION)), **names)
    )


_FUNCTION_NAMES = ("research_fsm_save_v2", "research_fsm_leases_v1")


async def _functions(
    conn: AsyncConnection[Any], schema: str, names: dict[str, sql.Composable]
) -> bool:
    """Whether ``schema`` has the store's functions as this version writes them and this
    role may call them, (re)creating them when missing or different (a renamed schema,
    a hand edit); ``False`` (logged) when it may not: the plain statements serve instead."""
    tag = "$fn$"  # quotes the bodies: one the schema's name cannot end early
    while tag in schema:
        tag = f"$fn{secrets.token_hex(4)}$"
    statements = [
        sql.SQL(text).format(tag=sql.SQL(tag), **names).as_string(conn)
        for text in (_SAVE_FUNCTION, _LEASES_FUNCTION)
    ]
    wanted = {
        name: (text.split(tag)[1], True)
        for name, text in zip(_FUNCTION_NAMES, statements, strict=True)
    }
    if await _found_functions(conn, schema) == wanted:
        return True
    try:
        async with conn.transaction():  # a savepoint: a refusal leaves the rest standing
            for statement in statements:
                await conn.execute(statement.encode())
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedObject) as exc:
        reason = str(exc).strip().splitlines()[0]
    else:
        if await _found_functions(conn, schema) == wanted:
            return True
        reason = "no EXECUTE privilege on them"
    _log.warning(
        "cannot use the store's functions; using plain statements (slower saves)",
        schema=schema,
        reason=reason,
    )
    return False


async def _found_functions(conn: AsyncConnection[Any], schema: str) -> dict[str, tuple[str, bool]]:
    """The store's functions in ``schema``: each one's body and whether this role may call it."""
    cur = await conn.execute(
        "SELECT p.proname, p.prosrc, has_function_privilege(p.oid, 'EXECUTE') "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %s AND p.proname = ANY(%s)",
        (schema, list(_FUNCTION_NAMES)),
    )
    return {name: (body, bool(can)) for name, body, can in await cur.fetchall()}


async def _layout(conn: AsyncConnection[Any], schema: str, meta: sql.Composable) -> int:
    """The layout version of ``schema``'s tables (0: none yet), from the meta view or table."""
    cur = await conn.execute(
        "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = 'research_fsm_meta'",
        (schema,),
    )
    if await cur.fetchone() is None:
        return 0
    cur = await conn.execute(
        sql.SQL("SELECT value FROM {} WHERE key = 'schema_version'").format(meta)
    )
    row = await cur.fetchone()
    return int(str(row[0])) if row is not None else 0
