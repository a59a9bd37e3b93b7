"""The file store's leases: one kernel lock per thread, released when the process dies.

Where the system has open-file-description locks (Linux), a lease is a one-byte
range lock on the shared ``.locks`` file, at a hash of the thread's id: no file
per thread. Elsewhere (``FileSystem.range_locks`` false: macOS, BSD) it is a
``flock`` on ``<thread>.lock``.

Deleting a lock file while a lease on it is held must not let a second process
take the thread on a new file. So every store holds a shared ``flock`` on the
store directory while it holds any lease, and a lock file that may be someone's
is created only by a store holding that flock exclusively (nobody else holds a
lease here): ``.locks`` always, ``<thread>.lock`` once the thread has
checkpoints. A new thread's lock file is created freely; deleted before its
holder's first save, a second holder's first save (which creates the thread's
first segment exclusively) fails before any node code runs. A ``<thread>.lock``
replaced between opening and locking it is let go, and the one there locked; a
store that finds its own ``.locks`` gone opens the new one once it holds no lease.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from research_fsm.engine import StoreWriteError, ThreadBusy

from .fs import NOFOLLOW, OFD_LOCKS, FileSystem, open_file

__all__ = ["OFD_LOCKS", "FileLease", "Locks"]

_CREATE_ATTEMPTS = 20  # tries to create a lock file while other stores hold the directory
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

    def holds(self, release: Callable[[str], None], thread_id: str) -> bool:
        """Whether this is a lease on ``thread_id`` given by the store whose
        ``release`` that is, not yet released."""
        return self._release == release and self._thread_id == thread_id


class Locks:
    """The threads this store holds, and the kernel locks that hold them."""

    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        stem: Callable[[str], str],
        make_root: Callable[[], None],
        known: Callable[[str], bool],
    ) -> None:
        self._fs = fs
        self._directory = directory
        self._stem = stem
        self._make_root = make_root
        self._known = known  # whether a thread (by stem) has checkpoints: had a lock file
        self._ranges = fs.range_locks
        # The threads held: their flock descriptor, _RANGE, or _CLAIMED.
        self._held: dict[str, int] = {}
        self._claims = threading.Lock()
        self._guard = threading.Lock()  # the descriptors below, and ``_leases``
        self._lock_fd: int | None = None  # ``.locks``
        self._dir_fd: int | None = None  # the directory, for its shared flock
        self._pid = 0  # the process that opened them (a forked child reopens)
        self._leases = 0  # leases held (or being taken) under the directory's flock

    def holds(self, thread_id: str) -> bool:
        return thread_id in self._held

    def lock(self, thread_id: str) -> None:
        """Take the thread's lock (``ThreadBusy`` if anyone holds it, this store included)."""
        with self._claims:  # two worker threads of this store may ask at once
            if thread_id in self._held:
                raise ThreadBusy(thread_id)
            self._held[thread_id] = _CLAIMED
        try:
            with self._guard:
                self._held[thread_id] = self._take(thread_id)
        except BaseException:
            self._held.pop(thread_id, None)
            raise

    def try_lock(self, thread_id: str) -> bool:
        """Take the thread's lock here and now if that cannot wait on anything: range
        locks, this store's descriptors open, no worker thread of this store taking a
        lock, the directory's shared flock given at once. ``False``: nothing was taken
        (take it with ``lock``, in a worker thread); ``ThreadBusy`` if anyone holds it."""
        if not self._ranges or self._pid != os.getpid() or self._lock_fd is None:
            return False
        if not self._guard.acquire(blocking=False):
            return False
        try:
            with self._claims:
                if thread_id in self._held:
                    raise ThreadBusy(thread_id)
                self._held[thread_id] = _CLAIMED
            try:
                taken = self._take_now(thread_id)
            except BaseException:
                self._held.pop(thread_id, None)
                raise
            if taken:
                self._held[thread_id] = _RANGE
            else:
                self._held.pop(thread_id, None)
            return taken
        finally:
            self._guard.release()

    def _take_now(self, thread_id: str) -> bool:
        """With ``_guard``: ``_take`` for a range lock, unless the directory's shared
        flock would wait or ``.locks`` was deleted (``False``: nothing held)."""
        assert self._dir_fd is not None and self._lock_fd is not None
        try:
            if self._leases == 0:
                self._fs.flock(self._dir_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                if self._fs.fstat(self._lock_fd).st_nlink == 0:
                    self._fs.flock(self._dir_fd, fcntl.LOCK_UN)
                    return False  # deleted: ``lock`` opens the one there now
        except OSError:  # held exclusively by a store creating a lock file, or a fault
            return False
        self._leases += 1
        try:
            self._fs.lock_range(self._lock_fd, fcntl.F_WRLCK, self._offset(thread_id))
        except OSError as exc:
            self._leave()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise ThreadBusy(thread_id) from None
            return False
        except BaseException:
            self._leave()
            raise
        return True

    def unlock(self, thread_id: str) -> None:
        lock = self._held.pop(thread_id, None)
        if lock is None or lock == _CLAIMED:
            return
        with self._guard:
            if lock >= 0:
                self._fs.close(lock)  # closing the descriptor drops the flock
            else:
                assert self._lock_fd is not None  # held since the range lock was taken
                self._fs.lock_range(self._lock_fd, fcntl.F_UNLCK, self._offset(thread_id))
            self._leave()

    def _take(self, thread_id: str) -> int:
        """With ``_guard``: lock the thread, holding the directory's shared flock."""
        try:
            self._share()
        except OSError as exc:  # a read-only or full file system, no permission
            raise StoreWriteError(thread_id, exc) from exc
        try:
            return self._range(thread_id) if self._ranges else self._flock(thread_id)
        except StoreWriteError:
            self._leave()
            raise
        except OSError as exc:  # a read-only or full file system, no permission
            self._leave()
            raise StoreWriteError(thread_id, exc) from exc
        except BaseException:
            self._leave()
            raise

    def _share(self) -> None:
        """With ``_guard``: one more lease; the first takes the directory's shared flock."""
        if self._pid != os.getpid():  # a forked child: its own descriptions
            self._lock_fd = self._dir_fd = None
            self._pid, self._leases = os.getpid(), 0
        if self._dir_fd is None:
            self._make_root()
            self._dir_fd = self._fs.open(self._directory, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
        if self._leases == 0:
            self._fs.flock(self._dir_fd, fcntl.LOCK_SH)  # waits out a store creating a lock file
            if self._lock_fd is not None and self._fs.fstat(self._lock_fd).st_nlink == 0:
                self._fs.close(self._lock_fd)  # deleted: use the one there now
                self._lock_fd = None
        self._leases += 1

    def _leave(self) -> None:
        self._leases -= 1
        if self._leases == 0 and self._dir_fd is not None:
            self._fs.flock(self._dir_fd, fcntl.LOCK_UN)

    def _range(self, thread_id: str) -> int:
        if self._lock_fd is None:
            self._lock_fd = self._create_alone(self._directory / ".locks", thread_id)
        try:
            self._fs.lock_range(self._lock_fd, fcntl.F_WRLCK, self._offset(thread_id))
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise ThreadBusy(thread_id) from None
            raise
        return _RANGE

    def _offset(self, thread_id: str) -> int:
        # One byte per thread, at a 63-bit hash of its id: locks are owned by the
        # open file description, so each store (and each process) competes for it.
        digest = hashlib.sha256(self._stem(thread_id).encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def _flock(self, thread_id: str) -> int:
        """``<thread>.lock``, flocked: the file at that path when it was locked."""
        path = self._directory / f"{self._stem(thread_id)}.lock"
        for _ in range(_CREATE_ATTEMPTS):
            fd = self._open_thread_file(path, thread_id)
            try:
                self._fs.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if self._same_file(fd, path):
                    return fd
            except BlockingIOError:
                self._fs.close(fd)
                raise ThreadBusy(thread_id) from None
            except BaseException:
                self._fs.close(fd)
                raise
            self._fs.close(fd)  # replaced while being locked: lock the one there now
        raise StoreWriteError(thread_id, OSError(errno.EBUSY, f"{path} keeps being replaced"))

    def _open_thread_file(self, path: Path, thread_id: str) -> int:
        try:
            return open_file(self._fs, path, os.O_RDWR, thread_id)
        except FileNotFoundError:
            pass
        if self._known(self._stem(thread_id)):  # it had one: deleted, maybe while held
            return self._create_alone(path, thread_id)
        # A new thread's: nobody's yet (see the module's docstring).
        return open_file(self._fs, path, os.O_RDWR | os.O_CREAT, thread_id)

    def _same_file(self, fd: int, path: Path) -> bool:
        held = self._fs.fstat(fd)
        try:
            there = self._fs.stat(path)
        except FileNotFoundError:
            return False
        return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)

    def _create_alone(self, path: Path, thread_id: str) -> int:
        """Open a lock file (holding the directory's shared flock); create it only
        holding the flock exclusively: no other store holds a lease here, on a
        lock file that may have been deleted by hand."""
        assert self._dir_fd is not None
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                return open_file(self._fs, path, os.O_RDWR, thread_id)
            except FileNotFoundError:
                if self._leases > 1:  # this store holds others: it keeps the shared flock
                    break
            # Stores creating it at once must not block each other: each backs off
            # holding nothing, so one of them gets the flock exclusively.
            self._fs.flock(self._dir_fd, fcntl.LOCK_UN)
            try:
                self._fs.flock(self._dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(random.uniform(0.5, 2.0) * 1e-3 * min(attempt + 1, 5))
                self._fs.flock(self._dir_fd, fcntl.LOCK_SH)
                continue
            try:
                return open_file(self._fs, path, os.O_RDWR | os.O_CREAT, thread_id)
            finally:
                self._fs.flock(self._dir_fd, fcntl.LOCK_SH)
        raise StoreWriteError(
            thread_id,
            OSError(
                errno.EBUSY,
                f"{path} is missing while leases are held in this store (was it "
                "deleted?); try again once those runs end",
            ),
        )

    def close(self) -> None:
        """Close the shared descriptors (at garbage collection)."""
        if self._pid == os.getpid():
            for fd in (self._lock_fd, self._dir_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
