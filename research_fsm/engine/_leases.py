"""The file store's leases: one kernel lock per thread, released when the process dies.

Where the system has open-file-description locks (Linux), a lease is a one-byte
range lock on the shared ``.locks`` file, at a hash of the thread's id: no file
per thread. Elsewhere it is a ``flock`` on ``<thread>.lock``.

Deleting ``.locks`` while leases are held must not let a second process take
them on a new ``.locks``. So every store holds a shared ``flock`` on the store
directory while it holds any lease, and only a store holding an exclusive one
(nobody else holds a lease) may create ``.locks``; a store that finds its own
``.locks`` gone opens the new one once it holds no lease.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import random
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ._errors import StoreWriteError, ThreadBusy
from ._fs import NOFOLLOW, FileSystem, open_file

__all__ = ["OFD_LOCKS", "FileLease", "Locks"]

# struct flock for open-file-description locks (Linux, 64-bit off_t): l_type,
# l_whence, l_start, l_len, l_pid (must be 0).
_FLOCK = "hhxxxxqqixxxx"
OFD_LOCKS = (
    sys.platform == "linux"
    and hasattr(fcntl, "F_OFD_SETLK")
    and struct.calcsize(_FLOCK) == 32
    and struct.calcsize("P") == 8
)
_CREATE_ATTEMPTS = 20  # tries to create ``.locks`` while other stores hold the directory
_CLAIMED = -2  # being locked by a worker thread of this store
_RANGE = -1  # held as a range lock on ``.locks``


class FileLease:
    """A thread held by a file store; ``release`` gives it back (twice is harmless)."""

    __slots__ = ("_release", "_thread_id")

    def __init__(self, release: Callable[[str], None], thread_id: str) -> None:
        self._release: Callable[[str], None] | None = release
        self._thread_id = thread_id

    async def release(self) -> None:
        self.release_now()

    def release_now(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release(self._thread_id)


class Locks:
    """The threads this store holds, and the kernel locks that hold them."""

    def __init__(
        self, fs: FileSystem, directory: Path, stem: Callable[[str], str],
        make_root: Callable[[], None],
    ) -> None:  # fmt: skip
        self._fs = fs
        self._directory = directory
        self._stem = stem
        self._make_root = make_root
        # The threads held: their flock descriptor, _RANGE, or _CLAIMED.
        self._held: dict[str, int] = {}
        self._claims = threading.Lock()
        self._guard = threading.Lock()  # the descriptors below, and ``_ranges``
        self._lock_fd: int | None = None  # ``.locks``
        self._dir_fd: int | None = None  # the directory, for its shared flock
        self._pid = 0  # the process that opened them (a forked child reopens)
        self._ranges = 0  # range locks held

    def holds(self, thread_id: str) -> bool:
        return thread_id in self._held

    def lock(self, thread_id: str) -> None:
        """Take the thread's lock (``ThreadBusy`` if anyone holds it, this store included)."""
        with self._claims:  # two worker threads of this store may ask at once
            if thread_id in self._held:
                raise ThreadBusy(thread_id)
            self._held[thread_id] = _CLAIMED
        try:
            self._held[thread_id] = self._range(thread_id) if OFD_LOCKS else self._flock(thread_id)
        except BaseException:
            self._held.pop(thread_id, None)
            raise

    def unlock(self, thread_id: str) -> None:
        lock = self._held.pop(thread_id, None)
        if lock is None or lock == _CLAIMED:
            return
        if lock >= 0:
            self._fs.close(lock)  # closing the descriptor drops the flock
            return
        with self._guard:
            self._set_range(thread_id, fcntl.F_UNLCK, self._lock_fd)
            self._leave()

    def _range(self, thread_id: str) -> int:
        with self._guard:
            try:
                fd = self._enter(thread_id)
            except StoreWriteError:
                raise
            except OSError as exc:  # a read-only or full file system, no permission
                raise StoreWriteError(thread_id, exc) from exc
            try:
                self._set_range(thread_id, fcntl.F_WRLCK, fd)
            except OSError as exc:
                self._leave()
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise ThreadBusy(thread_id) from None
                raise StoreWriteError(thread_id, exc) from exc
            except BaseException:
                self._leave()
                raise
        return _RANGE

    def _set_range(self, thread_id: str, kind: int, fd: int | None) -> None:
        assert fd is not None  # held since the range lock was taken
        # One byte per thread, at a 63-bit hash of its id: locks are owned by the
        # open file description, so each store (and each process) competes for it.
        digest = hashlib.sha256(self._stem(thread_id).encode()).digest()
        offset = int.from_bytes(digest[:8], "big") >> 1
        lock = struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)

    def _enter(self, thread_id: str) -> int:
        """With ``_guard``: the ``.locks`` descriptor to lock on, holding the
        directory's shared flock (taken with the first range lock)."""
        if self._pid != os.getpid():  # a forked child: its own descriptions
            self._lock_fd = self._dir_fd = None
            self._pid, self._ranges = os.getpid(), 0
        if self._dir_fd is None:
            self._make_root()
            self._dir_fd = self._fs.open(self._directory, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
        if self._ranges == 0:
            fcntl.flock(self._dir_fd, fcntl.LOCK_SH)  # waits out a store creating ``.locks``
            if self._lock_fd is not None and self._fs.fstat(self._lock_fd).st_nlink == 0:
                self._fs.close(self._lock_fd)  # deleted: use the one there now
                self._lock_fd = None
        self._ranges += 1
        try:
            if self._lock_fd is None:
                self._lock_fd = self._open_lock_file(thread_id)
        except BaseException:
            self._leave()
            raise
        return self._lock_fd

    def _leave(self) -> None:
        self._ranges -= 1
        if self._ranges == 0 and self._dir_fd is not None:
            fcntl.flock(self._dir_fd, fcntl.LOCK_UN)

    def _open_lock_file(self, thread_id: str) -> int:
        """Open ``.locks`` (holding the directory's shared flock); create it only
        holding the flock exclusively: no other store holds a lease here, on a
        ``.locks`` that may have been deleted by hand."""
        path = self._directory / ".locks"
        assert self._dir_fd is not None
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                return open_file(self._fs, path, os.O_RDWR, thread_id)
            except FileNotFoundError:
                pass
            # Stores creating it at once must not block each other: each backs off
            # holding nothing, so one of them gets the flock exclusively.
            fcntl.flock(self._dir_fd, fcntl.LOCK_UN)
            try:
                fcntl.flock(self._dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(random.uniform(0.5, 2.0) * 1e-3 * min(attempt + 1, 5))
                fcntl.flock(self._dir_fd, fcntl.LOCK_SH)
                continue
            try:
                return open_file(self._fs, path, os.O_RDWR | os.O_CREAT, thread_id)
            finally:
                fcntl.flock(self._dir_fd, fcntl.LOCK_SH)
        raise StoreWriteError(
            thread_id,
            OSError(
                errno.EBUSY,
                f"{path} is missing while another process holds leases in this store "
                "(was it deleted?); try again once those runs end",
            ),
        )

    def _flock(self, thread_id: str) -> int:
        path = self._directory / f"{self._stem(thread_id)}.lock"
        try:
            try:
                fd = open_file(self._fs, path, os.O_RDWR | os.O_CREAT, thread_id)
            except FileNotFoundError:  # a new store: make its folder first
                self._make_root()
                fd = open_file(self._fs, path, os.O_RDWR | os.O_CREAT, thread_id)
        except OSError as exc:  # a read-only or full file system, no permission
            raise StoreWriteError(thread_id, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fs.close(fd)
            raise ThreadBusy(thread_id) from None
        except BaseException:
            self._fs.close(fd)
            raise
        return fd

    def close(self) -> None:
        """Close the shared descriptors (at garbage collection)."""
        if self._pid == os.getpid():
            for fd in (self._lock_fd, self._dir_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
