"""The file store's thread listing: its journal (``.threads``) is a cache the store
rebuilds, and a page always shows each thread as its files say."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from engine.helpers import chain

from research_fsm.engine import Checkpoint, CorruptCheckpoint
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.logformat import checksum, salvage_bytes
from research_fsm.stores.file.listing import JOURNAL


async def grown(root: Path, threads: int) -> JsonFileCheckpointStore:
    """A store with ``threads`` finished threads ``t0``... (one run each: 2 checkpoints)."""
    store = JsonFileCheckpointStore(root, durability="none")
    app = chain("a", store=store)
    for n in range(threads):
        await app.run({}, thread_id=f"t{n}")
    return store


async def listed(root: Path) -> list[tuple[str, str, int]]:
    """The listing as a fresh store (a new process) reads it."""
    page = await JsonFileCheckpointStore(root).threads(limit=1000)
    return [(t.thread_id, t.status, t.checkpoints) for t in page.threads]


async def test_a_missing_journal_is_rebuilt_from_the_threads_files(tmp_path: Path) -> None:
    """Without .threads (a store made before the listing), every thread is found and the journal made."""
    await grown(tmp_path, 5)
    (tmp_path / JOURNAL).unlink()
    assert sorted(await listed(tmp_path)) == [(f"t{n}", "completed", 2) for n in range(5)]
    assert (tmp_path / JOURNAL).exists()
    assert len((tmp_path / JOURNAL).read_bytes().splitlines()) == 5


async def test_a_damaged_journal_is_rebuilt(tmp_path: Path) -> None:
    """A record whose checksum fails makes the store read the threads' files again."""
    await grown(tmp_path, 4)
    journal = tmp_path / JOURNAL
    data = bytearray(journal.read_bytes())
    data[5] ^= 0x20  # a letter of the first record changes case
    journal.write_bytes(bytes(data))
    assert sorted(await listed(tmp_path)) == [(f"t{n}", "completed", 2) for n in range(4)]


async def test_a_save_the_journal_missed_is_shown_as_the_thread_is(tmp_path: Path) -> None:
    """A run killed after its segment's write and before its record: the page reads the thread."""
    store = await grown(tmp_path, 3)
    journal = tmp_path / JOURNAL
    before = journal.read_bytes()
    await chain("a", store=store).run({}, thread_id="t0")  # two more checkpoints
    journal.write_bytes(before)  # ... whose records were lost
    rows = await listed(tmp_path)
    assert ("t0", "completed", 4) in rows


async def test_a_long_journal_is_compacted_to_one_record_a_thread(tmp_path: Path) -> None:
    """Runs that wrote many records leave, after a listing, about one record per thread."""
    store = await grown(tmp_path, 2)
    journal = tmp_path / JOURNAL
    record = journal.read_bytes().splitlines(keepends=True)[1]  # t0, completed
    with journal.open("ab") as out:  # as if thread t0 ran a great many times
        out.write(record * ((1 << 20) // len(record) + 10))
    assert sorted(await listed(tmp_path)) == [("t0", "completed", 2), ("t1", "completed", 2)]
    assert len(journal.read_bytes().splitlines()) == 2
    await chain("a", store=store).run({}, thread_id="t1")  # the writer follows the new file
    assert ("t1", "completed", 4) in await listed(tmp_path)


async def test_a_crashed_run_lists_as_running(tmp_path: Path) -> None:
    """A thread whose run stopped midway (its last checkpoint 'running') lists as running."""
    store = await grown(tmp_path, 1)
    path = store.segment_path("t0", 1)
    lines = path.read_bytes().rstrip(b"\0").splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # the run's last save never happened
    os.utime(path)
    assert await listed(tmp_path) == [("t0", "running", 1)]
    page = await JsonFileCheckpointStore(tmp_path).threads(status="running")
    assert [t.node for t in page.threads] == ["a"]


def newer_schema(store: JsonFileCheckpointStore, thread_id: str) -> None:
    """Rewrite the thread's last line as a newer research_fsm would write it (``v`` 99,
    checksum valid)."""
    path = store.segment_path(thread_id, 1)
    lines = path.read_bytes().rstrip(b"\0").splitlines(keepends=True)
    data = json.loads(lines[-1][: lines[-1].rindex(b"\t")])
    body = json.dumps({**data, "v": 99}, separators=(",", ":")).encode()
    path.write_bytes(b"".join(lines[:-1]) + body + b"\t" + checksum(body) + b"\n")


@pytest.mark.parametrize("journal", ["kept", "missing"])
async def test_a_thread_of_a_newer_schema_is_listed_as_unreadable(
    tmp_path: Path, journal: str
) -> None:
    """One thread whose last line a newer version wrote: the others list as they are, and
    it lists with ``unreadable`` saying so (opening it still raises CorruptCheckpoint)."""
    store = await grown(tmp_path, 3)
    newer_schema(store, "t1")
    if journal == "missing":
        (tmp_path / JOURNAL).unlink()
    page = await JsonFileCheckpointStore(tmp_path).threads(limit=10)
    shown = {t.thread_id: t for t in page.threads}
    assert sorted(shown) == ["t0", "t1", "t2"]
    assert shown["t0"].unreadable is None and shown["t0"].status == "completed"
    assert shown["t1"].unreadable is not None
    assert "schema version 99" in shown["t1"].unreadable
    assert "upgrade research_fsm" in shown["t1"].unreadable
    with pytest.raises(CorruptCheckpoint, match="schema version 99"):
        await JsonFileCheckpointStore(tmp_path).load_latest("t1")
    again = await JsonFileCheckpointStore(tmp_path).threads(limit=10, status="completed")
    assert {"t0", "t2"} <= {t.thread_id for t in again.threads}


async def test_salvaged_lines_keep_their_parent_thread(tmp_path: Path) -> None:
    """``salvage_bytes`` (what delete_thread reads of a damaged thread) keeps each line's
    parent thread, as ``last_header`` does."""
    store = JsonFileCheckpointStore(tmp_path, durability="none")
    child = "p.sub.0123456789abcdef"
    saved = Checkpoint(
        thread_id=child,
        checkpoint_id="c1",
        parent_id=None,
        seq=1,
        run_id="r1",
        step=1,
        status="completed",
        next=None,
        state={},
        created_at="2026-12-08T00:00:00+00:00",
        last_node="x",
        parent_thread_id="p",
    )
    await store.save(saved)
    raw = store.segment_path(child, 1).read_bytes()
    [salvaged] = salvage_bytes(raw, child)
    assert salvaged.parent_thread_id == "p"
