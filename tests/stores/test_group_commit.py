"""Group commit: concurrent durable saves share one sync; a failed sync stays with its save."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import chain

from research_fsm.engine import StoreWriteError
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.batch import Batcher

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="syncfs(2) is Linux-only")

THREADS = 40
SAVES_PER_RUN = 3  # the input checkpoint and one per node of chain("a", "b")


class Syncs:
    """Counts the store's sync calls and can make them fail."""

    def __init__(
        self, *, syncfs_fails: bool = False, file_fails: Callable[[str], bool] | None = None
    ) -> None:
        self.syncfs = 0
        self.files: list[str] = []
        self._syncfs_fails = syncfs_fails
        self._file_fails = file_fails or (lambda name: False)

    def install(self, monkeypatch: pytest.MonkeyPatch, store: JsonFileCheckpointStore) -> None:
        real_syncfs = store.fs.syncfs

        def syncfs(fd: int) -> None:
            self.syncfs += 1
            if self._syncfs_fails:
                raise OSError(errno.EIO, "injected syncfs failure")
            real_syncfs(fd)

        def file_sync(real: Callable[[int], None]) -> Callable[[int], None]:
            def sync(fd: int) -> None:
                name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
                if name.endswith(".jsonl"):
                    self.files.append(name)
                    if self._file_fails(name):
                        raise OSError(errno.EIO, "injected fsync failure")
                real(fd)

            return sync

        monkeypatch.setattr(store.fs, "syncfs", syncfs)
        monkeypatch.setattr(store.fs, "fdatasync", file_sync(os.fdatasync))
        monkeypatch.setattr(store.fs, "fsync", file_sync(os.fsync))


async def run_all(store: JsonFileCheckpointStore) -> list[Any]:
    app = chain("a", "b", store=store)
    runs = [app.run({}, thread_id=f"t{i}") for i in range(THREADS)]
    return await asyncio.gather(*runs, return_exceptions=True)


async def test_concurrent_durable_saves_share_one_syncfs_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many runs saving at once with fsync durability pay far fewer syncs than saves."""
    syncs = Syncs()
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    syncs.install(monkeypatch, store)
    results = await run_all(store)
    assert [] == [r for r in results if isinstance(r, BaseException)]
    saves = THREADS * SAVES_PER_RUN
    assert syncs.syncfs >= 1
    assert syncs.syncfs + len(syncs.files) < saves // 4
    monkeypatch.undo()
    fresh = JsonFileCheckpointStore(tmp_path / "s")
    steps = [(await fresh.load_latest(f"t{i}")) for i in range(THREADS)]
    assert [SAVES_PER_RUN] * THREADS == [cp.seq if cp else None for cp in steps]


async def test_failed_syncfs_falls_back_to_one_sync_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When syncfs fails, every write of the batch is synced on its own and all saves succeed."""
    syncs = Syncs(syncfs_fails=True)
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    syncs.install(monkeypatch, store)
    results = await run_all(store)
    assert [] == [r for r in results if isinstance(r, BaseException)]
    assert syncs.syncfs >= 1
    assert THREADS * SAVES_PER_RUN == len(syncs.files)  # each save synced exactly once


async def test_a_failed_sync_fails_only_its_own_run_and_keeps_the_checkpoint_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose sync fails is cut off and its run gets StoreWriteError; the others finish."""
    victim = "t7="
    calls = {"n": 0}

    def fails(name: str) -> bool:
        # The victim's second durable write (its first append) cannot be synced.
        if name.startswith(victim):
            calls["n"] += 1
            return calls["n"] == 2
        return False

    syncs = Syncs(syncfs_fails=True, file_fails=fails)
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    syncs.install(monkeypatch, store)
    results = await run_all(store)
    failed = {i: r for i, r in enumerate(results) if isinstance(r, BaseException)}
    assert [7] == list(failed)
    assert isinstance(failed[7], StoreWriteError)
    assert "thread `t7`" in str(failed[7])
    monkeypatch.undo()
    fresh = JsonFileCheckpointStore(tmp_path / "s")
    latest = await fresh.load_latest("t7")
    assert latest is not None
    assert (1, "running", "a") == (latest.seq, latest.status, latest.next)
    others = [await fresh.load_latest(f"t{i}") for i in range(THREADS) if i != 7]
    assert [SAVES_PER_RUN] * (THREADS - 1) == [cp.seq if cp else None for cp in others]
    result = await chain("a", "b", store=fresh).run(None, thread_id="t7")
    assert ["a", "b"] == result.path


async def test_cancelled_caller_of_an_uncancellable_future_gets_cancelled_after_the_call() -> None:
    """Cancelling a task awaiting Batcher.run raises CancelledError only once the call is done."""
    batcher = Batcher()
    started, release = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    done: list[str] = []

    def blocking() -> str:
        loop.call_soon_threadsafe(started.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
        done.append("finished")
        return "ok"

    task = asyncio.create_task(batcher.run(blocking))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    assert (False, []) == (task.done(), done)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ["finished"] == done


def test_first_use_from_two_worker_threads_opens_one_lock_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two worker threads taking their first lease at once share one `.locks` descriptor."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    real_open = store.fs.open
    both_inside = threading.Barrier(2, timeout=0.5)
    opened: list[int] = []

    def slow_open(path: Any, flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(".locks"):
            # Without a guard both threads get here together; with it, one waits out.
            with contextlib.suppress(threading.BrokenBarrierError):
                both_inside.wait()
            fd = real_open(path, flags, mode)
            opened.append(fd)
            return fd
        return real_open(path, flags, mode)

    monkeypatch.setattr(store.fs, "open", slow_open)
    workers = [threading.Thread(target=store._lock, args=(name,)) for name in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    monkeypatch.undo()
    assert 1 == len(opened)
    assert {"a", "b"} == {name for name in ("a", "b") if store._locks.holds(name)}
