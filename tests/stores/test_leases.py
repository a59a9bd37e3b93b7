"""The file store's leases under both lock kinds: a deleted or replaced lock file never
lets two holders run one thread (issue 15 (e)).

``lock_kind`` runs each test with range locks on `.locks` (Linux) and with a `flock`
per `<thread>.lock` (systems without open-file-description locks, as macOS).
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import Counter, chain

from research_fsm.engine import (
    END,
    START,
    CheckpointConflict,
    StateGraph,
    StoreWriteError,
    ThreadBusy,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import OFD_LOCKS, FileSystem


def lock_file(directory: Path, kind: str, thread_id: str = "t") -> Path:
    """Where the lease of ``thread_id`` is kept under lock kind ``kind``."""
    return directory / (".locks" if kind == "range" else f"{thread_id}.lock")


async def test_deleted_lock_file_does_not_hand_out_a_held_thread(
    lock_kind: str, tmp_path: Path
) -> None:
    """With its lock file deleted while a lease is held, another store cannot take a thread that has checkpoints."""
    holder = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await chain("a", store=holder).run({}, thread_id="t")
    lease = await holder.acquire("t")
    lock_file(tmp_path / "s", lock_kind).unlink()
    other = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    with pytest.raises(StoreWriteError) as caught:
        await other.acquire("t")
    assert errno.EBUSY == caught.value.cause.errno
    await lease.release()
    again = await other.acquire("t")  # free once the holder let go
    await again.release()


@pytest.mark.skipif(not OFD_LOCKS, reason="range locks need open-file-description locks")
async def test_deleted_range_lock_file_does_not_hand_out_a_held_new_thread(tmp_path: Path) -> None:
    """With `.locks` deleted while a lease on a thread without checkpoints is held, another store cannot take it."""
    holder = JsonFileCheckpointStore(tmp_path / "s", durability="none", fs=FileSystem())
    lease = await holder.acquire("t")
    (tmp_path / "s" / ".locks").unlink()
    other = JsonFileCheckpointStore(tmp_path / "s", durability="none", fs=FileSystem())
    with pytest.raises(StoreWriteError) as caught:
        await other.acquire("t")
    assert errno.EBUSY == caught.value.cause.errno
    await lease.release()
    again = await other.acquire("t")
    await again.release()


async def test_lock_file_deleted_before_a_new_threads_first_save_runs_node_code_once(
    lock_kind: str, tmp_path: Path
) -> None:
    """A new thread's lock file deleted while its run has not saved yet: a second run on it fails, or makes the first fail, before any node code; the node runs once."""
    entered, go = asyncio.Event(), asyncio.Event()
    calls: list[str] = []

    async def first_waits(state: Counter) -> str:  # before the first save, not node code
        if not entered.is_set():
            entered.set()
            await go.wait()
        return "node"

    async def node(state: Counter) -> dict[str, Any]:
        calls.append("node")
        return {"n": state.n + 1}

    def app() -> Any:
        graph = StateGraph(Counter)
        graph.add_node("node", node)
        graph.add_router(START, first_waits, ["node"])
        graph.add_edge("node", END)
        return graph.compile(store=JsonFileCheckpointStore(tmp_path / "s", durability="none"))

    first = asyncio.create_task(app().run({}, thread_id="t"))
    await entered.wait()
    lock_file(tmp_path / "s", lock_kind).unlink()
    second = asyncio.create_task(app().run({}, thread_id="t"))
    await asyncio.wait({second})
    go.set()
    await asyncio.wait({first})
    outcomes = sorted(
        "completed" if t.exception() is None else type(t.exception()).__name__
        for t in (first, second)
    )
    # Range locks: the second cannot take the thread. Flock: a new thread's lock file is
    # made freely, so the second takes it, but one of the two first saves conflicts.
    losers = {"range": StoreWriteError.__name__, "flock": CheckpointConflict.__name__}
    assert (["node"], sorted(["completed", losers[lock_kind]])) == (calls, outcomes)


async def test_deleted_lock_file_is_made_again_once_no_lease_is_held(
    lock_kind: str, tmp_path: Path
) -> None:
    """A lock file deleted by hand is made again, but only once no store holds a lease in the folder."""
    holder = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await chain("a", store=holder).run({}, thread_id="t")
    other_thread = await holder.acquire("u")
    lock_file(tmp_path / "s", lock_kind).unlink()
    taker = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    with pytest.raises(StoreWriteError) as caught:
        await taker.acquire("t")
    assert errno.EBUSY == caught.value.cause.errno
    await other_thread.release()
    lease = await taker.acquire("t")
    assert lock_file(tmp_path / "s", lock_kind).exists()
    with pytest.raises(ThreadBusy):
        await holder.acquire("t")
    await lease.release()


async def test_flock_file_replaced_while_being_locked_is_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `<thread>.lock` replaced between being opened and flocked is let go: the store locks the file now there."""
    store = JsonFileCheckpointStore(tmp_path / "s", fs=FileSystem(range_locks=False))
    path = tmp_path / "s" / "t.lock"
    real_flock = store.fs.flock
    replaced: list[int] = []

    def replacing_flock(fd: int, operation: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode) and not replaced:  # the thread's file
            path.unlink()  # as another store would: its own, new file at that name
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            replaced.append(fd)
        real_flock(fd, operation)

    monkeypatch.setattr(store.fs, "flock", replacing_flock)
    lease = await store.acquire("t")
    monkeypatch.undo()
    other = JsonFileCheckpointStore(tmp_path / "s", fs=FileSystem(range_locks=False))
    with pytest.raises(ThreadBusy):  # the file at the path is the one held
        await other.acquire("t")
    assert 1 == len(replaced)
    await lease.release()


def test_stores_creating_the_lock_file_at_once_all_get_their_leases(
    lock_kind: str, tmp_path: Path
) -> None:
    """Several stores taking their first leases at once in a new directory all succeed."""
    directory = tmp_path / "s"
    directory.mkdir(mode=0o700)
    stores = [JsonFileCheckpointStore(directory, durability="none") for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def take(store: JsonFileCheckpointStore, thread_id: str) -> None:
        barrier.wait()
        try:
            store._lock(thread_id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [
        threading.Thread(target=take, args=(store, f"t{i}")) for i, store in enumerate(stores)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [] == errors
    assert [True] * len(stores) == [s._locks.holds(f"t{i}") for i, s in enumerate(stores)]
