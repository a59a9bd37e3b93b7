"""Threads written by research_fsm 0.1.0 (main at 7fe1e77, ``legacy/make.py``) load and
resume on every store: the file store reads the files 0.1.0 wrote; the memory and
PostgreSQL stores are given the same checkpoints (``legacy/data/checkpoints.json``, the
records in them as 0.1.0 wrote them, read by the stores' codec)."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from stores.helpers import close_store

from engine.legacy.graph import legacy_graph
from research_fsm.engine import CheckpointStore
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.logformat import fold

DATA = Path(__file__).parent / "legacy" / "data"


@pytest.fixture
async def legacy(store: CheckpointStore, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    """``store``'s kind holding the 0.1.0 threads."""
    if not isinstance(store, JsonFileCheckpointStore):
        saved = json.loads((DATA / "checkpoints.json").read_text(encoding="utf-8"))
        for rows in saved.values():
            for row in rows:
                # Each row holds its whole state; a line holds no records as {}.
                checkpoint, _ = fold({**row, "branches": row["branches"] or {}}, {}, None)
                await store.save(checkpoint)
        yield store
        return
    directory = tmp_path / "legacy"
    shutil.copytree(DATA / "file", directory)
    fs = type(store.fs)(range_locks=store.fs.range_locks)
    copy = JsonFileCheckpointStore(directory, durability=store.durability, fs=fs)
    yield copy
    await close_store(copy)


async def test_a_fan_out_suspended_by_0_1_0_resumes(legacy: CheckpointStore) -> None:
    """The suspended branch of a 0.1.0 fan-out takes its answer; the join and the next
    node run once, and the run goes on to the end."""
    app = legacy_graph(legacy)
    snapshot = await app.get_state("fan")
    assert ["ask[0]"] == [s.branch for s in snapshot.suspensions]
    done = {b.id: b.status for b in snapshot.branches}
    assert {"ask[0]": "suspended", "market[1]": "done", "item[2]": "done"} == {
        k: done[k] for k in ("ask[0]", "market[1]", "item[2]")
    }
    second = await app.resume(snapshot.suspensions[0].token, "yes")
    assert "review" == second.suspension.node
    log = second.state.log
    assert ["intake", "asked ask", "ask=yes", "market", "item:a", "item:b", "synth"] == log
    third = await app.resume(second.suspension.token, "approve")
    assert ("completed", "approve") == (third.status, third.state.verdict)


async def test_a_top_level_suspension_of_0_1_0_resumes(legacy: CheckpointStore) -> None:
    """A node suspended by 0.1.0 is resumed with the value given."""
    app = legacy_graph(legacy)
    snapshot = await app.get_state("top")
    assert ("review", {"question": "approve?"}) == (
        snapshot.suspension.node,
        snapshot.suspension.payload,
    )
    result = await app.resume(snapshot.suspension.token, "no")
    assert ("completed", "no", "reviewed") == (
        result.status,
        result.state.verdict,
        result.state.log[-1],
    )
    assert ["review"] == result.path


async def test_a_pause_at_a_breakpoint_of_0_1_0_goes_on(legacy: CheckpointStore) -> None:
    """A pause before a node saved by 0.1.0 goes on with that node, which does not
    pause again."""
    app = legacy_graph(legacy, interrupt_before=["synth"])
    snapshot = await app.get_state("paused")
    assert ("before", "synth") == (snapshot.suspension.breakpoint, snapshot.next)
    result = await app.resume(snapshot.suspension.token, None)
    assert ["synth", "review"] == result.path
    assert "review" == result.suspension.node


async def test_an_update_state_of_0_1_0_is_read_as_one(legacy: CheckpointStore) -> None:
    """A 0.1.0 ``update_state`` checkpoint reads as one; the thread is complete."""
    app = legacy_graph(legacy)
    snapshot = await app.get_state("done")
    assert ("update", "completed", "edited") == (
        snapshot.origin,
        snapshot.status,
        snapshot.state.verdict,
    )
    history: list[Any] = [s async for s in app.history("done")]
    assert 8 == len(history)
    result = await app.run(None, thread_id="done")
    assert ("completed", "edited", []) == (result.status, result.state.verdict, result.path)
