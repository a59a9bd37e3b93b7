"""``Batcher``: blocking file work off the event loop, in batches (group commit).

Each call is queued; a worker thread runs everything queued so far in one go,
and at most ``max_batches`` batches run at once. One waiting run costs one
thread hand-off as before; a thousand concurrent runs share a few hand-offs
instead of paying one each, which is what dominates a file store's cost.

A ``commit`` callable, if given, runs in the worker thread after each batch
(e.g. one ``syncfs`` for every write of the batch) and may fail single calls
of it: it returns ``(index, exception)`` pairs, the index being what
``Batcher.call_index()`` returned inside that call.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Batcher"]

T = TypeVar("T")
_Call = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]
Commit = Callable[[], list[tuple[int, BaseException]]]
_local = threading.local()


def _run_all(
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]], commit: Commit | None
) -> list[tuple[bool, Any]]:
    results: list[tuple[bool, Any]] = []
    try:
        for index, (fn, args) in enumerate(calls):
            _local.index = index
            try:
                results.append((True, fn(*args)))
            except BaseException as exc:  # handed back to the caller's task
                results.append((False, exc))
    finally:
        _local.index = None
    if commit is not None:
        for index, error in commit():
            results[index] = (False, error)
    return results


class _LoopQueue:
    __slots__ = ("pending", "running")

    def __init__(self) -> None:
        self.pending: list[_Call] = []
        self.running = 0


class _Uncancellable(asyncio.Future[Any]):
    """A future that ignores ``cancel()``: a task awaiting it and cancelled then
    waits for the result and raises ``CancelledError`` after it (no shield, no
    extra future per call)."""

    def cancel(self, msg: Any = None) -> bool:
        return False


class Batcher:
    """Runs blocking callables in worker threads, batching what queues up meanwhile."""

    def __init__(self, max_batches: int = 2, *, commit: Commit | None = None) -> None:
        self._max = max_batches
        self._commit = commit
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue] = (
            weakref.WeakKeyDictionary()
        )

    @staticmethod
    def call_index() -> int | None:
        """Inside a batched call: its position in the batch; elsewhere ``None``."""
        index: int | None = getattr(_local, "index", None)
        return index

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the future cannot be cancelled: a task cancelled
        while awaiting it gets ``CancelledError`` once the call has finished."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _LoopQueue()
        future: asyncio.Future[T] = _Uncancellable(loop=loop)
        queue.pending.append((fn, args, future))
        if queue.running < self._max:
            self._start(loop, queue)
        return future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread. If the caller is cancelled, the call
        still finishes (it may be a write) before ``CancelledError`` propagates."""
        future = self.submit(fn, *args)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done():
                future.exception()  # the caller is gone: nobody else will read it
            raise

    def _start(self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue) -> None:
        batch, queue.pending = queue.pending, []
        queue.running += 1
        calls = [(fn, args) for fn, args, _ in batch]
        work = loop.run_in_executor(None, _run_all, calls, self._commit)
        work.add_done_callback(lambda done: self._finish(loop, queue, batch, done))

    def _finish(
        self,
        loop: asyncio.AbstractEventLoop,
        queue: _LoopQueue,
        batch: list[_Call],
        done: asyncio.Future[list[tuple[bool, Any]]],
    ) -> None:
        queue.running -= 1
        try:
            results = done.result()
        except BaseException as exc:  # the executor itself failed (e.g. shut down)
            results = [(False, exc)] * len(batch)
        for (_, _, future), (ok, value) in zip(batch, results, strict=True):
            if not future.done():
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        if queue.pending and queue.running < self._max:
            self._start(loop, queue)
