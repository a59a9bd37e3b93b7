"""Where the file store does its writes: with ``durability="none"`` a run's saves are
written on the event loop (no thread hop), and so is a new thread's lease taken; no sync
ever runs on the loop."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path

from engine.helpers import chain

from research_fsm.engine import ThreadBusy
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import FileSystem


class WhereFileSystem(FileSystem):
    """Records on which thread each write (of a segment, else of another file) and
    each sync ran."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[int] = []
        self.other_writes: list[int] = []
        self.syncs: list[int] = []

    def write(self, fd: int, data: bytes | memoryview) -> int:
        segment = os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl")
        (self.writes if segment else self.other_writes).append(threading.get_ident())
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        self.syncs.append(threading.get_ident())
        super().fsync(fd)

    def fdatasync(self, fd: int) -> None:
        self.syncs.append(threading.get_ident())
        super().fdatasync(fd)

    def syncfs(self, fd: int) -> None:
        self.syncs.append(threading.get_ident())
        super().syncfs(fd)


async def _runs(store: JsonFileCheckpointStore, threads: list[str]) -> None:
    app = chain("a", "b", "c", store=store)
    for thread_id in threads:
        result = await app.run({}, thread_id=thread_id)
        assert result.status == "completed"


def test_none_writes_every_save_of_a_run_on_the_loop(tmp_path: Path) -> None:
    """durability="none": each of a run's saves (its first line too) is one write on the loop."""
    fs = WhereFileSystem()
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", fs=fs)
    asyncio.run(store.secret())  # the key written before: only the runs' writes count
    fs.writes.clear()
    fs.syncs.clear()
    loop_thread = threading.get_ident()
    asyncio.run(_runs(store, ["t1", "t2"]))
    assert fs.writes == [loop_thread] * 8  # 2 runs x (the input + 3 steps)
    assert fs.syncs == []


def test_none_saves_read_back_in_order_and_continue_in_another_store(tmp_path: Path) -> None:
    """Lines written on the loop are the thread's history, readable by a new store."""
    asyncio.run(_runs(JsonFileCheckpointStore(tmp_path / "s", durability="none"), ["t"]))

    async def read() -> list[int]:
        other = JsonFileCheckpointStore(tmp_path / "s", durability="none")
        seqs = [cp.seq async for cp in other.history("t")]
        again = await chain("a", "b", "c", store=other).run({}, thread_id="t")
        assert again.status == "completed"
        return seqs

    assert asyncio.run(read()) == [4, 3, 2, 1]


def test_fsync_never_syncs_on_the_loop(tmp_path: Path) -> None:
    """durability="fsync": every sync of every save runs off the event loop's thread."""
    fs = WhereFileSystem()
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync", fs=fs)
    loop_thread = threading.get_ident()

    async def gathered() -> None:
        app = chain("a", "b", store=store)
        await asyncio.gather(*(app.run({}, thread_id=f"g{i}") for i in range(10)))

    asyncio.run(_runs(store, ["t1"]))
    asyncio.run(gathered())
    assert fs.syncs, "no sync recorded"
    assert loop_thread not in fs.syncs


class LockWhere(WhereFileSystem):
    """Also records on which thread each range lock was taken and each segment opened
    to be read."""

    def __init__(self) -> None:
        super().__init__()
        self.locks: list[int] = []
        self.reads: list[int] = []

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        if str(path).endswith(".jsonl") and flags & (os.O_WRONLY | os.O_RDWR) == 0:
            self.reads.append(threading.get_ident())
        return super().open(path, flags, mode)

    def lock_range(self, fd: int, kind: int, offset: int) -> None:
        if kind != fcntl.F_UNLCK:
            self.locks.append(threading.get_ident())
        super().lock_range(fd, kind, offset)


def test_none_takes_a_new_threads_lease_on_the_loop_and_an_old_ones_in_a_worker(
    tmp_path: Path,
) -> None:
    """durability="none": a lease is locked on the loop; a thread with files is read by a worker, a new one not at all."""
    fs = LockWhere()
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", fs=fs)
    asyncio.run(_runs(store, ["first"]))  # the folder, its checks and .locks made
    fs.locks.clear()
    fs.reads.clear()
    loop_thread = threading.get_ident()
    asyncio.run(_runs(store, ["t1", "t2"]))
    assert (fs.locks, fs.reads) == ([loop_thread, loop_thread], [])
    fs.locks.clear()
    asyncio.run(_runs(store, ["t1"]))  # its files are there: read by the worker
    assert fs.locks == [loop_thread]
    assert fs.reads and loop_thread not in fs.reads

    async def history() -> list[int]:
        return [cp.seq async for cp in store.history("t1")]

    assert asyncio.run(history()) == list(range(8, 0, -1))  # two turns, the second continued


def test_none_lease_taken_on_the_loop_excludes_other_stores(tmp_path: Path) -> None:
    """A new thread's lease taken on the loop is held against this store and another on the folder."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    other = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    asyncio.run(_runs(store, ["first"]))

    async def contend() -> tuple[bool, bool, bool]:
        lease = await store.acquire("new")
        here = await _busy(store, "new")
        there = await _busy(other, "new")
        assert await store.load_latest("new") is None
        await lease.release()
        again = await other.acquire("new")  # free once released
        await again.release()
        return here, there, store._locks.holds("new")

    assert asyncio.run(contend()) == (True, True, False)


async def _busy(store: JsonFileCheckpointStore, thread_id: str) -> bool:
    try:
        lease = await store.acquire(thread_id)
    except ThreadBusy:
        return True
    await lease.release()
    return False
