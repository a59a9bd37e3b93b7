"""The file store's thread listing: its journal (``.threads``) is a cache the store
rebuilds, and a page always shows each thread as its files say."""

from __future__ import annotations

import os
from pathlib import Path

from engine.helpers import chain

from research_fsm.stores import JsonFileCheckpointStore
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
