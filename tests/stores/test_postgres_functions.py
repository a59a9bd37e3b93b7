"""The PostgreSQL store's server-side functions: made with the tables, called by saves
and lease round trips, and plain statements for a role that may not create them."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from engine.helpers import chain
from structlog.testing import capture_logs

from research_fsm.engine import StoreWriteError

from .helpers import sql

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from psycopg.conninfo import make_conninfo  # noqa: E402

from research_fsm.stores.postgres import PostgresCheckpointStore  # noqa: E402

FUNCTIONS = ("research_fsm_leases_v1", "research_fsm_save_v2")


@pytest.fixture
async def schema(postgres_server: Any) -> AsyncIterator[str]:
    """A fresh schema name, dropped (with whatever the test made in it) afterwards."""
    name = f"fn_{secrets.token_hex(6)}"
    yield name
    sql(postgres_server.dsn, f"DROP SCHEMA IF EXISTS {name} CASCADE")


def functions_in(dsn: str, schema: str) -> list[str]:
    rows = sql(
        dsn,
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %s ORDER BY 1",
        schema,
    )
    return [r[0] for r in rows]


async def test_a_new_schema_gets_the_functions_and_saves_call_them(
    postgres_server: Any, schema: str
) -> None:
    """The first store makes both functions; a save goes through the save function."""
    store = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    try:
        app = chain("a", "b", store=store)
        assert 2 == (await app.run({}, thread_id="t")).state.n
        assert list(FUNCTIONS) == functions_in(postgres_server.dsn, schema)
        sql(postgres_server.dsn, f"DROP FUNCTION {schema}.research_fsm_save_v2")
        sql(
            postgres_server.dsn,
            f"CREATE FUNCTION {schema}.research_fsm_save_v2("
            "text, bigint, bytea, bytea, boolean, bytea, boolean, bigint, bigint, "
            "text, text, text, text, text) "
            "RETURNS TABLE (inserted boolean, at_id bytea) LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'the save function was called'; END $$",
        )
        with pytest.raises(StoreWriteError, match="the save function was called"):
            await app.run({}, thread_id="t")
    finally:
        await store.aclose()


async def test_lease_reads_through_the_function_see_the_last_holders_saves(
    postgres_server: Any, schema: str
) -> None:
    """Turns alternating between two stores each continue from the other's last save."""
    one = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    two = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    try:
        apps = [chain("a", "b", store=one), chain("a", "b", store=two)]
        results = [(await apps[turn % 2].run({}, thread_id="t")).state.n for turn in range(6)]
        assert [2, 4, 6, 8, 10, 12] == results
        lease, rows = await one._leases.acquire("fresh", read=True)
        assert [] == rows
        await lease.release()
    finally:
        await one.aclose()
        await two.aclose()


