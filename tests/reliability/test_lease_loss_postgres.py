"""Lease loss on PostgreSQL across processes: no step saved twice, nothing acknowledged lost.

Each round suspends a new thread and hands its token to several worker processes
(``_procs/pg_lease_child.py``), which all resume it at once and then continue the
thread until it completes. Meanwhile the parent ends the lease of whichever worker
runs it: it terminates the backends holding advisory locks (``pg_terminate_backend``),
or restarts the server. Node code and acknowledged saves are logged by the workers,
so the parent checks that:

* every call ends completed, or with ``ThreadBusy``/``StaleResumeToken`` (the losers),
  ``LeaseLost`` (the run that lost its lease), ``ThreadSuspended`` (a ``run(None)``
  where the token is still to be resumed) or, while the server restarts,
  ``StoreUnavailable``; never ``CheckpointConflict``;
* the history chains one execution of each node after the other, each saved once;
* a node's execution missing from the history belongs to a call that raised
  ``LeaseLost``, one at most per such call (no node code ran after the loss);
* every save a worker's store acknowledged, and every returned call's checkpoint,
  is in the history.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from servers.postgres import PostgresServer

from research_fsm.engine import CheckpointStore

from .test_parallel_processes import load_proc

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore  # noqa: E402

PROCS = Path(__file__).parent / "_procs"
REPO = Path(__file__).resolve().parents[2]
child = load_proc("pg_lease_child")

WORKERS = 4
"""Worker processes resuming each token."""
ROUNDS = {"terminate": 8, "restart": 3}
"""Threads (each ended by its own interruptions), per way of ending the lease."""
ENDED = {"completed", "ThreadBusy", "StaleResumeToken", "LeaseLost", "ThreadSuspended"}
"""How a worker's call may end (plus ``StoreUnavailable`` while the server restarts)."""


class Worker:
    """One worker process and its log."""

    def __init__(self, dsn: str, schema: str, log: Path, errors: Path) -> None:
        self.log = log
        self.errors = errors
        with errors.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, str(PROCS / "pg_lease_child.py"), dsn, schema, str(log)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def records(self) -> list[dict[str, Any]]:
        """The records logged since the last call (the log is emptied)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        self.log.write_text("")
        return [json.loads(line) for line in lines]

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
async def workers(own_server: PostgresServer, tmp_path: Path) -> AsyncIterator[list[Worker]]:
    """``WORKERS`` worker processes on schema ``lease`` of the test's server, ready."""
    made = [
        Worker(own_server.dsn, "lease", tmp_path / f"w{i}.jsonl", tmp_path / f"w{i}.err")
        for i in range(WORKERS)
    ]
    try:
        for worker in made:
            ready = await asyncio.wait_for(asyncio.to_thread(worker.line), 60)
            assert "ready" == ready, worker.errors.read_text()
        yield made
    finally:
        for worker in made:
            worker.stop()


def sql(server: PostgresServer, query: str) -> list[tuple[Any, ...]]:
    """Run one statement on a connection of its own; its rows."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return conn.execute(query.encode()).fetchall()


def end_leases(server: PostgresServer, way: str) -> int:
    """End the lease of every process holding one: terminate the backends holding advisory
    locks, or restart the server. How many backends held one."""
    held = sql(server, "SELECT count(DISTINCT pid) FROM pg_locks WHERE locktype = 'advisory'")[0][0]
    if way == "terminate":
        sql(
            server,
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND pid <> pg_backend_pid()",
        )
    else:
        server.halt()
        server.restart()
    return int(held)


async def check_round(
    store: CheckpointStore, thread_id: str, records: list[dict[str, Any]], way: str
) -> Counter[str]:
    """The round's properties (module doc); how its calls ended."""
    calls = {r["call"]: r for r in records if "outcome" in r}
    outcomes = Counter(r["outcome"] for r in calls.values())
    allowed = ENDED | ({"StoreUnavailable"} if way == "restart" else set())
    assert [] == [r for r in calls.values() if r["outcome"] not in allowed]
    history = [cp async for cp in store.history(thread_id)][::-1]
    assert list(range(1, len(history) + 1)) == [cp.seq for cp in history]
    assert [None, *(cp.checkpoint_id for cp in history[:-1])] == [cp.parent_id for cp in history]
    latest = history[-1]
    assert ("completed", 3 + child.STEPS) == (latest.status, len(history))
    # one execution of each node, each after the one before, each saved once
    execs = {r["exec"]: r for r in records if "exec" in r}
    trail = list(latest.state["log"])
    assert ["ask", *(f"s{n}" for n in range(1, child.STEPS + 1))] == [
        execs[e]["node"] for e in trail
    ]
    assert [None, *trail[:-1]] == [execs[e]["prev"] for e in trail]
    assert [[], [], *([e] for e in trail)] == [
        [e for e in cp.state["log"] if e not in (history[i - 1].state["log"] if i else [])]
        for i, cp in enumerate(history)
    ]
    # node code that no checkpoint kept ran in a call that lost its lease, once at most
    lost = Counter(r["call"] for e, r in execs.items() if e not in trail)
    assert {} == {c: n for c, n in lost.items() if calls[c]["outcome"] != "LeaseLost" or n > 1}
    # nothing acknowledged is lost
    ids = {cp.checkpoint_id for cp in history}
    acknowledged = [r["saved"] for r in records if "saved" in r]
    returned = [r["checkpoint"] for r in calls.values() if r["outcome"] == "completed"]
    assert [] == [i for i in acknowledged + returned if i not in ids]
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("way", ["terminate", "restart"])
async def test_processes_resuming_one_token_across_lost_leases_run_each_step_once(
    own_server: PostgresServer, workers: list[Worker], way: str
) -> None:
    """Workers resume one token while the holder's lease ends (backend terminated, server restarted): each step is saved once, node code that was not kept ran only in a call that raised LeaseLost, losers get ThreadBusy/StaleResumeToken, nothing acknowledged is lost."""
    rng = random.Random(f"pg-lease-{way}")
    store = PostgresCheckpointStore(own_server.dsn, schema="lease", pool_size=2)
    app = child.build(store, None)
    totals: Counter[str] = Counter()
    hits = 0
    try:
        for number in range(ROUNDS[way]):
            thread_id = f"t{number}"
            paused = await app.run({}, thread_id=thread_id)
            assert paused.suspension is not None
            for worker in workers:
                worker.send(f"go {thread_id} {paused.suspension.token}")
            for delay in (rng.uniform(0.0, 0.1), rng.uniform(0.05, 0.2)):
                await asyncio.sleep(delay)
                hits += await asyncio.to_thread(end_leases, own_server, way)
            ends = [await asyncio.wait_for(asyncio.to_thread(w.line), 120) for w in workers]
            assert ["done"] * WORKERS == ends, [w.errors.read_text()[-2000:] for w in workers]
            records = [r for w in workers for r in w.records()]
            totals += await check_round(store, thread_id, records, way)
    finally:
        await store.aclose()
    print(f"{way}: {hits} leases ended; calls ended {dict(totals)}")
    assert totals["LeaseLost"] >= 1, f"no run lost its lease ({hits} ended): raise the delays"
    assert totals["ThreadBusy"] + totals["StaleResumeToken"] >= 1
