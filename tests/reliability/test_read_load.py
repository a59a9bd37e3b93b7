"""Reads under load (issue 23, point 2): runs of a few threads in many tasks of one process,
durable saves (``durability="fsync"``), while tasks of that process and other processes
keep reading the same threads (``get_state``, ``history``, ``load_latest``), as a web
page reloaded mid-answer does. No process is killed, so nothing may go wrong: no
acknowledged save lost, no node run twice, no ``StoreWriteError`` or ``CheckpointConflict``."""

from __future__ import annotations

import asyncio
import random
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import Checkpoint, RunResult, ThreadBusy
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import FileSystem

from .test_parallel_processes import load_proc, outcome, spawn

child = load_proc("reader_child")

THREADS = [f"t{i}" for i in range(6)]
RUNNERS = 2
"""Tasks running each thread (the one that finds it busy tries again)."""
READERS = 4
"""Tasks of this process reading random threads."""
CHILD_READERS = 2
"""Processes reading random threads."""
SECONDS = 8.0
"""How long the runs go on at most."""
RUNS = 40
"""Runs of one thread at most."""
SYNC = 0.002
"""Seconds a sync takes at least (``SlowDisk``)."""
DEADLINE = 60.0
"""Seconds anything of the test may take before it fails (nothing hangs)."""


class SlowDisk(FileSystem):
    """Syncs taking SYNC seconds more, as on a disk slower than this test machine's
    cache, and file by file: a syncfs (one for a batch of writes) also waits for
    whatever other processes wrote on this file system, seconds on a busy shared disk."""

    def fdatasync(self, fd: int) -> None:
        time.sleep(SYNC)
        super().fdatasync(fd)

    def fsync(self, fd: int) -> None:
        time.sleep(SYNC)
        super().fsync(fd)

    def has_syncfs(self) -> bool:
        return False


async def runner(
    app: Any, thread: str, results: list[RunResult[Any]], errors: list[str], stop: float
) -> None:
    """Run ``thread`` again and again until ``stop``, or until it ran RUNS times in all:
    ThreadBusy is the one expected error (another runner of the thread holds it)."""
    while time.monotonic() < stop and sum(r.thread_id == thread for r in results) < RUNS:
        try:
            results.append(await app.run({}, thread_id=thread))
        except ThreadBusy:
            await asyncio.sleep(random.uniform(0.001, 0.01))
        except Exception as exc:
            errors.append(f"run {thread}: {exc!r}")


async def reader(
    app: Any, store: JsonFileCheckpointStore, seen: set[str], errors: list[str], done: asyncio.Event
) -> int:
    """Read random threads until ``done``; every checkpoint shown goes into ``seen``."""
    reads = 0
    newest: dict[str, int] = {}
    while not done.is_set():
        thread = random.choice(THREADS)
        try:
            snap = await app.get_state(thread)
            if snap is not None:
                seen.add(snap.checkpoint_id)
            if reads % 5 == 0:  # the whole history: slower, so less often
                seen.update([s.checkpoint_id async for s in app.history(thread)])
            latest = await store.load_latest(thread)
            if latest is not None:
                seen.add(latest.checkpoint_id)
                if latest.seq < newest.get(thread, 0):
                    errors.append(f"read {thread}: seq {newest[thread]} -> {latest.seq}")
                newest[thread] = max(latest.seq, newest.get(thread, 0))
        except Exception as exc:
            errors.append(f"read {thread}: {exc!r}")
        reads += 1
        await asyncio.sleep(0)
    return reads


def spawn_reader(directory: Path, stop: Path, errors: Path) -> subprocess.Popen[str]:
    """A reader process over ``directory`` until ``stop`` exists."""
    command = {"store": str(directory), "threads": THREADS, "stop": str(stop)}
    return spawn({**command, "seconds": DEADLINE / 2}, errors, script="reader_child.py")


@pytest.mark.slow
@pytest.mark.parametrize("keep", [None, 4], ids=["keep-all", "keep-4"])
async def test_reads_during_durable_runs_lose_nothing(tmp_path: Path, keep: int | None) -> None:
    """Many tasks running and reading the same threads, readers in two more processes: every acknowledged save is kept, no node runs twice, no write error."""
    directory = tmp_path / "store"
    fs = SlowDisk()
    store = JsonFileCheckpointStore(directory, durability="fsync", keep=keep, fs=fs)
    saved: dict[str, list[Checkpoint]] = {thread: [] for thread in THREADS}
    save = store.save

    async def acknowledged(checkpoint: Checkpoint) -> None:
        await save(checkpoint)
        saved[checkpoint.thread_id].append(checkpoint)

    store.save = acknowledged  # type: ignore[method-assign]
    executed: Counter[tuple[str, str, int]] = Counter()
    app = child.build(store, executed)
    await app.run({}, thread_id=THREADS[0])  # the folder and the key exist before the children
    stop = tmp_path / "stop"
    procs = [
        (spawn_reader(directory, stop, tmp_path / f"err{i}"), tmp_path / f"err{i}")
        for i in range(CHILD_READERS)
    ]
    for proc, err in procs:  # each reads before the load starts
        assert proc.stdout is not None
        assert "ready\n" == proc.stdout.readline(), err.read_text()
    results: list[RunResult[Any]] = []
    errors: list[str] = []
    seen: set[str] = set()
    done = asyncio.Event()
    try:
        async with asyncio.timeout(DEADLINE):
            readers = [
                asyncio.create_task(reader(app, store, seen, errors, done)) for _ in range(READERS)
            ]
            until = time.monotonic() + SECONDS
            await asyncio.gather(
                *(
                    runner(app, thread, results, errors, until)
                    for thread in THREADS
                    for _ in range(RUNNERS)
                )
            )
            done.set()
            reads = sum(await asyncio.gather(*readers))
    finally:
        stop.touch()
        children = [outcome(proc, err, DEADLINE) for proc, err in procs]

    assert [] == errors[:5]
    assert [] == [e for c in children for e in c["errors"] + c["backwards"]][:5]
    fresh = JsonFileCheckpointStore(directory, durability="fsync", keep=keep)
    for thread in THREADS:
        runs = sum(r.thread_id == thread for r in results) + (thread == THREADS[0])
        # Each run saves its input and one checkpoint per node, all acknowledged ...
        assert list(range(1, 4 * runs + 1)) == [cp.seq for cp in saved[thread]]
        # ... and all on disk, newest first (with keep, the newest `keep`).
        newest = [cp.checkpoint_id for cp in reversed(saved[thread])][:keep]
        assert newest == [cp.checkpoint_id async for cp in fresh.history(thread)]
        latest = await fresh.load_latest(thread)
        assert latest is not None
        assert (newest[0], 3 * runs) == (latest.checkpoint_id, latest.state["n"])
    every = {cp.checkpoint_id for thread in THREADS for cp in saved[thread]}
    assert set() == {r.checkpoint_id for r in results} - every
    shown = seen.union(*(c["seen"] for c in children))
    assert set() == shown - every  # readers were shown saved checkpoints only
    assert [] == [key for key, count in executed.items() if count > 1]  # no node ran twice
    assert 3 * (len(results) + 1) == sum(executed.values())
    # Every thread ran while it was read (how often depends on the disk: a journal
    # commit on a busy shared one can take seconds).
    ran = Counter(r.thread_id for r in results)
    assert all(ran[t] >= 1 for t in THREADS), ran
    assert reads >= 20 and all(c["reads"] >= 20 for c in children), (reads, children)
