"""The file store's thread listing: ``.threads``, a journal of what each thread is.

Listing the threads of a folder of 20,000 must not open 20,000 files (nor even stat
them: a ``stat`` each costs more than the whole page may). So the store keeps one
more file, ``.threads``: a journal, one line per record, each a thread's summary as
of one of its saves (``[thread_id, status, node, updated_at, checkpoints, parent
thread, checkpoint_id]``), or ``[thread_id]`` when it was deleted; a line ends with a
tab, the CRC-32 of the JSON in 8 hex digits and a newline. A lease holder appends a
record at its first save after taking the lease and at every save that changes the
status (a run writes two: "running" as it starts, then how it ended), so a save in
the middle of a run writes nothing here; a save without the lease writes one.

The journal is a cache, never the truth, and never synced: a listing (``Listing``)
reads it from where it read last, then reads again each thread of the page it
shows, from the end of the thread's newest segment (``last_header``: one ``pread``,
no state folded), and shows what that says. A thread whose run stopped between its
segment's write and its journal line, or whose line a power cut lost, is thus shown
as it is; only the order and the filters may lag for it until its next run. A
journal that is missing (a store made before it) or damaged is rebuilt from the
threads' files (the folder listed, each thread's last line read), and one much
longer than its threads is written again, compacted (the new file renamed over it;
writers notice the new file at their next record).
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pydantic_core

from research_fsm.engine import Checkpoint, ThreadInfo, ThreadPage
from research_fsm.engine.store import ThreadQuery, thread_info, validate_thread_id

from .._codec.logformat import last_header
from .fs import NOFOLLOW, FileSystem, open_file, unlink, write_all
from .segments import Segments, file_stem, segment_seq

__all__ = ["JOURNAL", "Listing"]

JOURNAL = ".threads"
_TAIL_READ = 16 << 10  # bytes read from a segment's end, first (more if a line is longer)
_COMPACT_AT = 1 << 20  # a journal this long, and 4x its live records, is written anew
Row = tuple[str, str, str | None, str, int, str | None, str]


def _line(row: list[Any]) -> bytes:
    body = pydantic_core.to_json(row)
    return body + b"\t" + f"{zlib.crc32(body):08x}".encode() + b"\n"


def _row(info: ThreadInfo) -> list[Any]:
    return [
        info.thread_id,
        info.status,
        info.node,
        info.updated_at,
        info.checkpoints,
        info.parent_thread_id,
        info.checkpoint_id,
    ]


def _info(row: list[Any]) -> ThreadInfo:
    thread_id, status, node, updated_at, checkpoints, parent, checkpoint_id = row
    return ThreadInfo(
        thread_id=thread_id,
        status=status,
        node=node,
        updated_at=updated_at,
        checkpoints=checkpoints,
        parent_thread_id=parent,
        checkpoint_id=checkpoint_id,
    )


def _stem_thread(stem: str) -> str | None:
    """The thread id a file stem belongs to (``file_stem`` undone), or ``None``."""
    thread_id = stem.partition("+")[0]
    try:
        validate_thread_id(thread_id)
    except ValueError:
        return None
    return thread_id if file_stem(thread_id) == stem else None


class Listing:
    """The journal's writer and reader for one store (thread-safe)."""

    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        segments: Segments,
        keep: int | None,
        make_root: Callable[[], None],
    ) -> None:
        self._fs = fs
        self._directory = directory
        self._path = directory / JOURNAL
        self._segments = segments
        self._keep = keep
        self._make_root = make_root
        self._lock = threading.Lock()
        self._fd: int | None = None  # appending
        self._fd_ino = 0
        self._written: dict[str, str] = {}  # leased threads: the status last written
        self._known: dict[str, ThreadInfo] = {}  # what the journal says, as read so far
        self._read_ino = 0
        self._read_at = 0  # the journal's bytes read so far
        self._lines = 0  # records read from it (live or not)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._fs.close(fd)

    def count(self, seq: int) -> int:
        """How many checkpoints ``history`` gives of a thread whose newest is ``seq``:
        ``keep`` prunes whole segments, so at least ``keep`` stay once there were."""
        return seq if self._keep is None else min(seq, self._keep)

    # -- writing (the store's worker thread) ----------------------------------------

    def saved(self, cp: Checkpoint, leased: bool) -> None:
        """``cp`` was saved: record it when it is the first save since the lease was
        taken, changes the status, or comes without a lease."""
        if leased and self._written.get(cp.thread_id) == cp.status:
            return
        self._written[cp.thread_id] = cp.status
        self._append(_line(_row(thread_info(cp, self.count(cp.seq)))))

    def released(self, thread_id: str) -> None:
        self._written.pop(thread_id, None)

    def deleted(self, thread_id: str) -> None:
        self._written.pop(thread_id, None)
        self._append(_line([thread_id]))

    def _append(self, line: bytes) -> None:
        """One record at the journal's end (never synced: it is a cache). A failure
        is not the save's: the listing reads the thread's files again anyway."""
        try:
            if self._fd is not None and self._moved():
                self.close()
            if self._fd is None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW
                try:
                    self._fd = self._fs.open(self._path, flags, 0o600)
                except FileNotFoundError:
                    self._make_root()
                    self._fd = self._fs.open(self._path, flags, 0o600)
                self._fd_ino = self._fs.fstat(self._fd).st_ino
            write_all(self._fs, self._fd, line)
        except OSError:
            self.close()

    def _moved(self) -> bool:
        """Whether a compaction put a new journal in place of the one being appended to."""
        try:
            return self._fs.stat(self._path).st_ino != self._fd_ino
        except FileNotFoundError:
            return True

    # -- reading ----------------------------------------------------------------------

    def page(self, query: ThreadQuery) -> ThreadPage:
        """The page ``query`` asks for: chosen by the journal, each thread read again
        from its files (a thread changed since moves, or leaves the page, and the
        page is chosen again)."""
        with self._lock:
            self._catch_up()
            for _ in range(4):
                chosen = query.page(self._known.values())
                fresh = [self._refresh(info) for info in chosen.threads]
                if all(new == old for new, old in zip(fresh, chosen.threads, strict=True)):
                    return chosen
            return query.page([info for info in fresh if info is not None])

    def _refresh(self, info: ThreadInfo) -> ThreadInfo | None:
        """``info`` as the thread's files tell it now (``None``: the thread is gone);
        kept as it is when they cannot tell (damage: ``load_latest`` reports it)."""
        try:
            found = self.read_thread(info.thread_id)
        except OSError:
            return info
        if found is False:
            return info
        if found is None:
            self._known.pop(info.thread_id, None)
            return None
        self._known[info.thread_id] = found
        return found

    def read_thread(self, thread_id: str) -> ThreadInfo | Literal[False] | None:
        """The thread as the last line of its newest segment says (``None``: no
        checkpoint; ``False``: damaged, or not a regular file)."""
        stem = file_stem(thread_id)
        segments = self._segments.live(stem)[0]
        if not segments:
            return None
        first = segments[0]
        while True:
            header = self._last_line(stem, first, thread_id)
            if header is None or header is False:
                return header
            following = header.seq + 1
            if not self._fs.lexists(self._segments.path(stem, following)):
                return thread_info(header, self.count(header.seq))
            first = following  # a newer segment the list does not name yet

    def _last_line(
        self, stem: str, first: int, thread_id: str
    ) -> Checkpoint | Literal[False] | None:
        try:
            fd = open_file(self._fs, self._segments.path(stem, first), os.O_RDONLY, thread_id)
        except FileNotFoundError:
            return None
        except ValueError:  # CorruptCheckpoint: not a regular file
            return False
        try:
            size = self._fs.fstat(fd).st_size
            window = _TAIL_READ
            while True:
                start = max(0, size - window)
                raw = self._fs.pread(fd, size - start, start)
                header = last_header(raw, thread_id, start == 0)
                if header is not None or start == 0:
                    return header
                window *= 4
        finally:
            self._fs.close(fd)

    def _catch_up(self) -> None:
        """Read the journal from where this store left off (all of it when it was
        replaced); rebuild it when it is missing or damaged; compact a long one."""
        try:
            fd = self._fs.open(self._path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            self._rebuild()
            return
        try:
            st = self._fs.fstat(fd)
            if st.st_ino != self._read_ino or st.st_size < self._read_at:
                self._known, self._read_at, self._lines = {}, 0, 0
                self._read_ino = st.st_ino
            raw = self._fs.pread(fd, st.st_size - self._read_at, self._read_at)
        finally:
            self._fs.close(fd)
        end = raw.rfind(b"\n") + 1  # an unfinished last record waits for the next read
        if not self._apply(raw[:end]):
            self._rebuild()
            return
        self._read_at += end
        if self._read_at > _COMPACT_AT and self._lines > 4 * max(len(self._known), 1):
            self._write_all()

    def _apply(self, raw: bytes) -> bool:
        """Fold the records of ``raw`` into what is known; ``False`` if one is damaged."""
        if not raw:
            return True
        bodies = []
        for line in raw.split(b"\n")[:-1]:
            body, tab, crc = line.lstrip(b"\0").rpartition(b"\t")
            if not tab or crc != f"{zlib.crc32(body):08x}".encode():
                return False
            bodies.append(body)
        try:
            rows = pydantic_core.from_json(b"[" + b",".join(bodies) + b"]")
            for row in rows:
                if len(row) == 1:
                    self._known.pop(row[0], None)
                else:
                    self._known[row[0]] = _info(row)
        except (ValueError, TypeError):
            return False
        self._lines += len(bodies)
        return True

    def _rebuild(self) -> None:
        """Every thread of the folder read from its files, and the journal written anew."""
        try:
            names = self._fs.listdir(self._directory)
        except FileNotFoundError:
            self._known = {}
            return
        stems = set()
        for name in names:
            stem = name.partition("=")[0]
            if segment_seq(stem, name) is not None:
                stems.add(stem)
        known: dict[str, ThreadInfo] = {}
        for stem in stems:
            thread_id = _stem_thread(stem)
            if thread_id is None:
                continue
            try:
                found = self.read_thread(thread_id)
            except OSError:
                continue
            if isinstance(found, ThreadInfo):
                known[thread_id] = found
        self._known = known
        self._write_all(carry=False)

    def _write_all(self, carry: bool = True) -> None:
        """Write the journal anew with one record per known thread, renamed over the old
        one; records appended to the old one meanwhile are carried over (``carry``;
        not after a rebuild, which read the threads themselves)."""
        tmp = self._directory / f"{JOURNAL}.{os.getpid()}.{threading.get_ident()}.tmp"
        data = b"".join(_line(_row(info)) for info in self._known.values())
        try:
            old = None
            with contextlib.suppress(FileNotFoundError):
                old = self._fs.open(self._path, os.O_RDONLY | NOFOLLOW)
            fd = self._fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NOFOLLOW, 0o600)
            try:
                write_all(self._fs, fd, data)
                self._fs.replace(tmp, self._path)
                size = len(data)
                if (
                    old is not None and carry
                ):  # records a writer appended before it saw the new file
                    late_from = self._read_at
                    late = self._fs.pread(old, 1 << 24, late_from)
                    late = late[: late.rfind(b"\n") + 1]
                    if late and self._apply(late):
                        write_all(self._fs, fd, late)
                        size += len(late)
                self._read_ino = self._fs.fstat(fd).st_ino
                self._read_at = size
                self._lines = len(self._known)
            finally:
                self._fs.close(fd)
                if old is not None:
                    self._fs.close(old)
        except OSError:
            unlink(self._fs, tmp)
