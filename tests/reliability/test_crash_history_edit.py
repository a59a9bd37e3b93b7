"""Crash safety of editing a thread by hand: real child processes (``_procs/edit_child.py``)
doing ``update_state``, ``fork`` and ``run(None)`` on a durable file store are SIGKILLed
at random moments; after each kill, brand-new stores find every call that returned, and
the one in flight either whole or not at all: never an update applied twice or lost,
never a fork with another state than its source's."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from research_fsm.stores import JsonFileCheckpointStore

from .test_crash_consistency import PROCS, REPO, load_proc

edit_child = load_proc("edit_child")

KILLS = 20
SEED = 2531


def digits(log: list[str]) -> list[str]:
    return [entry for entry in log if entry.isdigit()]


async def check(directory: Path, logged: list[str]) -> int:
    """The store as a new process finds it after a kill; returns the thread's ``n``."""
    app = edit_child.app_on(JsonFileCheckpointStore(directory, durability="fsync"))
    latest = await app.get_state("t")
    assert latest is not None
    n = latest.state.n
    updates = [int(line.split()[1]) for line in logged if line.startswith("update ")]
    done = updates[-1] if updates else 0
    assert n in (done, done + 1), (n, done)  # the update in flight: whole or not at all
    assert [str(i) for i in range(1, n + 1)] == digits(latest.state.log)
    forks = {int(line.split()[1]) for line in logged if line.startswith("fork ")}
    for i in range(1, n + 2):
        fork = await app.get_state(f"f{i}")
        if fork is None:
            assert i not in forks, f"fork {i} returned, then was lost"
            continue  # in flight when killed (the next child goes on from the next update)
        history = [s async for s in app.history(f"f{i}")]
        assert 1 == len(history) and "fork" == fork.origin
        assert (fork.state.n, [str(j) for j in range(1, i + 1)]) == (i, digits(fork.state.log))
    return n


@pytest.mark.slow
def test_kills_during_update_state_and_fork_lose_or_double_nothing(tmp_path: Path) -> None:
    """20 children killed mid-edit, each continuing on the crash state of the last."""
    directory, log = tmp_path / "store", tmp_path / "calls.log"
    rng = random.Random(SEED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(PROCS)])}
    n = 0
    for kill in range(KILLS):
        size = log.stat().st_size if log.exists() else 0
        child = subprocess.Popen(
            [sys.executable, str(PROCS / "edit_child.py"), str(directory), str(log)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while (not log.exists() or log.stat().st_size == size) and child.poll() is None:
            assert time.monotonic() < deadline, "the child made no call in 60 s"
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.08))
        child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=60)
        assert -signal.SIGKILL == child.returncode, f"kill {kill}: child ended by itself:\n{err}"
        logged = log.read_text().splitlines()
        n = asyncio.run(check(directory, logged))
    assert n >= KILLS  # every child got at least one update in

    async def finish() -> list[str]:
        app = edit_child.app_on(JsonFileCheckpointStore(directory, durability="fsync"))
        latest = await app.get_state("t")
        assert latest is not None
        result = await app.run(None, thread_id="t")
        return result.state.log

    log_after = asyncio.run(finish())
    assert [str(i) for i in range(1, n + 1)] == digits(log_after)
