"""Crash consistency on PostgreSQL: writer processes SIGKILLed at random moments mid-run.

A child (``_procs/pg_crash_child.py``) runs ``crash_child``'s engine or assistant
conversations on a ``PostgresCheckpointStore`` and logs (fsynced) every call that
returned; the parent kills it after a seeded random delay, then checks with a
brand-new store that the killed writer's leases are gone at once, that every
thread's checkpoints chain to their parents and equal the reference run's at the
same position, and that every call that returned is still there. The next child
continues the same threads; at the end the parent finishes every thread and
checks it reaches the reference's end.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import ThreadBusy
from research_fsm.qa import ResearchState

from .test_crash_consistency import PROCS, REPO, advance, describe, read_records, reference_run

pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from research_fsm.stores.postgres import PostgresCheckpointStore

KILLS = {"engine": 25, "assistant": 15}
"""SIGKILLs per mode."""
MAX_DELAY = 0.15
"""Kills land uniformly in the first this-many seconds of work."""


def spawn(mode: str, dsn: str, schema: str, log: Path, errors: Path) -> subprocess.Popen[str]:
    with errors.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(PROCS / "pg_crash_child.py"), mode, dsn, schema, str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )


async def lease_is_free(store: PostgresCheckpointStore, thread_id: str) -> float:
    """Seconds until the thread's lease could be taken (the server drops a dead socket's locks)."""
    start = time.monotonic()
    while True:
        try:
            lease = await store.acquire(thread_id)
        except ThreadBusy:
            assert time.monotonic() - start < 5, f"{thread_id}: lease still held 5s after the kill"
            await asyncio.sleep(0.01)
            continue
        await lease.release()
        return time.monotonic() - start


async def check_thread(
    mode: str,
    store: PostgresCheckpointStore,
    thread_id: str,
    reference: list[tuple[Any, ...]],
    records: list[dict[str, Any]],
) -> None:
    """The thread's saved checkpoints chain, match the reference and hold every returned call."""
    latest = await store.load_latest(thread_id)
    history = [cp async for cp in store.history(thread_id)]
    if latest is None:
        assert ([], []) == (records, history)
        return
    assert latest.checkpoint_id == history[0].checkpoint_id
    assert list(range(latest.seq, latest.seq - len(history), -1)) == [cp.seq for cp in history]
    assert [cp.parent_id for cp in history[:-1]] == [cp.checkpoint_id for cp in history[1:]]
    assert [reference[cp.seq - 1] for cp in history] == [describe(mode, cp) for cp in history]
    if mode == "engine":
        saved = {cp.checkpoint_id for cp in history}
        assert [] == [r for r in records if r["checkpoint_id"] not in saved]
        return
    said = [(m.role, m.content) for m in ResearchState.model_validate(latest.state).messages]
    for record in records:
        if record["kind"] == "ask":
            assert ("user", record["question"]) in said
        if record["status"] == "answered":
            assert ("assistant", record["text"]) in said


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["engine", "assistant"])
async def test_sigkill_of_writers_loses_no_returned_call_and_frees_the_lease(
    tmp_path: Path, postgres_server: Any, mode: str
) -> None:
    """After each SIGKILL of a writer the leases are free, every returned call is saved and the checkpoints match a completed step; every thread then finishes."""
    rng = random.Random(f"pg-crash-{mode}")
    reference = await reference_run(mode)
    schema = f"crash_{secrets.token_hex(4)}"
    keep = 5 if mode == "assistant" else None
    checker = PostgresCheckpointStore(postgres_server.dsn, schema=schema, keep=keep)
    records: list[dict[str, Any]] = []
    waits: list[float] = []

    def paths(cycle: int) -> tuple[Path, Path]:
        return tmp_path / f"log-{cycle}.jsonl", tmp_path / f"err-{cycle}.txt"

    upcoming = spawn(mode, postgres_server.dsn, schema, *paths(0))
    try:
        for cycle in range(KILLS[mode]):
            proc, (log, errors) = upcoming, paths(cycle)
            assert proc.stdout is not None and proc.stdin is not None
            assert "ready" == proc.stdout.readline().strip(), errors.read_text()
            if cycle + 1 < KILLS[mode]:
                upcoming = spawn(mode, postgres_server.dsn, schema, *paths(cycle + 1))
            proc.stdin.write("go\n")
            proc.stdin.flush()
            time.sleep(rng.uniform(0, MAX_DELAY))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stdin.close()
            proc.stdout.close()
            assert -signal.SIGKILL == proc.returncode, errors.read_text()
            records += read_records(log)
            for number in range(
                1 + max((int(r["thread"].split("-")[1]) for r in records), default=0)
            ):
                thread_id = f"{mode}-{number}"
                waits.append(await lease_is_free(checker, thread_id))
                mine = [r for r in records if r["thread"] == thread_id]
                await check_thread(mode, checker, thread_id, reference, mine)
        threads = sorted({r["thread"] for r in records})
        assert threads, "no call returned before any kill: raise MAX_DELAY"
        for thread_id in threads:  # every killed thread continues to the reference's end
            step = await advance(mode, checker, thread_id)  # type: ignore[arg-type]
            while await step() is not None:
                pass
            end = await checker.load_latest(thread_id)
            assert end is not None
            assert (len(reference), reference[-1]) == (end.seq, describe(mode, end))
    finally:
        if upcoming.poll() is None:
            upcoming.kill()
            upcoming.wait(timeout=30)
        await checker.aclose()
    print(f"{mode}: {len(records)} returned calls, slowest lease release {max(waits):.3f}s")
    assert max(waits) < 5
