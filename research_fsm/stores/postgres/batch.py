"""Round trips shared by the requests that wait for them (``PostgresCheckpointStore``).

A ``Batcher`` runs at most ``width`` round trips at a time (one per connection it
may use). A request that arrives while they are all in flight waits for the next
one, together with every other request that arrived meanwhile: under load a
round trip serves many requests (one statement list, one commit), and alone a
request goes at once (no timer, no added wait). Requests with the same key never
share a round trip (the second waits for the next): each one sees the first's
effect. The round trips run in tasks of their own, so a caller cancelled while
waiting cuts no round trip short (``complete`` waits for its request's outcome).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["Batcher", "complete"]

R = TypeVar("R")
T = TypeVar("T")

Trip = Callable[[list[R]], Awaitable[list[T | BaseException]]]
"""Runs one round trip for a batch of requests: an outcome per request, in order
(a value, or the exception that request alone raises)."""


async def complete(aw: Awaitable[T]) -> tuple[T, bool]:
    """Wait for ``aw`` to its end even when the caller is cancelled meanwhile.

    Returns its result and whether a cancellation arrived (the caller re-raises
    it once it has undone what must not outlive it). A round trip cut off halfway
    would leave its connection in an unknown state, and a lock taken for a caller
    that is gone would never be given back.
    """
    task = asyncio.ensure_future(aw)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(task), cancelled
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True


class Batcher(Generic[R, T]):
    """Sends requests in shared round trips, ``width`` at a time, ``most`` per trip."""

    def __init__(self, trip: Trip[R, T], *, width: int, most: int) -> None:
        self._trip = trip
        self._width = width
        self._most = most
        self._queue: list[tuple[Hashable, R, asyncio.Future[T]]] = []
        self._active = 0  # round-trip tasks running (counted down as they end, not after)
        self._flushers: set[asyncio.Task[None]] = set()

    @property
    def idle(self) -> bool:
        """No round trip in flight and no request waiting."""
        return self._active == 0 and not self._queue

    def submit(self, key: Hashable, request: R) -> asyncio.Future[T]:
        """Queue ``request``; the future gets its outcome after its round trip."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append((key, request, future))
        if self._active < self._width:
            self._active += 1
            task = loop.create_task(self._flush())
            self._flushers.add(task)
            task.add_done_callback(self._flushers.discard)
        return future

    def _take(self) -> list[tuple[Hashable, R, asyncio.Future[T]]]:
        """The next batch: the oldest requests, one per key, at most ``most``."""
        if len(self._queue) < 2:
            alone, self._queue = self._queue, []
            return alone
        batch: list[tuple[Hashable, R, asyncio.Future[T]]] = []
        rest: list[tuple[Hashable, R, asyncio.Future[T]]] = []
        keys: set[Hashable] = set()
        for item in self._queue:
            if len(batch) < self._most and item[0] not in keys:
                keys.add(item[0])
                batch.append(item)
            else:
                rest.append(item)
        self._queue = rest
        return batch

    async def _flush(self) -> None:
        try:
            while batch := self._take():
                await self._send(batch)
        finally:
            # In the same step as the empty ``_take``: a request queued after it
            # finds this task no longer counted, and starts another.
            self._active -= 1

    async def _send(self, batch: list[tuple[Hashable, R, asyncio.Future[T]]]) -> None:
        try:
            outcomes = await self._trip([request for _, request, _ in batch])
        except BaseException as exc:
            for _, _, future in batch:
                _settle(future, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        for (_, _, future), outcome in zip(batch, outcomes, strict=True):
            _settle(future, outcome)

    async def close(self) -> None:
        """Stop the round trips in flight (their requests get ``CancelledError``)."""
        flushers = list(self._flushers)
        for task in flushers:
            task.cancel()
        await asyncio.gather(*flushers, return_exceptions=True)
        for _, _, future in self._queue:
            future.cancel()
        self._queue = []


def _settle(future: asyncio.Future[Any], outcome: Any) -> None:
    if future.done():
        return
    if isinstance(outcome, asyncio.CancelledError):
        future.cancel()
    elif isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
