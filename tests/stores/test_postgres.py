"""What only the PostgreSQL store has: rows, leases across connections, schema, the driver extra."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import chain
from engine.test_parallel import Asker, specialists
from pydantic import BaseModel

from research_fsm.engine import CorruptCheckpoint, ThreadBusy

from .helpers import sql

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import (  # noqa: E402
    PostgresCheckpointStore,
    StoreUnavailable,
)

REPO = Path(__file__).resolve().parents[2]
Make = Callable[..., PostgresCheckpointStore]


class Big(BaseModel):
    """A state with a large field that one node sets and later nodes leave alone."""

    blob: str = ""
    n: int = 0


async def test_a_step_saves_a_change_row_not_the_whole_state(
    pg: Make, postgres_server: Any
) -> None:
    """After a full first row, a step changing one small field writes a row of a few hundred bytes."""
    from research_fsm.engine import END, START, StateGraph

    async def fill(state: Big) -> dict[str, Any]:
        return {"blob": "x" * 100_000}

    async def bump(state: Big) -> dict[str, Any]:
        return {"n": state.n + 1}

    graph = StateGraph(Big)
    for name, node in (("fill", fill), ("b1", bump), ("b2", bump), ("b3", bump)):
        graph.add_node(name, node)
    graph.add_edge(START, "fill")
    graph.add_edge("fill", "b1")
    graph.add_edge("b1", "b2")
    graph.add_edge("b2", "b3")
    graph.add_edge("b3", END)
    app = graph.compile(store=pg())
    result = await app.run({}, thread_id="t")
    rows = sql(
        postgres_server,
        f"SELECT seq, full_row, length(body) FROM {pg.schema}.research_fsm_checkpoints "  # type: ignore[attr-defined]
        "WHERE thread_id = 't' ORDER BY seq",
    )
    assert [True, False, False, False, False] == [full for _, full, _ in rows]
    assert max(size for seq, _, size in rows if seq > 2) < 1000  # after the step that set blob
    assert (3, 100_000) == (result.state.n, len(result.state.blob))
    fresh = graph.compile(store=pg())
    snapshot = await fresh.get_state("t")
    assert snapshot is not None
    assert (3, 100_000) == (snapshot.state.n, len(snapshot.state.blob))


async def test_keep_bounds_the_rows_on_the_server(pg: Make, postgres_server: Any) -> None:
    """With keep=3 a long thread keeps at most 2*keep rows; the newest 3 are its history."""
    store = pg(keep=3)
    app = chain("a", "b", "c", "d", "e", store=store)
    for _ in range(10):
        await app.run({}, thread_id="t")
    count = sql(
        postgres_server,
        f"SELECT count(*) FROM {pg.schema}.research_fsm_checkpoints",  # type: ignore[attr-defined]
    )[0][0]
    assert count <= 6
    assert [50, 49, 48] == [s.state.n async for s in app.history("t")]
    await store.delete("t")
    assert [(0,)] == sql(
        postgres_server,
        f"SELECT count(*) FROM {pg.schema}.research_fsm_checkpoints",  # type: ignore[attr-defined]
    )


def plain(store: PostgresCheckpointStore) -> None:
    """Make an opened ``store`` run the plain statements, as when it may not create functions."""
    store._use(store._rendered, functions=False)


async def opened_chain(pg: Make, functions: bool, **kwargs: Any) -> Any:
    """An opened store on ``pg``'s schema (the plain statements without ``functions``) and
    a 3-node chain on it, for the tests that break one of its statements first."""
    store = pg(**kwargs)
    await store._open()
    if not functions:
        plain(store)
    return store, chain("a", "b", "c", store=store)


def table(pg: Make) -> str:
    """The checkpoints table of ``pg``'s schema."""
    return f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]


