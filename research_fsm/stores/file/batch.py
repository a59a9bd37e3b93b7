"""``Batcher``: blocking file work off the event loop, in batches (group commit).

Each call is queued; a worker thread runs everything queued so far in one go,
and at most ``max_batches`` batches run at once. One waiting run costs one
thread hand-off as before; a thousand concurrent runs share a few hand-offs
instead of paying one each, which is what dominates a file store's cost.

The batches run on the batcher's own worker threads (started when needed, gone
after a second idle), which hand results straight back to the loop through
its eventfd (``wakeup``): well under half the cost of ``run_in_executor``;
the hops are most of a durable save's overhead over its ``fdatasync``.

A ``commit`` callable, if given, runs in the worker thread after each batch
(e.g. one ``syncfs`` for every write of the batch) and may fail single calls
of it: it returns ``(index, exception)`` pairs, the index being what
``Batcher.call_index()`` returned inside that call. A batch of one call has
no index (``None``): there is nothing to share, so it does its work at once.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from .wakeup import Wakeup, wakeup_for

__all__ = ["Batcher"]

T = TypeVar("T")
_Call = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]
Commit = Callable[[], list[tuple[int, BaseException]]]
_Work = tuple[
    asyncio.AbstractEventLoop,
    "_LoopQueue",
    list[_Call],
    list[tuple[Callable[..., Any], tuple[Any, ...]]],
]
_Results = list[tuple[bool, Any]]
_local = threading.local()
_IDLE_SECONDS = 1.0  # a worker thread with nothing to do for this long ends


def _run_all(
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]], commit: Commit | None
) -> _Results:
    if len(calls) == 1:  # nothing to share: no index, the call syncs its own write
        fn, args = calls[0]
        try:
            return [(True, fn(*args))]
        except BaseException as exc:  # handed back to the caller's task
            return [(False, exc)]
    results: _Results = []
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
    __slots__ = ("pending", "running", "wakeup")

    def __init__(self, wakeup: Wakeup) -> None:
        self.pending: list[_Call] = []
        self.running = 0
        self.wakeup = wakeup  # how workers hand results back to the loop


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
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._threads_guard = threading.Lock()
        self._threads = 0  # worker threads alive
        self._busy = 0  # batches handed to them and not finished
        _all.add(self)

    def _forked(self) -> None:
        """In a forked child: none of the parent's threads exist here."""
        self._threads, self._busy = 0, 0
        self._work, self._threads_guard = queue.SimpleQueue(), threading.Lock()

    @staticmethod
    def call_index() -> int | None:
        """Inside a call of a batch of several: its position in the batch; alone
        in its batch, or outside one, ``None``."""
        index: int | None = getattr(_local, "index", None)
        return index

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the future cannot be cancelled: a task cancelled
        while awaiting it gets ``CancelledError`` once the call has finished."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _LoopQueue(wakeup_for(loop))
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

    def _start(self, loop: asyncio.AbstractEventLoop, pending: _LoopQueue) -> None:
        batch, pending.pending = pending.pending, []
        pending.running += 1
        calls = [(fn, args) for fn, args, _ in batch]
        with self._threads_guard:  # the put last: the woken worker waits for no Python
            self._busy += 1
            if self._busy > self._threads:
                self._threads += 1
                threading.Thread(target=self._serve, name="research_fsm-store", daemon=True).start()
            self._work.put((loop, pending, batch, calls))

    def _serve(self) -> None:
        """A worker thread: run batches until none came for a while."""
        while True:
            try:
                loop, pending, batch, calls = self._work.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._threads_guard:
                    if self._work.empty():
                        self._threads -= 1
                        return
                continue
            try:
                results = _run_all(calls, self._commit)
            except BaseException as exc:  # pragma: no cover - _run_all catches per call
                results = [(False, exc)] * len(batch)
            with self._threads_guard:
                self._busy -= 1
            pending.wakeup.post(loop, self._finish, pending, batch, results)

    def _finish(self, pending: _LoopQueue, batch: list[_Call], results: _Results) -> None:
        """On the loop: hand a finished batch's results to its callers."""
        pending.running -= 1
        for (_, _, future), (ok, value) in zip(batch, results, strict=True):
            if not future.done():
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        if pending.pending and pending.running < self._max:
            self._start(asyncio.get_running_loop(), pending)


_all: weakref.WeakSet[Batcher] = weakref.WeakSet()


def _after_fork() -> None:
    for batcher in list(_all):
        batcher._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
