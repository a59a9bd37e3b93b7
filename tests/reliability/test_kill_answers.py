"""A SIGKILL at every save of a conversation whose nodes ask several ``interrupt()``
questions (``_procs/answers_child.py``): one node asks three, then two parallel
branches ask two each. For each save in turn a child dies just before it or just after
it; a new store then answers the open questions to the end. Every time, each node
returns once with its answers once, in order: none lost, none doubled."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import CheckpointStore, ThreadBusy

from .test_crash_consistency import load_proc
from .test_kill_every_save import killed_child

child = load_proc("answers_child")
killing = load_proc("_killing")

MAX_SAVES = 30
"""More saves than the conversation makes: the loop ends with a child not killed."""


@pytest.fixture(params=["file", "postgres"])
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A file store, or a schema of its own (per round) on the session's PostgreSQL."""
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
        server = request.getfixturevalue("postgres_server")
        return {"dsn": server.dsn, "schema": f"answers_{secrets.token_hex(3)}"}
    return {}


async def _finish(command: dict[str, Any]) -> list[str]:
    """Answer the thread's questions to its end with a new store; its final ``got``."""
    store: CheckpointStore = killing.store_of(command)
    try:
        app = child.app_on(store, Path(command["effects"]))
        for _ in range(30):
            try:
                if await child.advance(app, "t", Path(command["effects"])) is None:
                    break
            except ThreadBusy:  # a killed PostgreSQL session's lock: ends with its socket
                await asyncio.sleep(0.2)
        snapshot = await app.get_state("t")
        assert snapshot is not None and "completed" == snapshot.status
        return sorted(snapshot.state.got)
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_kill_at_any_save_neither_loses_nor_doubles_an_answer(
    tmp_path: Path, backend: dict[str, Any], when: str
) -> None:
    """For each save (the start, each question asked, each branch's, the end), a child
    killed ``when`` that save leaves a thread a new store finishes with every node's
    answers once and in order, no question the child saw answered asked again, and each
    node returning at most twice (again only when killed before its step's save)."""
    killed = 0
    for kill_at in range(1, MAX_SAVES + 1):
        root = tmp_path / f"{when}{kill_at}"
        root.mkdir()
        command = {
            "store": str(root / "store"),
            "effects": str(root / "effects.txt"),
            "kill_at": kill_at,
            "when": when,
            **backend,
        }
        if "schema" in backend:
            command["schema"] = f"{backend['schema']}_{when[0]}{kill_at}"
        if not killed_child("answers_child.py", command):
            break
        killed += 1
        effects = Path(command["effects"])
        assert child.EXPECTED == asyncio.run(_finish(command)), f"killed {when} save {kill_at}"
        lines = effects.read_text(encoding="utf-8").splitlines()
        cut = lines.index("restart")
        told = [line for line in lines[:cut] if line.startswith("answered ")]
        again = [line for line in lines[cut:] if line.startswith("answered ")]
        # An answer the child was told was taken is never asked for again (not lost).
        assert not set(told) & set(again), (told, again)
        returns = [line for line in lines if line.split(" ")[0] in ("ask", "branch")]
        # A node's return is taken once its step's save is made: before that, the
        # new store runs it again (with the same answers); never a third time.
        assert sorted(set(returns)) == ["ask", "branch x", "branch y"], returns
        assert all(returns.count(r) <= 2 for r in set(returns)), returns
    else:
        pytest.fail(f"the conversation made more than {MAX_SAVES} saves")
    assert killed >= 6  # the start, three questions, the branches' questions, the end