@pytest.mark.parametrize("functions", [True, False], ids=["functions", "plain"])
async def test_saves_without_keep_never_send_the_pruning_statement(
    pg: Make, postgres_server: Any, functions: bool
) -> None:
    """With no keep every save goes without the DELETE: a broken pruning statement is never run."""
    store, app = await opened_chain(pg, functions)
    expected = (False, False) if functions else (False, True)
    assert expected == tuple(b"DELETE" in store._queries[k] for k in ("save", "save_pruning"))
    store._queries["save_pruning"] = b"SELECT 1/0"
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="t")
    assert [(8,)] == sql(postgres_server, f"SELECT count(*) FROM {table(pg)}")


@pytest.mark.parametrize("functions", [True, False], ids=["functions", "plain"])
async def test_saves_under_keep_one_prune_with_the_pruning_statement(
    pg: Make, postgres_server: Any, functions: bool
) -> None:
    """With keep=1 every save is a full row that prunes: one row stays, plain save never run."""
    store, app = await opened_chain(pg, functions, keep=1)
    store._queries["save"] = b"SELECT 1/0"
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="t")
    assert [(8,)] == sql(postgres_server, f"SELECT seq FROM {table(pg)}")
    assert [6] == [s.state.n async for s in app.history("t")]


async def test_branch_records_load_back_in_a_fresh_store(pg: Make) -> None:
    """A new store on the same tables rebuilds a suspended fan-out; resumes finish it."""
    calls: list[str] = []

    def app_on(store: PostgresCheckpointStore) -> Any:
        market, product = Asker("market", calls), Asker("product", calls)
        return specialists(store, calls, market=market, product=product).compile(store=store)

    first = app_on(pg())
    result = await first.run({}, thread_id="t")
    before = [(s.status, s.branches, s.next) async for s in first.history("t")]
    second = app_on(pg())
    assert before == [(s.status, s.branches, s.next) async for s in second.history("t")]
    await second.resume(result.suspensions[1].token, "P")
    done = await app_on(pg()).resume(str(result.suspensions[0].token), "M")
    assert ["market=M", "product=P"] == done.state.log[-2:]


async def test_lease_is_exclusive_across_stores_and_ends_with_its_connection(
    pg: Make, postgres_server: Any
) -> None:
    """Two stores on one database (two machines) exclude each other; a killed holder's lease ends."""
    mine, theirs = pg(), pg()
    lease = await mine.acquire("t")
    with pytest.raises(ThreadBusy):
        await theirs.acquire("t")
    # The holder's lease connections die (as when its machine or process dies).
    sql(
        postgres_server,
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
        "AND pid <> pg_backend_pid()",
    )
    # pg_terminate_backend only signals: the backend ends (and drops its locks) just after
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        try:
            taken = await theirs.acquire("t")
            break
        except ThreadBusy:
            assert asyncio.get_running_loop().time() < deadline, "lease still held 5 s later"
            await asyncio.sleep(0.01)
    await taken.release()
    await lease.release()  # harmless after the connection is gone


async def test_a_dropped_connection_between_runs_is_replaced(
    pg: Make, postgres_server: Any
) -> None:
    """Every server connection killed between two runs (idle kill, restart): the next run works."""
    store = pg()
    app = chain("a", "b", store=store)
    await app.run({}, thread_id="t")
    sql(
        postgres_server,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    )
    assert 4 == (await app.run({}, thread_id="t")).state.n
    assert 6 == len([s async for s in app.history("t")])  # 3 checkpoints a run


async def test_no_server_side_prepared_statements(pg: Make, postgres_server: Any) -> None:
    """Saves and loads prepare nothing on the server, so PgBouncer transaction mode is safe."""
    store = pg(pool_size=1)
    app = chain("a", "b", store=store)
    for _ in range(8):
        await app.run({}, thread_id="t")

    async def prepared(conn: Any) -> list[Any]:
        cur = await conn.execute("SELECT name FROM pg_prepared_statements")
        return list(await cur.fetchall())

    assert [] == await store._run(None, "test", prepared)


async def test_unreachable_server_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    """A DSN naming no server raises StoreUnavailable; neither it nor repr shows the password."""
    dsn = f"host={tmp_path} port=1 user=u password=hunter2 dbname=d connect_timeout=2"
    store = PostgresCheckpointStore(dsn)
    assert "hunter2" not in repr(store)
    with pytest.raises(StoreUnavailable) as info:
        await store.load_latest("t")
    assert "hunter2" not in str(info.value)
    await store.aclose()


