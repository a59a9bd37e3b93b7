"""The file store's guarantees beyond the store contract, one test each (docs/stores.md,
"The file store"): a kill or a lost segment list while pruning, damaged lines, symlinks and
special files, unsafe folders, a prune that fails, values JSON would change; the leases' own
are in test_leases.py."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import Ask, ask_graph, chain, one_node
from pydantic import BaseModel, Field

from research_fsm.engine import (
    CorruptCheckpoint,
    StaleResumeToken,
    StateSerializationError,
    StoreWriteError,
    UnsafeStoreDirectory,
)
from research_fsm.stores import JsonFileCheckpointStore

from .helpers import segment_data


def _lines(path: Path) -> list[bytes]:
    return segment_data(path).splitlines(keepends=True)


def _flip(line: bytes) -> bytes:
    return line[:40] + bytes([line[40] ^ 0x01]) + line[41:]


# -- (a) a thread with a readable segment never looks new ----------------------------


async def test_kill_between_prune_and_list_rewrite_keeps_the_thread(tmp_path: Path) -> None:
    """With keep=1, a list naming only a deleted segment still finds the newer segment on disk."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1)
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="t")
    newest = await store.load_latest("t")
    assert newest is not None
    # As left by a kill after deleting the pruned segment, before rewriting the list.
    (tmp_path / "s" / "t.idx").write_text(f"{newest.seq - 1:012d}\n")
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1)
    latest = await fresh.load_latest("t")
    assert latest is not None
    assert newest.checkpoint_id == latest.checkpoint_id


async def test_missing_list_with_first_segment_pruned_keeps_the_thread(tmp_path: Path) -> None:
    """Deleting `<thread>.idx` once segment 1 is pruned does not make the thread look new."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1)
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="t")
    newest = await store.load_latest("t")
    assert newest is not None
    assert not store.segment_path("t", 1).exists()
    (tmp_path / "s" / "t.idx").unlink()
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1)
    app = chain("a", store=fresh)
    snap = await app.get_state("t")
    assert snap is not None
    assert newest.checkpoint_id == snap.checkpoint_id
    result = await app.run({}, thread_id="t")
    assert 3 == result.state.n  # the third turn, not a first one on a thread thought new


# -- (b) damage never resurrects a used resume token ----------------------------------


@pytest.mark.parametrize("where", ["mid-segment", "last-line"])
async def test_damaged_line_never_resurrects_a_used_token(tmp_path: Path, where: str) -> None:
    """Damage to the line after a used suspension refuses the thread instead of rolling back to it."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    ask = Ask()
    app = ask_graph(ask, store=store)
    suspended = await app.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    await app.resume(token, "Ada")
    path = store.segment_path("t", 1)
    lines = _lines(path)
    assert 5 == len(lines)  # input, first, ask (suspended), ask resumed, after
    kept = lines if where == "mid-segment" else lines[:4]
    damaged = [*kept[:3], _flip(kept[3]), *kept[4:]]
    path.write_bytes(b"".join(damaged))
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    app = ask_graph(ask, store=fresh)
    with pytest.raises((CorruptCheckpoint, StaleResumeToken)) as caught:
        await app.resume(token, "again")
    assert 1 == ask.resume_calls
    if where == "mid-segment":
        assert isinstance(caught.value, CorruptCheckpoint)
        assert path.name in str(caught.value)
        assert damaged == _lines(path)  # the intact later line is kept where it was


# -- (c) a failed unlink while pruning stays with its own save ------------------------


