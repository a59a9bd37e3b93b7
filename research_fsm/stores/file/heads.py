"""What a file store remembers of each thread between calls: its newest checkpoint.

A lease holder keeps its newest segment open for appending and trusts the
checkpoint it last read or wrote as long as that segment still ends with the
same bytes (same inode, size and last line, and a zero after it where the file
is padded: ``append``) and no newer segment follows it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from research_fsm.engine import Checkpoint

from .fs import FileSystem, open_file
from .segments import Segments

__all__ = ["Head", "Heads"]

_CACHED = 256  # newest checkpoints remembered between leases (LRU)


@dataclass(slots=True)
class Head:
    """The newest checkpoint of a thread as this store last read or wrote it."""

    checkpoint: Checkpoint
    segments: list[int]  # first seqs of the live segments, newest first
    ino: int  # the newest segment's inode, size and last bytes: unchanged means
    size: int  # nobody wrote to it since
    tail: bytes
    records: int  # lines in the newest segment
    base: int  # bytes of its first (whole-state) line
    fd: int | None = field(default=None)  # open for appending while the lease is held
    padding: int = field(default=0)  # zero bytes after ``size``, to the end of the file


class Heads:
    """The heads of the threads this store used last, held ones never dropped."""

    def __init__(self, fs: FileSystem, segments: Segments, held: Callable[[str], bool]) -> None:
        self._fs = fs
        self._segments = segments
        self._held = held
        self._heads: dict[str, Head] = {}

    def get(self, thread_id: str) -> Head | None:
        return self._heads.get(thread_id)

    def current(self, thread_id: str, stem: str, *, holder: bool = True) -> Head | None:
        """The thread's head if the files on disk still end where it does. A reader
        (``holder=False``) only looks: the head may be the lease holder's, in use."""
        head = self._heads.get(thread_id)
        if head is None or not self._unchanged(stem, head):
            return None
        if holder and self._held(thread_id):  # most recently used
            self._heads[thread_id] = self._heads.pop(thread_id)
        return head

    def remember(self, thread_id: str, head: Head) -> None:
        old = self._heads.pop(thread_id, None)
        if old is not None and old.fd is not None and old.fd != head.fd:
            self._fs.close(old.fd)
        self._heads[thread_id] = head
        if len(self._heads) > _CACHED:
            for name in list(self._heads):
                if not self._held(name):
                    self.forget(name)
                    if len(self._heads) <= _CACHED:
                        break

    def forget(self, thread_id: str) -> None:
        head = self._heads.pop(thread_id, None)
        if head is not None and head.fd is not None:
            self._fs.close(head.fd)

    def close(self, thread_id: str) -> None:
        """Close the thread's appending descriptor (its lease is going)."""
        head = self._heads.get(thread_id)
        if head is not None and head.fd is not None:
            fd, head.fd = head.fd, None
            self._fs.close(fd)

    def _unchanged(self, stem: str, head: Head) -> bool:
        """Whether the newest segment still ends with the line this store last saw,
        and no newer segment follows it."""
        if self._fs.lexists(self._segments.path(stem, head.checkpoint.seq + 1)):
            return False
        path = self._segments.path(stem, head.segments[0])
        try:
            fd = open_file(self._fs, path, os.O_RDONLY, stem)
        except FileNotFoundError:
            return False
        try:
            st = self._fs.fstat(fd)
            if st.st_ino != head.ino or st.st_size != head.size + head.padding:
                return False
            # Nobody wrote over the padding: the byte after the last line is still a zero.
            end = head.tail + (b"\0" if head.padding else b"")
            return self._fs.pread(fd, len(end), head.size - len(head.tail)) == end
        finally:
            self._fs.close(fd)
