"""``python -m benchmarks.fsync_paths [--count N] [--dir DIR]``: ways to make one line durable.

Figure 2 holds a durable ``save`` against appending the same bytes to an open
file and ``fdatasync`` on the event loop's own thread (the physical floor, which
blocks the loop). This script times, alternating in one run on one disk, what
else could carry that write without blocking the loop, to show where the floor
of an asynchronous durable write lies on a machine:

* ``raw``: ``write`` + ``fdatasync`` on the loop's thread (blocks it: the baseline);
* ``thread``: the same in the file store's worker thread (``Batcher``), results
  handed back through the loop's eventfd: the bare cost of the hop;
* ``save``: ``JsonFileCheckpointStore.save`` with ``durability="fsync"`` (one
  step's changes appended to a held thread's segment);
* ``io_uring``: a linked ``IORING_OP_WRITE`` + ``IORING_OP_FSYNC`` (datasync)
  submitted from the loop, completion signalled on an eventfd the loop watches:
  the kernel's own asynchronous path, no Python thread (Linux x86-64 only;
  skipped where ``io_uring_setup`` is refused);
* ``prezeroed``: ``pwrite`` into a zero-filled, already synced file +
  ``fdatasync`` on the loop's thread (no size change to journal).

Medians in µs and as a multiple of ``raw``. Not part of ``python -m benchmarks``:
the ``io_uring`` path is an experiment through ``ctypes``, not library code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import dataclasses
import mmap
import os
import platform
import secrets
import struct
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.logformat import encode_line
from research_fsm.stores.file.batch import Batcher

from ._common import median
from .fig2_persistence import _recorded_checkpoints

_SETUP, _ENTER, _REGISTER = 425, 426, 427  # x86-64 syscall numbers
_OP_FSYNC, _OP_WRITE, _FSYNC_DATASYNC, _IO_LINK = 3, 23, 1, 4
_REGISTER_EVENTFD, _POPULATE = 4, 0x8000


class Uring:
    """A tiny io_uring: submit a linked write + fdatasync, await its completion."""

    def __init__(self) -> None:
        if platform.system() != "Linux" or platform.machine() != "x86_64":
            raise OSError("io_uring here needs Linux on x86-64")
        self._libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)
        self._fd = self._libc.syscall(_SETUP, 8, params)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup refused")
        sq_entries, cq_entries = struct.unpack_from("2I", params, 0)
        self._sq_off = struct.unpack_from(
            "7I", params, 40
        )  # head tail mask entries flags dropped array
        self._cq_off = struct.unpack_from("6I", params, 80)  # head tail mask entries overflow cqes
        size = max(self._sq_off[6] + sq_entries * 4, self._cq_off[5] + cq_entries * 16)
        prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | _POPULATE
        self._ring = mmap.mmap(self._fd, size, flags, prot, offset=0)  # one mapping (5.4+)
        self._cq = mmap.mmap(self._fd, size, flags, prot, offset=0x8000000)
        self._sqes = mmap.mmap(self._fd, sq_entries * 64, flags, prot, offset=0x10000000)
        self._mask = struct.unpack_from("I", self._ring, self._sq_off[2])[0]
        self._cmask = struct.unpack_from("I", self._cq, self._cq_off[2])[0]
        self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        efd = ctypes.c_int(self._efd)
        if self._libc.syscall(_REGISTER, self._fd, _REGISTER_EVENTFD, ctypes.byref(efd), 1):
            raise OSError(ctypes.get_errno(), "io_uring_register refused")
        self._waiting: dict[int, asyncio.Future[int]] = {}
        self._next = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_reader(self._efd, self._reap)
        self._loop = loop

    def close(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._efd)
        for mapping in (self._sqes, self._cq, self._ring):
            mapping.close()
        os.close(self._efd)
        os.close(self._fd)

    async def write_sync(self, fd: int, data: bytes) -> None:
        buffer = ctypes.create_string_buffer(data, len(data))
        self._next += 2
        tail = struct.unpack_from("I", self._ring, self._sq_off[1])[0]
        entries = [
            (_OP_WRITE, _IO_LINK, fd, 2**64 - 1, ctypes.addressof(buffer), len(data), 0),
            (_OP_FSYNC, 0, fd, 0, 0, 0, _FSYNC_DATASYNC),
        ]
        for n, (op, link, target, offset, addr, length, op_flags) in enumerate(entries):
            slot = (tail + n) & self._mask
            user_data = self._next + n
            sqe = (op, link, 0, target, offset, addr, length, op_flags, user_data, 0, 0, 0, 0, 0)
            struct.pack_into("BBHiQQIIQHHiQQ", self._sqes, slot * 64, *sqe)
            struct.pack_into("I", self._ring, self._sq_off[6] + slot * 4, slot)
        struct.pack_into("I", self._ring, self._sq_off[1], (tail + 2) & 0xFFFFFFFF)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting[self._next + 1] = future
        if self._libc.syscall(_ENTER, self._fd, 2, 0, 0, None, 0) != 2:
            raise OSError(ctypes.get_errno(), "io_uring_enter")
        result = await future
        if result < 0:
            raise OSError(-result, os.strerror(-result))

    def _reap(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self._efd)
        head = struct.unpack_from("I", self._cq, self._cq_off[0])[0]
        tail = struct.unpack_from("I", self._cq, self._cq_off[1])[0]
        while head != tail:
            data, result, _ = struct.unpack_from(
                "QiI", self._cq, self._cq_off[5] + (head & self._cmask) * 16
            )
            head += 1
            future = self._waiting.pop(data, None)
            if future is not None and not future.done():
                future.set_result(result)
        struct.pack_into("I", self._cq, self._cq_off[0], head & 0xFFFFFFFF)


def _open(path: Path, prezero: int = 0) -> int:
    if prezero:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"\0" * prezero)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    os.fsync(fd)
    return fd


async def measure(directory: Path, count: int) -> dict[str, float]:
    """Median seconds of each path, alternating the order every round."""
    recorded = await _recorded_checkpoints()
    template = next(cp for cp in recorded if cp.changes)
    data = os.urandom(len(encode_line(template, template.changes, {})))
    store = JsonFileCheckpointStore(directory / "store", durability="fsync")
    lease = await store.acquire("t")
    parent = dataclasses.replace(recorded[0], thread_id="t")
    await store.save(parent)
    fds = {name: _open(directory / name) for name in ("raw", "thread", "io_uring")}
    fds["prezeroed"] = _open(directory / "prezeroed", prezero=(count + 1) * len(data))
    offset = [0]
    batcher = Batcher()

    def append(fd: int) -> None:
        os.write(fd, data)
        os.fdatasync(fd)

    def prezeroed() -> None:
        os.pwrite(fds["prezeroed"], data, offset[0])
        offset[0] += len(data)
        os.fdatasync(fds["prezeroed"])

    async def save() -> None:
        nonlocal parent
        cp = dataclasses.replace(
            template,
            thread_id="t",
            checkpoint_id=secrets.token_hex(12),
            parent_id=parent.checkpoint_id,
            seq=parent.seq + 1,
        )
        await store.save(cp)
        parent = cp

    paths: dict[str, Callable[[], Awaitable[Any] | None]] = {
        "raw": lambda: append(fds["raw"]),
        "thread": lambda: batcher.run(append, fds["thread"]),
        "save": save,
        "prezeroed": prezeroed,
    }
    uring: Uring | None = None
    try:
        uring = Uring()
        uring.watch(asyncio.get_running_loop())
        paths["io_uring"] = lambda: uring.write_sync(fds["io_uring"], data)
    except OSError as exc:
        print(f"io_uring skipped: {exc}")
    times: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    try:
        for i in range(count):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                started = time.perf_counter()
                pending = paths[name]()
                if pending is not None:
                    await pending
                times[name].append(time.perf_counter() - started)
    finally:
        await lease.release()
        if uring is not None:
            uring.close()
        for fd in fds.values():
            os.close(fd)
    return {name: median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400, help="rounds (default 400)")
    parser.add_argument("--dir", type=Path, default=None, help="a folder on the disk to test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        result = asyncio.run(measure(Path(tmp), args.count))
    raw = result["raw"]
    print("| path | µs | x raw |\n| --- | --- | --- |")
    for name, seconds in result.items():
        print(f"| {name} | {seconds * 1e6:.0f} | {seconds / raw:.2f} |")


if __name__ == "__main__":
    main()