async def test_failed_prune_unlink_fails_no_other_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment that cannot be deleted neither fails the batch's other operations nor leaks a lease."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync", keep=1)
    await chain("a", store=store).run({}, thread_id="t")
    real_unlink = os.unlink

    def refusing_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).endswith(".jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refusing_unlink)
    lease = await store.acquire("t")
    latest = await store.load_latest("t")
    assert latest is not None
    child = dataclasses.replace(
        latest,
        checkpoint_id=secrets.token_hex(12),
        parent_id=latest.checkpoint_id,
        seq=latest.seq + 1,
        changes={},
    )
    # Two batches start at once; the save and the third lease share the next one.
    results = await asyncio.gather(
        store.acquire("x1"),
        store.acquire("x2"),
        store.save(child),
        store.acquire("u"),
        return_exceptions=True,
    )
    assert [] == [r for r in results if isinstance(r, BaseException)]
    for result in results:
        if result is not None and not isinstance(result, BaseException):
            await result.release()
    await lease.release()
    again = await store.acquire("u")  # no lease leaked: the thread is free
    await again.release()
    reread = await JsonFileCheckpointStore(tmp_path / "s", keep=1).load_latest("t")
    assert reread is not None
    assert child.checkpoint_id == reread.checkpoint_id


# -- (d) symlinks, special files and a store directory others can write ---------------


async def test_segment_symlinked_outside_is_not_appended_to(tmp_path: Path) -> None:
    """A segment that is a symlink is refused, and the file it points to is left unchanged."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await chain("a", store=store).run({}, thread_id="t")
    path = store.segment_path("t", 1)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    before = outside.read_bytes()
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    with pytest.raises(CorruptCheckpoint) as caught:
        await chain("a", store=fresh).run({}, thread_id="t")
    assert path.name in str(caught.value)
    assert before == outside.read_bytes()


async def test_symlink_at_a_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    """A symlink planted where the store writes its list's temporary file is not followed."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1)
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    directory = tmp_path / "s"
    for name in (f"t=idx.{os.getpid()}.tmp", "t=idx.tmp"):
        (directory / name).symlink_to(victim)
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="t")
    assert "precious" == victim.read_text()


@pytest.mark.parametrize("problem", ["others-can-write", "owned-by-someone-else"])
async def test_unsafe_store_directory_is_refused(tmp_path: Path, problem: str) -> None:
    """A store directory writable by others, or owned by another user, is refused with a clear error."""
    directory = tmp_path / "s"
    directory.mkdir(mode=0o700)
    if problem == "others-can-write":
        directory.chmod(0o777)
    else:
        os.chown(directory, 12345, -1)
    store = JsonFileCheckpointStore(directory, durability="none")
    with pytest.raises(UnsafeStoreDirectory) as caught:
        await chain("a", store=store).run({}, thread_id="t")
    assert str(directory) == caught.value.directory
    assert str(directory) in str(caught.value)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
async def test_special_file_where_a_segment_should_be_is_an_error(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO or directory in a segment's place is an error naming it, never a hang."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    path = store.segment_path("t", 1)
    (tmp_path / "s").mkdir(mode=0o700)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises((CorruptCheckpoint, StoreWriteError)) as caught:
        await asyncio.wait_for(chain("a", store=store).run({}, thread_id="t"), timeout=10)
    assert path.name in str(caught.value)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
async def test_special_file_where_the_list_should_be_is_an_error(tmp_path: Path, kind: str) -> None:
    """A FIFO or directory in `<thread>.idx`'s place is an error naming it, never a hang."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    (tmp_path / "s").mkdir(mode=0o700)
    path = tmp_path / "s" / "t.idx"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises((CorruptCheckpoint, StoreWriteError)) as caught:
        await asyncio.wait_for(store.load_latest("t"), timeout=10)
    assert path.name in str(caught.value)


# -- (f) state values that would not load back equal ---------------------------------


class Aliased(BaseModel):
    """A state with a field written under a serialisation alias."""

    total: int = Field(0, serialization_alias="Total")


class Loose(BaseModel):
    """A state with a float and an untyped field."""

    score: float = 0.0
    data: Any = None


async def test_serialization_alias_field_loads_back(tmp_path: Path) -> None:
    """A field with a serialization_alias is read back with the value saved."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await one_node(Aliased, {"total": 5}, store).run({}, thread_id="t")
    snap = await one_node(Aliased, {}, JsonFileCheckpointStore(tmp_path / "s")).get_state("t")
    assert snap is not None
    assert 5 == snap.state.total


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"score": math.nan}, "score"),
        ({"score": math.inf}, "score"),
        ({"data": {"when": datetime(2024, 1, 1, tzinfo=UTC)}}, "data.when"),
        ({"data": {1, 2}}, "data"),
        ({"data": {1: "a"}}, "data"),
    ],
    ids=["nan", "inf", "datetime-in-any", "set-in-any", "int-key-in-any"],
)
async def test_value_that_would_not_load_back_is_refused_at_save(
    tmp_path: Path, update: dict[str, Any], field: str
) -> None:
    """A value JSON would change (NaN, inf, datetime/set/int key in Any) is refused naming the field."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    app = one_node(Loose, update, store)
    with pytest.raises(StateSerializationError) as caught:
        await app.run({}, thread_id="t")
    assert field == caught.value.path
    snap = await one_node(Loose, {}, JsonFileCheckpointStore(tmp_path / "s")).get_state("t")
    assert snap is not None  # the thread still loads
