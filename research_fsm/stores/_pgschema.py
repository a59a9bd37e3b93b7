"""The tables of ``PostgresCheckpointStore``, their migrations and the statements it runs.

Every statement is plain SQL with client-side parameters: nothing is prepared on
the server, so the store works behind PgBouncer in transaction mode. Migrations
run in one transaction under a transaction-level advisory lock (also safe behind
PgBouncer), so stores starting together on several machines migrate once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection, sql

__all__ = ["SCHEMA_VERSION", "SchemaTooNew", "Statements", "migrate"]

SCHEMA_VERSION = 2
"""The newest table layout this version of the store creates and reads (2: bodies may be
compressed, see ``_pgrows``; an older store would take them for damage, so it must refuse)."""

_MIGRATE_LOCK = 0x7265_7366_6D01  # pg_advisory_xact_lock key for migrations ("resfm")

# Each entry takes the tables from the version before it to the next one.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE {checkpoints} (
        thread_id text NOT NULL,
        seq bigint NOT NULL,
        checkpoint_id text NOT NULL,
        full_row boolean NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (thread_id, seq)
    );
    """,
    # 2: bodies come compressed (``_pgrows.pack``): Postgres need not try again
    """
    ALTER TABLE {checkpoints} ALTER COLUMN body SET STORAGE EXTERNAL;
    """,
)


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
    load_latest: sql.Composed
    history: sql.Composed
    delete: sql.Composed
    read_secret: sql.Composed
    write_secret: sql.Composed

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        names = _names(schema)
        return cls(
            save=sql.SQL(_SAVE).format(**names),
            load_latest=sql.SQL(_LOAD_LATEST).format(**names),
            history=sql.SQL(_HISTORY).format(**names),
            delete=sql.SQL("DELETE FROM {checkpoints} WHERE thread_id = %s").format(**names),
            read_secret=sql.SQL("SELECT value FROM {meta} WHERE key = 'secret'").format(**names),
            write_secret=sql.SQL(
                "INSERT INTO {meta} (key, value) VALUES ('secret', %s) ON CONFLICT (key) DO NOTHING"
            ).format(**names),
        )


def _names(schema: str) -> dict[str, sql.Composable]:
    return {
        "checkpoints": sql.Identifier(schema, "research_fsm_checkpoints"),
        "meta": sql.Identifier(schema, "research_fsm_meta"),
    }


# One statement per save: insert after the expected parent (nothing when the parent
# is not the thread's latest), prune what ``keep`` no longer needs, and report the
# checkpoint id now at that position (a retried save whose first try committed
# finds its own id there).
_SAVE = """
WITH ins AS (
    INSERT INTO {checkpoints} (thread_id, seq, checkpoint_id, full_row, body)
    SELECT %(thread)s, %(seq)s, %(id)s, %(full)s, %(body)s
    WHERE CASE WHEN %(parent)s::text IS NULL
        THEN %(seq)s = 1 AND NOT EXISTS (
            SELECT 1 FROM {checkpoints} WHERE thread_id = %(thread)s)
        ELSE EXISTS (
            SELECT 1 FROM {checkpoints}
            WHERE thread_id = %(thread)s AND seq = %(seq)s - 1
              AND checkpoint_id = %(parent)s)
    END
    ON CONFLICT (thread_id, seq) DO NOTHING
    RETURNING seq
), pruned AS (
    DELETE FROM {checkpoints}
    WHERE %(prune)s AND thread_id = %(thread)s AND EXISTS (SELECT 1 FROM ins)
      AND seq < COALESCE(%(below)s::bigint, (
          SELECT max(seq) FROM {checkpoints}
          WHERE thread_id = %(thread)s AND full_row AND seq <= %(oldest_kept)s), 0)
)
SELECT EXISTS (SELECT 1 FROM ins),
       (SELECT checkpoint_id FROM {checkpoints} WHERE thread_id = %(thread)s AND seq = %(seq)s)
"""

# The newest full row and the changes rows after it: enough to rebuild the latest.
_LOAD_LATEST = """
SELECT seq, full_row, body FROM {checkpoints}
WHERE thread_id = %(thread)s AND seq >= (
    SELECT max(seq) FROM {checkpoints} WHERE thread_id = %(thread)s AND full_row)
ORDER BY seq
"""

_HISTORY = """
SELECT seq, full_row, body FROM {checkpoints} WHERE thread_id = %(thread)s ORDER BY seq
"""


async def migrate(conn: AsyncConnection[Any], schema: str) -> None:
    """Create or upgrade the store's tables in ``schema`` (one transaction)."""
    names = _names(schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)"
            ).format(**names)
        )
        cur = await conn.execute(
            sql.SQL("SELECT value FROM {meta} WHERE key = 'schema_version'").format(**names)
        )
        row = await cur.fetchone()
        found = int(str(row[0])) if row is not None else 0
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(schema, found)
        for script in _MIGRATIONS[found:]:
            await conn.execute(sql.SQL(script).format(**names))
        if found < SCHEMA_VERSION:
            await conn.execute(
                sql.SQL(
                    "INSERT INTO {meta} (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
                ).format(**names),
                (str(SCHEMA_VERSION),),
            )
