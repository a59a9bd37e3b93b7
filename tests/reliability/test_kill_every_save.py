"""A SIGKILL at every save of a conversation that uses a subgraph, a breakpoint and an
edit by hand (``_procs/every_save_child.py``): for each save in turn, a child process
dies just before it, or just after it (the save made, the caller never told); a new
store then takes the thread to its end. Every time, no node whose step was saved runs
again, and the parent's state holds each step's update once."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import CheckpointStore, ThreadBusy

from .test_crash_consistency import PROCS, REPO, load_proc

child = load_proc("every_save_child")
killing = load_proc("_killing")

MAX_SAVES = 40
"""More saves than the conversation makes: the loop ends with a child not killed."""


@pytest.fixture(params=["file", "postgres"])
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Where the children keep checkpoints: a file store, or a schema of its own (per
    round) on the session's PostgreSQL server."""
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
        server = request.getfixturevalue("postgres_server")
        return {"dsn": server.dsn, "schema": f"every_{secrets.token_hex(3)}"}
    return {}


def _command(root: Path, backend: dict[str, Any], kill_at: int, when: str) -> dict[str, Any]:
    command = {
        "store": str(root / "store"),
        "effects": str(root / "effects.txt"),
        "kill_at": kill_at,
        "when": when,
        **backend,
    }
    if "schema" in backend:
        command["schema"] = f"{backend['schema']}_{when[0]}{kill_at}"
    return command


async def _finish(command: dict[str, Any]) -> list[str]:
    """Take the thread to its end with a new store (as a new process would); the
    parent's final log."""
    store: CheckpointStore = killing.store_of(command)
    try:
        app = child.app_on(store, Path(command["effects"]))
        for _ in range(20):
            try:
                if await child.advance(app, "t") is None:
                    break
            except ThreadBusy:  # a killed PostgreSQL session's lock: ends with its socket
                await asyncio.sleep(0.2)
        snapshot = await app.get_state("t")
        assert snapshot is not None and "completed" == snapshot.status
        return list(snapshot.state.log)
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


def _finished_and_rerun(effects: Path) -> tuple[list[str], list[str]]:
    """The node executions whose step was saved before the kill, and those after it."""
    lines = effects.read_text(encoding="utf-8").splitlines()
    cut = lines.index("restart")
    before, after = lines[:cut], lines[cut + 1 :]
    saves = [i for i, line in enumerate(before) if line.startswith("save ")]
    finished = before[: saves[-1]] if saves else []
    return (
        [line for line in finished if not line.startswith("save ")],
        [line for line in after if not line.startswith("save ")],
    )


def killed_child(script: str, command: dict[str, Any]) -> bool:
    """Run the child program ``script`` of ``_procs`` with ``command``: ``True`` when it
    was SIGKILLed at its save ``kill_at`` (a ``restart`` line then ends its effects
    file), ``False`` when the run ended before that save."""
    done = subprocess.run(
        [sys.executable, str(PROCS / script), json.dumps(command)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    if done.returncode == 0:
        assert "not killed" in done.stdout
        return False
    assert -9 == done.returncode, f"save {command['kill_at']}: {done.stderr[-2000:]}"
    with Path(command["effects"]).open("a", encoding="utf-8") as out:
        out.write("restart\n")
    return True


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_kill_at_any_save_reruns_no_finished_node(
    tmp_path: Path, backend: dict[str, Any], when: str
) -> None:
    """For each save of the conversation (run, the child's question answered, the
    pause edited with ``update_state`` and gone past), a child killed ``when`` that save
    leaves a thread a new store finishes without running a saved step's node again."""
    killed = 0
    for kill_at in range(1, MAX_SAVES + 1):
        root = tmp_path / f"{when}{kill_at}"
        root.mkdir()
        command = _command(root, backend, kill_at, when)
        if not killed_child("every_save_child.py", command):
            break
        killed += 1
        effects = Path(command["effects"])
        log = asyncio.run(_finish(command))
        assert child.EXPECTED_LOG == log, f"killed {when} save {kill_at}"
        finished, rerun = _finished_and_rerun(effects)
        assert [] == [node for node in rerun if node in finished], (
            f"killed {when} save {kill_at}: {finished} ran before, {rerun} after"
        )
    else:
        pytest.fail(f"the conversation made more than {MAX_SAVES} saves")
    assert killed >= 10  # run, plan, the child's steps and question, the pause, the edit...
