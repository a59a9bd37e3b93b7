"""A PostgreSQL run whose lease connection ends mid-run stops with LeaseLost and saves nothing.

A lease is a session advisory lock on one of the store's lease connections; when that
connection ends (backend terminated, server restarted) the server drops the lock and
another process may take the thread. The run that held it must then stop before any
more node code, and write nothing, so no step is saved twice by two runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from engine.helpers import Counter
from pydantic import BaseModel
from servers.postgres import PostgresServer

from research_fsm.engine import (
    END,
    START,
    CompiledGraph,
    LeaseLost,
    StateGraph,
    ThreadBusy,
)

from .helpers import sql

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore  # noqa: E402

Make = Callable[..., PostgresCheckpointStore]


class Held:
    """A node that records each call in ``ran``; its first ``block`` calls wait for ``go``."""

    def __init__(self, name: str, ran: list[str], block: int = 1) -> None:
        self.name = name
        self.ran = ran
        self.block = block
        self.calls = 0
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.cancelled = 0

    async def __call__(self, state: Counter) -> dict[str, Any]:
        self.calls += 1
        self.ran.append(self.name)
        if self.calls <= self.block:
            self.entered.set()
            try:
                await self.go.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return {"n": state.n + 1, "log": [self.name]}


def line(store: PostgresCheckpointStore, *nodes: Any) -> CompiledGraph[Counter]:
    """START -> nodes... -> END."""
    graph = StateGraph(Counter)
    previous = START
    for node in nodes:
        graph.add_node(node.name, node)
        graph.add_edge(previous, node.name)
        previous = node.name
    graph.add_edge(previous, END)
    return graph.compile(store=store)


def kill_lease_connections(server: Any) -> None:
    """Terminate every backend holding an advisory lock and wait until each has ended
    (its locks released)."""
    pids = [
        pid
        for (pid,) in sql(
            server,
            "SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' "
            "AND pid <> pg_backend_pid()",
        )
    ]
    assert pids, "no lease connection holds a lock"
    for pid in pids:
        sql(server, "SELECT pg_terminate_backend(%s)", pid)
    for _ in range(500):
        if not sql(server, "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", pids):
            return
        time.sleep(0.01)
    raise AssertionError(f"backends {pids} still there 5 s after pg_terminate_backend")


async def taken_over(call: Callable[[], Awaitable[Any]]) -> Any:
    """``call()``, again while it raises ThreadBusy (the old holder's lock not yet dropped)."""
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        try:
            return await call()
        except ThreadBusy:
            assert asyncio.get_running_loop().time() < deadline, "thread still busy 5 s later"
            await asyncio.sleep(0.01)


async def seqs(store: PostgresCheckpointStore, thread_id: str) -> list[int]:
    """The positions of the thread's saved checkpoints, oldest first."""
    return [cp.seq async for cp in store.history(thread_id)][::-1]


@pytest.mark.parametrize("after", [1, 0], ids=["more-nodes", "last-save"])
@pytest.mark.parametrize("first_done", [False, True], ids=["old-saves-first", "new-ends-first"])
async def test_a_run_whose_lease_connection_ends_raises_lease_lost_and_saves_nothing(
    pg: Make, postgres_server: Any, after: int, first_done: bool
) -> None:
    """The lease connection killed while a node runs: another store takes the thread and runs it; the first run's save (before or after the second run ends) raises LeaseLost, never CheckpointConflict, and writes nothing; every later node runs once."""
    ran: list[str] = []
    first_a, second_a = Held("a", ran), Held("a", ran)
    tail = [Held(f"b{i}", ran, block=0) for i in range(after)]
    first, second = pg(), pg()
    old = asyncio.create_task(line(first, first_a, *tail).run({}, thread_id="t"))
    await first_a.entered.wait()
    kill_lease_connections(postgres_server)
    app = line(second, second_a, *tail)
    new = asyncio.create_task(taken_over(lambda: app.run(None, thread_id="t")))
    await second_a.entered.wait()
    if first_done:
        second_a.go.set()
        await new
    first_a.go.set()
    with pytest.raises(LeaseLost, match="thread `t`: the run stopped because its lease"):
        await old
    if not first_done:  # the first run saved nothing after the start
        assert [1] == await seqs(second, "t")
    second_a.go.set()
    result = await new
    assert ("completed", 1 + after) == (result.status, result.state.n)
    assert ["a", "a", *(f"b{i}" for i in range(after))] == ran
    saved = [cp.state["log"] async for cp in second.history("t")]
    assert [["a", *(f"b{i}" for i in range(after))][:n] for n in range(after + 1, -1, -1)] == saved


async def test_saves_of_every_lease_on_a_dead_connection_raise_lease_lost_without_a_round_trip(
    pg: Make, postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once one save found the lease connection dead, the saves of the other threads it held raise LeaseLost sending nothing."""
    ran: list[str] = []
    store = pg(lease_connections=1)
    nodes = {t: Held("a", ran) for t in ("t1", "t2")}
    runs = {
        t: asyncio.create_task(line(store, node).run({}, thread_id=t)) for t, node in nodes.items()
    }
    for node in nodes.values():
        await node.entered.wait()
    kill_lease_connections(postgres_server)
    nodes["t1"].go.set()
    with pytest.raises(LeaseLost):
        await runs["t1"]
    sent: list[str] = []
    for cls in (psycopg.AsyncCursor, psycopg.AsyncClientCursor):
        original = cls.execute

        async def execute(self: Any, query: Any, *args: Any, _o: Any = original, **kw: Any) -> Any:
            sent.append(str(query)[:40])
            return await _o(self, query, *args, **kw)

        monkeypatch.setattr(cls, "execute", execute)
    nodes["t2"].go.set()
    with pytest.raises(LeaseLost):
        await runs["t2"]
    assert [] == sent
    monkeypatch.undo()
    assert [[1], [1]] == [await seqs(store, t) for t in nodes]
    # the store still works: the threads continue on a new lease connection
    results = [await line(store, Held("a", ran, block=0)).run(None, thread_id=t) for t in nodes]
    assert [("completed", 1), ("completed", 1)] == [(r.status, r.state.n) for r in results]


class Work(BaseModel):
    """State of the fan-out test (its nodes change nothing)."""

    log: list[str] = []


@pytest.mark.parametrize("then", [["x2"], []], ids=["branch-goes-on", "branch-done"])
async def test_a_branch_save_finding_the_lease_lost_stops_the_other_branches(
    pg: Make, postgres_server: Any, then: list[str]
) -> None:
    """A fan-out whose lease connection dies: the next branch save (of a branch going on, or of one done, saved in the background) raises LeaseLost, the sibling still running is cancelled, and the run raises LeaseLost (not NodeFailed) at once, running no later node."""
    ran: list[str] = []
    go_x, blocked_y, y_cancelled = asyncio.Event(), asyncio.Event(), []

    def node(name: str) -> Any:
        async def run(state: Work) -> dict[str, Any]:
            ran.append(name)
            if name == "x":
                await go_x.wait()
            return {}

        return run

    async def y(state: Work) -> dict[str, Any]:
        ran.append("y")
        blocked_y.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            y_cancelled.append("y")
            raise
        return {}

    graph = StateGraph(Work)
    for name in ("x", *then, "join"):
        graph.add_node(name, node(name))
    graph.add_node("y", y)
    graph.add_edge(START, ["x", "y"])
    if then:
        graph.add_edge("x", "x2")
    graph.add_edge([then[-1] if then else "x", "y"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=pg())
    run = asyncio.create_task(app.run({}, thread_id="t"))
    try:
        await blocked_y.wait()
        kill_lease_connections(postgres_server)
        go_x.set()
        done, _ = await asyncio.wait({run}, timeout=10)
        assert {run} == done, "the run did not stop within 10 s"
        assert (LeaseLost, ["x", "y"], ["y"]) == (type(run.exception()), sorted(ran), y_cancelled)
    finally:
        run.cancel()


async def test_a_server_restart_mid_node_stops_the_run_with_lease_lost(
    own_server: PostgresServer,
) -> None:
    """The server restarted while a node runs: the run raises LeaseLost and saves nothing; the same store then continues the thread, each later node once."""
    ran: list[str] = []
    store = PostgresCheckpointStore(own_server.dsn, schema="restart", pool_size=2)
    try:
        a, b = Held("a", ran), Held("b", ran, block=0)
        run = asyncio.create_task(line(store, a, b).run({}, thread_id="t"))
        await a.entered.wait()
        await asyncio.to_thread(own_server.halt)
        await asyncio.to_thread(own_server.restart)
        a.go.set()
        with pytest.raises(LeaseLost):
            await run
        assert [1] == await seqs(store, "t")
        result = await line(store, a, b).run(None, thread_id="t")
        assert (("completed", 2), ["a", "a", "b"]) == ((result.status, result.state.n), ran)
    finally:
        await store.aclose()