@pytest.mark.parametrize(
    ("functions", "expected"),
    [("missing", "plain"), ("present", "functions"), ("not callable", "plain")],
)
async def test_a_role_that_may_not_create_functions(
    postgres_server: Any, schema: str, functions: str, expected: str
) -> None:
    """Tables made by an owner, a role with only row rights: it uses the functions the owner
    made and it may call, else plain statements (with a warning); either way it works."""
    owner = PostgresCheckpointStore(postgres_server.dsn, schema=schema)
    await owner._open()
    await owner.aclose()
    for name in FUNCTIONS:
        if functions == "missing":
            sql(postgres_server.dsn, f"DROP FUNCTION {schema}.{name}")
        elif functions == "not callable":
            sql(postgres_server.dsn, f"REVOKE EXECUTE ON FUNCTION {schema}.{name} FROM PUBLIC")
    role = f"r_{secrets.token_hex(4)}"
    sql(postgres_server.dsn, f"CREATE ROLE {role} LOGIN")
    sql(postgres_server.dsn, f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    sql(
        postgres_server.dsn,
        f"GRANT SELECT, INSERT, DELETE ON {schema}.research_fsm_checkpoints TO {role}",
    )
    sql(
        postgres_server.dsn,
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.research_fsm_threads TO {role}",
    )
    sql(postgres_server.dsn, f"GRANT SELECT ON {schema}.research_fsm_meta TO {role}")
    dsn = make_conninfo(postgres_server.dsn, user=role)
    stores = [PostgresCheckpointStore(dsn, schema=schema) for _ in range(2)]
    try:
        with capture_logs() as logs:
            apps = [chain("a", "b", store=store) for store in stores]
            results = [(await apps[turn % 2].run({}, thread_id="t")).state.n for turn in range(4)]
        assert [2, 4, 6, 8] == results
        made = [] if functions == "missing" else list(FUNCTIONS)
        assert made == functions_in(postgres_server.dsn, schema)
        calls = b"research_fsm_save_v2" in stores[0]._queries["save"]
        assert (expected == "functions") == calls
        warned = [e for e in logs if "cannot use the store's functions" in e["event"]]
        assert ([schema, schema] if expected == "plain" else []) == [e["schema"] for e in warned]
    finally:
        for store in stores:
            await store.aclose()
        sql(postgres_server.dsn, f"DROP OWNED BY {role}")
        sql(postgres_server.dsn, f"DROP ROLE {role}")


async def test_a_renamed_schema_gets_its_functions_rewritten(postgres_server: Any) -> None:
    """After ALTER SCHEMA ... RENAME the functions would name the old table: they are
    made again, and saves land in the renamed schema's table."""
    old, new = f"old_{secrets.token_hex(4)}", f"new_{secrets.token_hex(4)}"
    first = PostgresCheckpointStore(postgres_server.dsn, schema=old)
    try:
        assert 2 == (await chain("a", "b", store=first).run({}, thread_id="t")).state.n
    finally:
        await first.aclose()
    sql(postgres_server.dsn, f"ALTER SCHEMA {old} RENAME TO {new}")
    sql(postgres_server.dsn, f"CREATE SCHEMA {old}")  # a decoy the stale bodies would name
    sql(
        postgres_server.dsn,
        f"CREATE TABLE {old}.research_fsm_checkpoints (LIKE {new}.research_fsm_checkpoints)",
    )
    second = PostgresCheckpointStore(postgres_server.dsn, schema=new)
    try:
        assert 4 == (await chain("a", "b", store=second).run({}, thread_id="t")).state.n
        count = "SELECT count(*) FROM {}.research_fsm_checkpoints WHERE thread_id = 't'"
        assert [(6,)] == sql(postgres_server.dsn, count.format(new))
        assert [(0,)] == sql(postgres_server.dsn, count.format(old))
    finally:
        await second.aclose()
        for name in (old, new):
            sql(postgres_server.dsn, f"DROP SCHEMA IF EXISTS {name} CASCADE")


async def test_a_schema_whose_name_holds_the_body_quote_still_works(
    postgres_server: Any,
) -> None:
    """A schema named with ``$fn$`` in it gets its functions (the bodies' quote changes)."""
    name = f"we$fn${secrets.token_hex(3)}"
    store = PostgresCheckpointStore(postgres_server.dsn, schema=name)
    try:
        app = chain("a", "b", store=store)
        assert 2 == (await app.run({}, thread_id="t")).state.n
        assert list(FUNCTIONS) == functions_in(postgres_server.dsn, name)
    finally:
        await store.aclose()
        sql(postgres_server.dsn, f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def test_lease_reads_are_read_committed_whatever_the_database_default(
    postgres_server: Any, schema: str
) -> None:
    """A database defaulting to repeatable read: lease connections still read committed."""
    db = f"rr_{secrets.token_hex(4)}"
    sql(postgres_server.dsn, f"CREATE DATABASE {db}")
    sql(
        postgres_server.dsn,
        f"ALTER DATABASE {db} SET default_transaction_isolation = 'repeatable read'",
    )
    dsn = make_conninfo(postgres_server.dsn, dbname=db)
    store = PostgresCheckpointStore(dsn, schema=schema)
    try:
        lease = await store.acquire("t")
        conn = await store._leases._shard(store._leases.key("t"))._open()
        cur = await conn.execute("SHOW transaction_isolation")
        assert ("read committed",) == await cur.fetchone()
        assert [("repeatable read",)] == sql(dsn, "SHOW transaction_isolation")
        await lease.release()
    finally:
        await store.aclose()
        sql(postgres_server.dsn, f"DROP DATABASE {db}")
