"""The Postgres store's table layout 3: one table, ids as bytes, the key in a reserved row,
the version in a view; layouts 1 and 2 migrate to it keeping every row and the key."""

from __future__ import annotations

import asyncio
import secrets
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from engine.helpers import chain

from research_fsm.engine import Checkpoint, CheckpointConflict, MemoryCheckpointStore
from research_fsm.engine._tokens import sign, verify

from .helpers import sql
from .test_store_contract import checkpoint, state_of

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore, SchemaTooNew  # noqa: E402
from research_fsm.stores.postgres.rows import encode, slide, stored_id  # noqa: E402

Make = Callable[..., PostgresCheckpointStore]
ODD_IDS = ["aaaaaaaaaaaa", "x" * 11, "übung-ü", "ABCDEF" * 4, "616161616161616161616161"]
"""Ids the engine never makes (12 and 11 bytes, not ASCII, upper-case hex) and one it
could (whose 12 bytes are the UTF-8 of the first one)."""


def relations(server: Any, schema: str) -> list[tuple[str, str]]:
    """``(name, relkind)`` of every relation in ``schema``."""
    return sql(
        server,
        "SELECT relname::text, relkind::text FROM pg_class "
        "WHERE relnamespace = %s::regnamespace ORDER BY relname",
        schema,
    )


TABLES = [
    ("research_fsm_checkpoints", "r"),
    ("research_fsm_checkpoints_pkey", "i"),
    ("research_fsm_meta", "v"),
    ("research_fsm_threads", "r"),
    ("research_fsm_threads_order", "i"),
    ("research_fsm_threads_pkey", "i"),
]
"""The relations of a layout-4 schema: the checkpoints table and its key index, the
thread listing's table with its key and its order's index; the meta is a view."""


def seen(cp: Checkpoint) -> tuple[Any, ...]:
    """What a checkpoint read back must keep."""
    return (cp.checkpoint_id, cp.parent_id, cp.seq, cp.status, cp.next, state_of(cp))


async def test_a_new_schema_has_one_table_and_the_version_in_a_view(
    pg: Make, postgres_server: Any
) -> None:
    """A fresh schema gets the checkpoints table (holding the key too), the listing's table
    and a meta view saying 4."""
    await pg().secret()
    await pg().load_latest("t")  # a second store migrates nothing
    schema = pg.schema  # type: ignore[attr-defined]
    assert TABLES == relations(postgres_server, schema)
    assert [("4",)] == sql(
        postgres_server,
        f"SELECT value FROM {schema}.research_fsm_meta WHERE key = 'schema_version'",
    )


async def test_a_newer_layout_is_refused(pg: Make, postgres_server: Any) -> None:
    """A schema whose version view says 99 raises SchemaTooNew asking to upgrade research_fsm."""
    await pg().load_latest("t")
    meta = f"{pg.schema}.research_fsm_meta"  # type: ignore[attr-defined]
    sql(
        postgres_server,
        f"CREATE OR REPLACE VIEW {meta} (key, value) "
        "AS VALUES ('schema_version'::text, '99'::text)",
    )
    with pytest.raises(SchemaTooNew, match=r"version 99.*upgrade research_fsm"):
        await pg().load_latest("t")


async def test_layout_2_code_reads_the_current_layout_as_too_new(
    pg: Make, postgres_server: Any
) -> None:
    """Layout 2's own version check on a layout-4 schema reads 4 and creates no meta table."""
    await pg().load_latest("t")
    schema = pg.schema  # type: ignore[attr-defined]
    meta = f"{schema}.research_fsm_meta"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn, conn.transaction():
        # the first statements of layout 2's migrate(), verbatim
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)"
        )
        found = conn.execute(f"SELECT value FROM {meta} WHERE key = 'schema_version'").fetchall()
    assert ([("4",)], TABLES) == (found, relations(postgres_server, schema))


async def test_concurrent_first_opens_create_one_table_and_one_key(
    pg: Make, postgres_server: Any
) -> None:
    """Six stores opening a fresh schema at once migrate once and all get one shared key."""
    stores = [pg(pool_size=1) for _ in range(6)]
    keys = await asyncio.gather(*(store.secret() for store in stores))
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    rows = sql(postgres_server, f"SELECT thread_id, seq, length(body) FROM {table}")
    assert ([keys[0]] * 6, [(".secret", 0, 64)]) == (keys, rows)


async def test_ids_are_stored_as_bytes_and_read_back_as_given(
    pg: Make, postgres_server: Any
) -> None:
    """Engine ids take 12 bytes, others their UTF-8; every id reads back as given, none mixed up."""
    store = pg()
    parent = None
    for seq, cid in enumerate(ODD_IDS, 1):
        await store.save(checkpoint(seq, parent, checkpoint_id=cid, changes=None))
        parent = cid
    await chain("a", store=store).run({}, thread_id="engine")
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    expected = [b"aaaaaaaaaaaa\xff", b"x" * 11, "übung-ü".encode(), b"ABCDEF" * 4, b"a" * 12]
    ids = f"SELECT checkpoint_id FROM {table} WHERE thread_id = %s ORDER BY seq"
    assert [(key,) for key in expected] == sql(postgres_server, ids, "t")
    assert ODD_IDS[::-1] == [cp.checkpoint_id async for cp in pg().history("t")]
    engine = [cp.checkpoint_id async for cp in pg().history("engine")][::-1]
    assert [(bytes.fromhex(cid),) for cid in engine] == sql(postgres_server, ids, "engine")
    with pytest.raises(CheckpointConflict):  # b"a" * 12 is the newest id, "aaaaaaaaaaaa" is not
        await pg().save(checkpoint(6, "aaaaaaaaaaaa"))
    await pg().save(checkpoint(6, ODD_IDS[-1]))