async def test_a_damaged_or_newer_row_is_corrupt_checkpoint_naming_the_thread(
    pg: Make, postgres_server: Any
) -> None:
    """A row that is not JSON, or written by a newer row format, raises CorruptCheckpoint naming it."""
    app = chain("a", "b", store=pg())
    await app.run({}, thread_id="t")
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    newest = f"UPDATE {table} SET body = %s WHERE seq = (SELECT max(seq) FROM {table})"
    sql(postgres_server, newest, b"not json")
    with pytest.raises(CorruptCheckpoint, match="thread `t`: checkpoint row 3: not JSON"):
        await pg().load_latest("t")
    sql(postgres_server, newest, b'{"v": 99}')
    with pytest.raises(CorruptCheckpoint, match=r"row version 99.*upgrade research_fsm"):
        await pg().load_latest("t")
    sql(postgres_server, newest, b"\x07compressed by a newer format")
    with pytest.raises(CorruptCheckpoint, match=r"row format 7.*upgrade research_fsm"):
        await pg().load_latest("t")
    sql(postgres_server, newest, b"\x01not deflate")
    with pytest.raises(CorruptCheckpoint, match="checkpoint row 3: cannot decompress"):
        await pg().load_latest("t")


async def test_a_thread_of_a_newer_row_format_does_not_stop_the_listing(
    pg: Make, postgres_server: Any
) -> None:
    """One thread's newest row written by a newer version: the listing (its own table,
    no row read) still shows every thread; opening that one names the upgrade."""
    app = chain("a", store=pg())
    for thread in ("t0", "t1", "t2"):
        await app.run({}, thread_id=thread)
    table = f"{pg.schema}.research_fsm_checkpoints"  # type: ignore[attr-defined]
    newest = (
        f"UPDATE {table} SET body = %s WHERE thread_id = 't1' AND "
        f"seq = (SELECT max(seq) FROM {table} WHERE thread_id = 't1')"
    )
    sql(postgres_server, newest, b'{"v": 99}')
    page = await pg().threads(limit=10)
    assert sorted(t.thread_id for t in page.threads) == ["t0", "t1", "t2"]
    with pytest.raises(CorruptCheckpoint, match=r"row version 99.*upgrade research_fsm"):
        await pg().load_latest("t1")


def test_one_store_serves_successive_event_loops(postgres_server: Any) -> None:
    """A store used under one asyncio.run, closed, then used under another works there too."""
    store = PostgresCheckpointStore(postgres_server.dsn, schema=f"test_{secrets.token_hex(6)}")

    async def turn() -> int:
        try:
            return (await chain("a", store=store).run({}, thread_id="t")).state.n
        finally:
            await store.aclose()

    assert [1, 2] == [asyncio.run(turn()), asyncio.run(turn())]


def test_dsn_or_pool_is_required() -> None:
    """Neither dsn nor pool (or both) is a ValueError naming them."""
    with pytest.raises(ValueError, match="dsn= or pool="):
        PostgresCheckpointStore()


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this checkout first on the path."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=False
    )


def test_the_engine_and_the_assistant_import_no_database_driver() -> None:
    """Importing research_fsm.engine, the assistant and research_fsm.stores loads no driver."""
    done = run_python(
        "import sys, research_fsm.engine, research_fsm.qa, research_fsm.stores\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('psycopg', 'psycopg_pool', 'asyncpg')))"
    )
    assert ("[]", "") == (done.stdout.strip(), done.stderr.strip())


def test_missing_extra_names_the_pip_command() -> None:
    """Without psycopg installed, using the Postgres store says to install the postgres extra."""
    done = run_python(
        "import sys; sys.modules['psycopg'] = None\n"
        "from research_fsm.stores import PostgresCheckpointStore"
    )
    assert "pip install 'research-fsm[postgres]'" in done.stderr
