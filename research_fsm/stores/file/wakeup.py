"""``Wakeup``: worker threads hand callbacks back to an event loop through one
``eventfd`` per loop, shared by every ``Batcher``.

The loop watches the eventfd (``add_reader``); a worker queues its callback and
bumps the counter with one ``write``; the loop wakes, reads the counter once and
runs every queued callback. That is the cheapest hand-back asyncio allows: no
``Handle`` per callback and no self-pipe (``call_soon_threadsafe`` sends a byte
on a socket that the loop reads twice, the second time to get ``EAGAIN``).

The descriptor is closed once its loop is closed (checked whenever another loop
gets one) or collected; a worker writes under a lock and never after the close,
so a reused descriptor number is never written to. Loops that cannot watch a
descriptor (no ``add_reader``, not Linux) get ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Wakeup", "wakeup_for"]

_Callback = tuple[Callable[..., None], tuple[Any, ...]]


class Wakeup:
    """The hand-back channel of one event loop."""

    __slots__ = ("__weakref__", "_fd", "_guard", "_queued")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._guard = threading.Lock()
        self._queued: deque[_Callback] = deque()

    def post(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        """From any thread: run ``fn(*args)`` on ``loop`` soon (dropped if it is closed)."""
        self._queued.append((fn, args))
        with self._guard:
            if self._fd >= 0:
                try:
                    os.eventfd_write(self._fd, 1)
                    return
                except OSError:  # pragma: no cover - cannot fail on an open eventfd
                    pass
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for these
            loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """On the loop: run every queued callback (the counter is read first, so a
        callback queued meanwhile wakes the loop again rather than being lost)."""
        if self._fd >= 0:
            with contextlib.suppress(BlockingIOError):
                os.eventfd_read(self._fd)
        queued = self._queued
        while queued:
            fn, args = queued.popleft()
            fn(*args)

    def close(self) -> None:
        with self._guard:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


_wakeups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Wakeup] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def wakeup_for(loop: asyncio.AbstractEventLoop) -> Wakeup:
    """``loop``'s hand-back channel (made on first use, on the loop's thread)."""
    wakeup = _wakeups.get(loop)
    if wakeup is not None:
        return wakeup
    with _guard:
        for other, old in list(_wakeups.items()):
            if other.is_closed():  # its selector is gone: nothing watches the descriptor
                old.close()
        wakeup = Wakeup(-1)
        wakeup._fd = _watched_eventfd(loop, wakeup.drain)
        weakref.finalize(loop, wakeup.close)
        _wakeups[loop] = wakeup
    return wakeup


def _watched_eventfd(loop: asyncio.AbstractEventLoop, drain: Callable[[], None]) -> int:
    """A new eventfd ``loop`` watches (calling ``drain``), or -1 where it cannot
    (then callbacks go through ``call_soon_threadsafe``)."""
    if not hasattr(os, "eventfd"):
        return -1
    fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        loop.add_reader(fd, drain)
    except (NotImplementedError, RuntimeError):  # e.g. a proactor loop
        os.close(fd)
        return -1
    return fd
