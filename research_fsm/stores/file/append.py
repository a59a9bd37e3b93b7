"""Writing a line at the end of a thread's newest segment, padded to its disk block.

With ``durability="fsync"`` a write that grows the file also fills the rest of
its last disk block with zero bytes, in the same ``write(2)``. The lines after
it overwrite those zeros in place: the file keeps its size, so their
``fdatasync`` writes the data alone, with no file-system journal commit for a
new size (about 0.75x the cost of an appending one on ext4; ``python -m
benchmarks.fsync_paths``). The zeros take no disk space the block would not
take anyway, and readers skip them (``scan_bytes``). A line is written where
the last one ended (the descriptor's offset), never after the padding.
"""

from __future__ import annotations

import os
from pathlib import Path

from .fs import FileSystem, open_file, write_all
from .heads import Head

__all__ = ["BLOCK", "cut_back", "open_at_end", "write_line"]

BLOCK = 4096  # the file system's block size assumed for the padding


def open_at_end(fs: FileSystem, path: Path, head: Head, owner: str) -> int:
    """Open the newest segment for writing, its offset after ``head``'s last line."""
    fd = open_file(fs, path, os.O_WRONLY, owner)
    try:
        fs.lseek(fd, head.size)
    except BaseException:
        fs.close(fd)
        raise
    return fd


def write_line(fs: FileSystem, fd: int, end: int, padding: int, line: bytes, pad: bool) -> int:
    """Write ``line`` at ``fd``'s offset, ``end`` (the end of the last line, followed
    by ``padding`` zeros); with ``pad``, a write that grows the file also pads its
    last block. Returns the zeros left after the line."""
    if len(line) <= padding or not pad:
        write_all(fs, fd, line)
        return max(padding - len(line), 0)
    zeros = -(end + len(line)) % BLOCK
    write_all(fs, fd, line + bytes(zeros))
    if zeros:
        fs.lseek(fd, end + len(line))
    return zeros


def cut_back(fs: FileSystem, head: Head) -> None:
    """After a failed write: cut the segment back to ``head``'s last line (whatever
    part of the new line landed goes, and the padding with it)."""
    assert head.fd is not None
    fs.ftruncate(head.fd, head.size)
    fs.lseek(head.fd, head.size)
    head.padding = 0