class Recording(MemoryCheckpointStore):
    """A memory store asking for ``changes`` (as the Postgres store does), to make old rows from."""

    saves_changes = True


def old_rows(layout: int, saved: list[Checkpoint]) -> list[tuple[Any, ...]]:
    """``saved`` as layout 1 (plain JSON bodies) or 2 (raw deflate against the rows before,
    tag 1; every fourth row full) wrote them: ``(thread, seq, id, full, body)``."""
    rows, windows = [], {}
    for cp in saved:
        full = cp.changes is None or cp.seq % 4 == 0
        raw = encode(cp, full=full)
        window = b"" if full else windows[cp.thread_id]
        body = raw
        if layout == 2:
            packer = (
                zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=window)
                if window
                else zlib.compressobj(9, zlib.DEFLATED, -15, 9)
            )
            body = b"\x01" + packer.compress(raw) + packer.flush()
        rows.append((cp.thread_id, cp.seq, cp.checkpoint_id, full, body))
        windows[cp.thread_id] = slide(window, raw)
    return rows


def make_old_schema(server: Any, schema: str, layout: int, rows: list[Any], key: str) -> None:
    """The tables of layout ``layout`` as its research_fsm made them, with ``rows`` and ``key``."""
    table, meta = f"{schema}.research_fsm_checkpoints", f"{schema}.research_fsm_meta"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {meta} (key text PRIMARY KEY, value text NOT NULL)")
        conn.execute(
            f"CREATE TABLE {table} (thread_id text NOT NULL, seq bigint NOT NULL, "
            "checkpoint_id text NOT NULL, full_row boolean NOT NULL, body bytea NOT NULL, "
            "PRIMARY KEY (thread_id, seq))"
        )
        if layout == 2:
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN body SET STORAGE EXTERNAL")
        conn.execute(
            f"INSERT INTO {meta} VALUES ('schema_version', %s), ('secret', %s)", (str(layout), key)
        )
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)", rows)


async def recorded_threads() -> dict[str, list[Checkpoint]]:
    """Thread ``t``: three engine runs (changes rows); ``odd``: full rows with ``ODD_IDS``."""
    recording = Recording()
    app = chain("a", "b", "c", store=recording)
    for _ in range(3):
        await app.run({}, thread_id="t")
    parent = None
    for seq, cid in enumerate(ODD_IDS, 1):
        await recording.save(checkpoint(seq, parent, thread="odd", checkpoint_id=cid, changes=None))
        parent = cid
    return {t: [cp async for cp in recording.history(t)] for t in ("t", "odd")}


@pytest.mark.parametrize("layout", [1, 2])
async def test_an_old_layout_migrates_keeping_every_row_and_the_key(
    pg: Make, postgres_server: Any, layout: int
) -> None:
    """Layout 1 or 2 tables open as 4: rows read back equal, old tokens verify, threads go on,
    and the listing shows each thread as its latest checkpoint says."""
    saved = await recorded_threads()
    key = secrets.token_hex(32)
    newest = saved["t"][0].checkpoint_id
    token = await sign(MemoryCheckpointStore(secret=bytes.fromhex(key)), "t", newest)
    schema = pg.schema  # type: ignore[attr-defined]
    every = [cp for t in ("t", "odd") for cp in reversed(saved[t])]
    make_old_schema(postgres_server, schema, layout, old_rows(layout, every), key)

    store = pg()
    for thread, history in saved.items():
        assert [seen(cp) for cp in history] == [seen(cp) async for cp in store.history(thread)]
        assert seen(history[0]) == seen(await pg().load_latest(thread))  # type: ignore[arg-type]
    assert bytes.fromhex(key) == await store.secret()
    await verify(pg(), token)
    assert TABLES == relations(postgres_server, schema)
    listed = {
        t.thread_id: (t.checkpoint_id, t.checkpoints) for t in (await store.threads()).threads
    }
    assert listed == {t: (h[0].checkpoint_id, len(h)) for t, h in saved.items()}
    ids = f"SELECT checkpoint_id FROM {schema}.research_fsm_checkpoints WHERE thread_id = 'odd'"
    assert [(stored_id(cid),) for cid in ODD_IDS] == sql(postgres_server, ids + " ORDER BY seq")
    await pg().save(checkpoint(len(ODD_IDS) + 1, ODD_IDS[-1], thread="odd"))
    assert 12 == (await chain("a", "b", "c", store=pg()).run({}, thread_id="t")).state.n
    after = [cp.seq async for cp in pg().history("t")]
    newest = f"SELECT substr(body, 1, 1) FROM {schema}.research_fsm_checkpoints "
    newest += "WHERE thread_id = 't' ORDER BY seq DESC LIMIT 1"
    assert (list(range(len(after), 0, -1)), [(b"\x02",)]) == (after, sql(postgres_server, newest))
