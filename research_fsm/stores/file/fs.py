"""The file store's one door to the file system: replace it to inject faults.

``FileSystem`` holds every system call the file store makes on its files, with
the signatures of ``os`` (and ``fcntl`` for locks). A store takes one (``fs=``);
tests patch its methods on the instance (``monkeypatch.setattr(store.fs,
"fdatasync", failing)``) instead of patching modules. It also says which kind of
lease the store takes (``range_locks``): tests run the ``flock`` kind of systems
without open-file-description locks (macOS, BSD) on Linux too. The helpers below
take it as their first argument.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import stat
import struct
import sys
from pathlib import Path
from typing import Any

from research_fsm.engine import CorruptCheckpoint, UnsafeStoreDirectory

__all__ = [
    "NOFOLLOW",
    "OFD_LOCKS",
    "RANGE_LOCKS",
    "FileSystem",
    "fsync_dir",
    "make_private_dirs",
    "not_a_file",
    "open_file",
    "refuse_unsafe_dir",
    "remove",
    "unlink",
    "write_all",
]

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}
_OPEN_ERRORS = {errno.ELOOP: stat.S_IFLNK, errno.EISDIR: stat.S_IFDIR, errno.ENXIO: stat.S_IFIFO}
# struct flock for open-file-description locks (Linux, 64-bit off_t): l_type,
# l_whence, l_start, l_len, l_pid (must be 0).
_FLOCK = "hhxxxxqqixxxx"
OFD_LOCKS = (
    sys.platform == "linux"
    and hasattr(fcntl, "F_OFD_SETLK")
    and struct.calcsize(_FLOCK) == 32
    and struct.calcsize("P") == 8
)
"""Whether this system has open-file-description range locks (Linux)."""
RANGE_LOCKS = OFD_LOCKS
"""The lease kind of a ``FileSystem()``: range locks on ``.locks`` where the system
has them, else a ``flock`` on a file per thread. Tests (and their child
processes) set it to ``False`` to run the ``flock`` kind."""


class FileSystem:
    """The system calls of the file store, as ``os`` has them (and ``syncfs``).

    Args:
        range_locks: take leases as range locks on ``.locks`` (``True``, Linux
            only) or as a ``flock`` on ``<thread>.lock`` (``False``); by default
            ``RANGE_LOCKS``. Every store sharing a folder must take the same kind.
    """

    def __init__(self, *, range_locks: bool | None = None) -> None:
        chosen = RANGE_LOCKS if range_locks is None else range_locks
        if chosen and not OFD_LOCKS:
            raise ValueError("range locks need open-file-description locks (Linux)")
        self.range_locks = chosen

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        return os.open(path, flags, mode)

    def close(self, fd: int) -> None:
        os.close(fd)

    def read_all(self, fd: int) -> bytes:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return os.write(fd, data)

    def lseek(self, fd: int, position: int) -> None:
        """Move ``fd``'s file offset to ``position`` (from the start)."""
        os.lseek(fd, position, os.SEEK_SET)

    def fstat(self, fd: int) -> os.stat_result:
        return os.fstat(fd)

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result:
        return os.stat(path)

    def lexists(self, path: str | os.PathLike[str]) -> bool:
        return os.path.lexists(path)

    def ftruncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def fdatasync(self, fd: int) -> None:
        os.fdatasync(fd)

    def syncfs(self, fd: int) -> None:
        """``syncfs(2)``: write out everything of the file system holding ``fd``."""
        if _libc().syncfs(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    def has_syncfs(self) -> bool:
        return sys.platform == "linux" and hasattr(_libc(), "syncfs")

    def listdir(self, path: str | os.PathLike[str]) -> list[str]:
        return os.listdir(path)

    def unlink(self, path: str | os.PathLike[str]) -> None:
        os.unlink(path)

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        os.replace(src, dst)

    def link(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        os.link(src, dst)

    def mkdir(self, path: str | os.PathLike[str], mode: int) -> None:
        os.mkdir(path, mode)

    def rmdir(self, path: str | os.PathLike[str]) -> None:
        os.rmdir(path)

    def lstat(self, path: str | os.PathLike[str]) -> os.stat_result:
        return os.lstat(path)

    def flock(self, fd: int, operation: int) -> None:
        fcntl.flock(fd, operation)

    def lock_range(self, fd: int, kind: int, offset: int) -> None:
        """An open-file-description lock of ``kind`` (``fcntl.F_WRLCK``, or
        ``F_UNLCK``) on the byte at ``offset``; ``OSError`` if it is taken."""
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0))


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def open_file(fs: FileSystem, path: Path, flags: int, owner: str) -> int:
    """Open a file of the store: never through a symbolic link, never blocking on
    a FIFO, and only a regular file (else ``CorruptCheckpoint`` naming it, on
    behalf of thread ``owner``)."""
    try:
        fd = fs.open(path, flags | NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno not in _OPEN_ERRORS:
            raise
        raise not_a_file(path, owner, _OPEN_ERRORS[exc.errno]) from None
    mode = fs.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        fs.close(fd)
        raise not_a_file(path, owner, stat.S_IFMT(mode))
    return fd


def not_a_file(path: Path, owner: str, kind: int) -> CorruptCheckpoint:
    what = _KINDS.get(kind, "not a regular file")
    return CorruptCheckpoint(
        owner, f"{path} is {what}, not a file of this store: move it away to use the thread"
    )


def write_all(fs: FileSystem, fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[fs.write(fd, view) :]


def make_private_dirs(fs: FileSystem, path: Path) -> bool:
    """``mkdir -p`` where every directory made, missing parents included, is 0700
    (``Path.mkdir(parents=True)`` gives parents the umask's mode, maybe 0777).
    Returns whether ``path`` was made."""
    try:
        fs.mkdir(path, 0o700)
    except FileExistsError:
        return False
    except FileNotFoundError:
        make_private_dirs(fs, path.parent)
        try:
            fs.mkdir(path, 0o700)
        except FileExistsError:
            return False
    return True


def refuse_unsafe_dir(fs: FileSystem, directory: Path) -> bool:
    """Raise ``UnsafeStoreDirectory`` if another user owns ``directory`` or others
    can write it; returns whether it was checked (``False``: not made yet)."""
    try:
        st = fs.stat(directory)
    except FileNotFoundError:
        return False  # made 0700 by the first write
    if st.st_uid != os.geteuid():
        raise UnsafeStoreDirectory(str(directory), f"it is owned by uid {st.st_uid}")
    if st.st_mode & 0o022:
        mode = stat.S_IMODE(st.st_mode)
        raise UnsafeStoreDirectory(str(directory), f"others can write it (mode {mode:o})")
    return True


def unlink(fs: FileSystem, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.unlink(path)


def remove(fs: FileSystem, path: Path) -> None:
    """Remove whatever is at ``path`` (a file, a symbolic link, a directory and all
    in it, never following a link): a thread's file that something else took the
    place of is still deleted with its thread."""
    try:
        fs.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.EPERM):
            raise
    try:
        if not stat.S_ISDIR(fs.lstat(path).st_mode):
            raise OSError(errno.EPERM, "cannot remove", str(path))
        for name in fs.listdir(path):
            remove(fs, path / name)
        fs.rmdir(path)
    except FileNotFoundError:
        return


def fsync_dir(fs: FileSystem, folder: Path) -> None:
    fd = fs.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fs.fsync(fd)
    finally:
        fs.close(fd)
