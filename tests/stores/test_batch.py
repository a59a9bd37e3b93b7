"""The file store's batched worker: group commit without losing a call's outcome."""

from __future__ import annotations

import asyncio
import threading

import pytest

from research_fsm.stores.file.batch import Batcher


async def test_results_and_errors_reach_their_callers() -> None:
    """Each call gets its own result or its own exception."""
    batcher = Batcher()

    def fail() -> None:
        raise KeyError("nope")

    ok, bad = await asyncio.gather(
        batcher.run(lambda: 42), batcher.run(fail), return_exceptions=True
    )
    assert 42 == ok
    assert isinstance(bad, KeyError)


async def test_concurrent_calls_share_thread_trips() -> None:
    """Calls queued while a batch runs go together in the next trip (at most 2 at a time)."""
    batcher = Batcher(max_batches=1)
    release = threading.Event()
    threads: list[int] = []

    def first() -> None:
        release.wait(5)

    def record() -> int:
        threads.append(threading.get_ident())
        return len(threads)

    blocker = asyncio.ensure_future(batcher.run(first))
    await asyncio.sleep(0.05)
    queued = [asyncio.ensure_future(batcher.run(record)) for _ in range(20)]
    await asyncio.sleep(0.05)
    release.set()
    await blocker
    assert list(range(1, 21)) == sorted(await asyncio.gather(*queued))
    assert 1 == len(set(threads))


async def test_cancelled_caller_waits_for_its_write() -> None:
    """A cancelled caller returns only after its call finished (a write is never cut short)."""
    batcher = Batcher()
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def write() -> None:
        started.set()
        release.wait(5)
        finished.set()

    task = asyncio.ensure_future(batcher.run(write))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()
