"""The key that signs a file store's resume tokens, shared by every process."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from research_fsm.engine import CorruptCheckpoint

from .fs import NOFOLLOW, FileSystem, fsync_dir, open_file, unlink, write_all

__all__ = ["load_secret"]


def load_secret(fs: FileSystem, directory: Path, make_root: Callable[[], None]) -> bytes:
    """The key in ``directory/.secret``, made (0600) by the first process to ask."""
    # The key is written to a temporary file, synced and hard-linked into place,
    # so ``.secret`` is always whole: a writer killed (or out of disk) midway
    # leaves no half-written key that would lock every token out for good.
    path = directory / ".secret"
    make_root()
    if not fs.lexists(path):
        tmp = directory / f".tmp-secret-{secrets.token_hex(8)}"
        try:
            fd = fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
            try:
                write_all(fs, fd, secrets.token_bytes(32).hex().encode())
                fs.fsync(fd)
            finally:
                fs.close(fd)
            with contextlib.suppress(FileExistsError):  # another process was first
                fs.link(tmp, path)
            fsync_dir(fs, directory)
        finally:
            unlink(fs, tmp)
    fd = open_file(fs, path, os.O_RDONLY, ".secret")
    try:
        data = fs.pread(fd, 65, 0)
    finally:
        fs.close(fd)
    if len(data) == 64:
        try:
            return bytes.fromhex(data.decode("ascii"))
        except ValueError:
            pass
    raise CorruptCheckpoint(
        ".secret", f"the key file {path} is damaged; delete it to make a new key"
    )
