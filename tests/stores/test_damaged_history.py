"""A file-store thread with a damaged line in its history (issue 36, bug 14):
``history()`` raises ``CorruptCheckpoint`` as ``get_state`` does, never stops short
in silence, and ``delete_thread`` still removes every child thread."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from engine.test_delete_safety import Calls, Notes, parent

from research_fsm.engine import CompiledGraph, CorruptCheckpoint
from research_fsm.stores import JsonFileCheckpointStore

from .helpers import segment_data


@pytest.fixture(params=["none", "fsync"])
def durability(request: pytest.FixtureRequest) -> Literal["none", "fsync"]:
    """Each durability of the file store."""
    value: Literal["none", "fsync"] = request.param
    return value


def _segments(store: JsonFileCheckpointStore, thread: str) -> list[Path]:
    return sorted(p for p in store.thread_files(thread) if p.name.endswith(".jsonl"))


def _damage(path: Path, line: int) -> None:
    """Flip one byte in the middle of line ``line`` (0-based) of a segment."""
    lines = segment_data(path).split(b"\n")
    middle = len(lines[line]) // 2
    lines[line] = (
        lines[line][:middle] + bytes([lines[line][middle] ^ 0x01]) + lines[line][middle + 1 :]
    )
    path.write_bytes(b"\n".join(lines))


async def _two_turns(app: CompiledGraph[Notes], thread: str, edits: int) -> list[str]:
    """Turn 1 (resumed to its end), ``edits`` update_states, then turn 2 left suspended
    inside its child: the checkpoint ids, oldest first."""
    first = await app.run({"topic": "t"}, thread_id=thread)
    assert first.suspension is not None
    await app.resume(first.suspension.token, "yes")
    for i in range(edits):
        await app.update_state(thread, {"notes": [f"edit{i}"]})
    second = await app.run({"topic": "u"}, thread_id=thread)
    assert second.status == "suspended"
    return [s.checkpoint_id async for s in app.history(thread)][::-1]


async def test_history_raises_at_a_damaged_line_that_intact_lines_follow(
    tmp_path: Path, durability: Literal["none", "fsync"]
) -> None:
    """A damaged line in the middle of the newest segment: ``get_state``, ``history()``,
    a page and a page ``before`` a later checkpoint all raise ``CorruptCheckpoint``
    naming the file; none returns the checkpoints before the damage as if they were all."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability)
    app = parent(store, Calls())
    ids = await _two_turns(app, "p", 2)
    (segment,) = _segments(store, "p")
    _damage(segment, 3)
    reader = parent(JsonFileCheckpointStore(tmp_path / "s", durability=durability), Calls())
    with pytest.raises(CorruptCheckpoint, match=segment.name):
        await reader.get_state("p")
    with pytest.raises(CorruptCheckpoint, match=segment.name):
        [s async for s in reader.history("p")]
    with pytest.raises(CorruptCheckpoint, match=segment.name):
        [s async for s in reader.history("p", limit=2)]
    with pytest.raises(CorruptCheckpoint, match=segment.name):
        [s async for s in reader.history("p", limit=2, before=ids[-2])]


async def test_history_raises_where_an_older_segment_is_damaged(
    tmp_path: Path, durability: Literal["none", "fsync"]
) -> None:
    """A damaged line in an older segment: the newer segment's checkpoints come, then
    ``CorruptCheckpoint`` naming the older one (a page from before its damage too)."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability)
    app = parent(store, Calls())
    ids = await _two_turns(app, "p", 130)  # more than a segment's 128 lines
    older, _ = _segments(store, "p")
    _damage(older, 50)
    reader = parent(JsonFileCheckpointStore(tmp_path / "s", durability=durability), Calls())
    assert (await reader.get_state("p")) is not None  # the newest segment is whole
    read: list[str] = []
    with pytest.raises(CorruptCheckpoint, match=older.name):
        async for snapshot in reader.history("p"):
            read.append(snapshot.checkpoint_id)
    assert read == ids[::-1][: len(read)] and len(read) >= len(ids) - 128
    with pytest.raises(CorruptCheckpoint, match=older.name):
        [s async for s in reader.history("p", limit=200, before=ids[-1])]
    page = [s.checkpoint_id async for s in reader.history("p", limit=3, before=ids[-1])]
    assert page == ids[-4:-1][::-1]  # a page that ends before the damage reads whole


async def test_a_damaged_last_line_is_read_past_as_get_state_reads_past_it(
    tmp_path: Path, durability: Literal["none", "fsync"]
) -> None:
    """A damaged last line with nothing after it (a save that may be in flight): history
    starts at the checkpoint before it, the one ``get_state`` gives."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability)
    app = parent(store, Calls())
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    await app.resume(first.suspension.token, "yes")
    await app.update_state("p", {"notes": ["edit"]})
    ids = [s.checkpoint_id async for s in app.history("p")][::-1]
    (segment,) = _segments(store, "p")
    _damage(segment, len(ids) - 1)
    reader = parent(JsonFileCheckpointStore(tmp_path / "s", durability=durability), Calls())
    latest = await reader.get_state("p")
    assert latest is not None and latest.checkpoint_id == ids[-2]
    assert [s.checkpoint_id async for s in reader.history("p")] == ids[-2::-1]


async def test_delete_thread_removes_the_children_named_after_a_damaged_line(
    tmp_path: Path, durability: Literal["none", "fsync"]
) -> None:
    """The child threads of both turns go, the second turn's named only in lines after
    the damaged one; nothing of the thread is left on disk."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability)
    app = parent(store, Calls())
    await _two_turns(app, "p", 2)
    children = sorted(
        {p.name.split("=")[0] for p in (tmp_path / "s").iterdir() if p.name.startswith("p.")}
    )
    assert len(children) == 2
    (segment,) = _segments(store, "p")
    lines = segment_data(segment).split(b"\n")
    edit = next(i for i, line in enumerate(lines) if b"edit0" in line)
    _damage(segment, edit)
    reader = parent(JsonFileCheckpointStore(tmp_path / "s", durability=durability), Calls())
    with pytest.raises(CorruptCheckpoint):
        await reader.get_state("p")
    await reader.delete_thread("p")
    left = sorted(p.name for p in (tmp_path / "s").iterdir() if not p.name.startswith("."))
    assert left == []
