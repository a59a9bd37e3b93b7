"""The file store's thread listing: ``.threads``, a journal of what each thread is.

Listing the threads of a folder of 20,000 must not open 20,000 files (nor even stat
them: a ``stat`` each costs more than the whole page may). So the store keeps one
more file, ``.threads``: a journal, one line per record, each a thread's summary as
of one of its saves (``[thread_id, status, node, updated_at, checkpoints, parent
thread, checkpoint_id]``), or ``[thread_id]`` when it was deleted, each followed by a
comma and a newline (so the whole journal is one JSON array to parse, a call to the
parser in C). A lease holder appends a
record at its first save after taking the lease and at every save that changes the
status (a run writes two: "running" as it starts, then how it ended), so a save in
the middle of a run writes nothing here; a save without the lease writes one.

The journal is a cache, never the truth, and never synced: a listing (``Listing``)
reads it from where it read last, then reads again each thread of the page it
shows, from the end of the thread's newest segment (``last_header``: one ``pread``,
no state folded), and shows what that says (and records it, where the journal said
otherwise). A thread whose run stopped between its
segment's write and its journal line, or whose line a power cut lost, is thus shown
as it is; only the order and the filters may lag for it until its next run. A
journal that is missing (a store made before it) or damaged is rebuilt from the
threads' files (the folder listed, each thread's last line read), and one much
longer than its threads is written again, compacted (the new file renamed over it;
writers notice the new file at their next record).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

import pydantic_core

from research_fsm.engine import Checkpoint, CorruptCheckpoint, ThreadInfo, ThreadPage
from research_fsm.engine.store import (
    THREAD_STATUSES,
    ThreadQuery,
    thread_info,
    validate_thread_id,
)

from .._codec.logformat import last_header
from .fs import NOFOLLOW, FileSystem, open_file, unlink, write_all
from .segments import Segments, file_stem, segment_seq

__all__ = ["JOURNAL", "Listing"]

JOURNAL = ".threads"
_TAIL_READ = 16 << 10  # bytes read from a segment's end, first (more if a line is longer)
_COMPACT_AT = 1 << 20  # a journal this long, and 1.5x its live records, is written anew
_COMPACT_RATIO = 1.5  # (a run writes two records: a store of threads run once each has 2x)
_ORDER = itemgetter(3, 0)  # a row's place in the listing: (updated_at, thread_id)
_STATUSES = frozenset(THREAD_STATUSES)
Row = list[Any]
"""``[thread_id, status, node, updated_at, checkpoints, parent thread, checkpoint_id]``."""


def _line(row: Row) -> bytes:
    return pydantic_core.to_json(row) + b",\n"


def _row(info: ThreadInfo) -> Row:
    return [
        info.thread_id,
        info.status,
        info.node,
        info.updated_at,
        info.checkpoints,
        info.parent_thread_id,
        info.checkpoint_id,
    ]


def _info(row: Row, unreadable: str | None = None) -> ThreadInfo:
    thread_id, status, node, updated_at, checkpoints, parent, checkpoint_id = row
    return ThreadInfo(
        thread_id=thread_id,
        status=status,
        node=node,
        updated_at=updated_at,
        checkpoints=checkpoints,
        parent_thread_id=parent,
        checkpoint_id=checkpoint_id,
        unreadable=unreadable,
    )


def _guessed(raw: bytes, thread_id: str, why: str) -> ThreadInfo:
    """A thread whose last line this version cannot read (a newer schema's): what that
    line's fields seem to say, for the listing to show it (``unreadable``: ``why``)."""
    data: Any = None
    with contextlib.suppress(ValueError):
        end = raw.rstrip(b"\0").rstrip(b"\n")
        line = end[end.rfind(b"\n") + 1 :].lstrip(b"\0")
        data = pydantic_core.from_json(line[: line.rfind(b"\t")])
    fields = data if isinstance(data, dict) else {}

    def field(name: str, kind: type, default: Any) -> Any:
        value = fields.get(name)
        return value if isinstance(value, kind) and not isinstance(value, bool) else default

    status = fields.get("status")
    return ThreadInfo(
        thread_id=thread_id,
        status=status if status in _STATUSES else "failed",
        node=None,
        updated_at=field("created_at", str, ""),
        checkpoints=field("seq", int, 0),
        parent_thread_id=None,
        checkpoint_id=field("checkpoint_id", str, ""),
        unreadable=why,
    )


def _valid(row: Any) -> bool:
    """Whether a journal record has the shape of one (a deletion: just the id)."""
    if not isinstance(row, list) or not row or not isinstance(row[0], str):
        return False
    if len(row) == 1:
        return True
    return (
        len(row) == 7
        and row[1] in _STATUSES
        and isinstance(row[3], str)
        and isinstance(row[4], int)
        and isinstance(row[6], str)
        and (row[2] is None or isinstance(row[2], str))
        and (row[5] is None or isinstance(row[5], str))
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
    """The journal's writer and reader for one store (thread-safe: its appends come from
    the event loop's thread and the store's worker threads at once)."""

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
        self._appending = threading.RLock()  # saves on the loop and in worker threads at once
        self._fd: int | None = None  # appending
        self._fd_ino = 0
        self._written: dict[str, str] = {}  # leased threads: the status last written
        self._known: dict[str, Row] = {}  # what the journal says, as read so far
        self._unreadable: dict[str, str] = {}  # threads whose last line cannot be read: why
        self._order: list[Row] | None = []  # its rows by ``_ORDER`` (``None``: sort again)
        self._read_ino = 0
        self._read_at = 0  # the journal's bytes read so far
        self._lines = 0  # records read from it (live or not)

    def close(self) -> None:
        with self._appending:
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
        with self._appending:
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
                chosen = self._choose(query)
                fresh = [self._refresh(row) for row in chosen]
                if fresh == chosen:
                    return query.cut([self._info(row) for row in chosen])
            return query.page(self._info(row) for row in fresh if row is not None)

    def _info(self, row: Row) -> ThreadInfo:
        return _info(row, self._unreadable.get(row[0]))

    def _choose(self, query: ThreadQuery) -> list[Row]:
        """Up to ``limit + 1`` rows the query shows, newest first, as the journal says."""
        order = self._order
        if order is None:
            order = self._order = sorted(self._known.values(), key=_ORDER)
        end = (
            len(order)
            if query.after is None
            else bisect.bisect_left(order, query.after, key=_ORDER)
        )
        prefix, statuses, children = query.prefix, query.statuses, query.children
        wanted = query.limit + 1
        found: list[Row] = []
        for at in range(end - 1, -1, -1):
            row = order[at]
            if (
                (not prefix or row[0].startswith(prefix))
                and (statuses is None or row[1] in statuses)
                and (children or row[5] is None)
            ):
                found.append(row)
                if len(found) == wanted:
                    break
        return found

    def _refresh(self, row: Row) -> Row | None:
        """``row`` as the thread's files tell it now (``None``: the thread is gone);
        kept as it is when they cannot tell (damage: ``load_latest`` reports it)."""
        thread_id = row[0]
        try:
            found = self.read_thread(thread_id)
        except OSError:
            return row
        self._unreadable.pop(thread_id, None)
        if isinstance(found, ThreadInfo) and found.unreadable is not None:
            self._unreadable[thread_id] = found.unreadable  # shown as the journal knew it
            return row
        if found is False:
            return row if _valid(row) else None
        if found is None:
            self._forget(thread_id)
            self._append(_line([thread_id]))  # the journal heals for the next reader
            return None
        fresh = _row(found)
        if fresh != row:
            self._remember(fresh)
            self._append(_line(fresh))
        return fresh

    def _remember(self, row: Row) -> None:
        self._known[row[0]] = row
        self._order = None

    def _forget(self, thread_id: str) -> None:
        if self._known.pop(thread_id, None) is not None:
            self._order = None

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
            if header is None or header is False or isinstance(header, ThreadInfo):
                return header
            following = header.seq + 1
            if not self._fs.lexists(self._segments.path(stem, following)):
                return thread_info(header, self.count(header.seq))
            first = following  # a newer segment the list does not name yet

    def _last_line(
        self, stem: str, first: int, thread_id: str
    ) -> Checkpoint | ThreadInfo | Literal[False] | None:
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
                try:
                    header = last_header(raw, thread_id, start == 0)
                except CorruptCheckpoint as exc:  # a newer version wrote it
                    return _guessed(raw, thread_id, str(exc))
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
                self._known, self._order, self._read_at, self._lines = {}, [], 0, 0
                self._read_ino = st.st_ino
            raw = self._fs.pread(fd, st.st_size - self._read_at, self._read_at)
        finally:
            self._fs.close(fd)
        end = raw.rfind(b"\n") + 1  # an unfinished last record waits for the next read
        if not self._apply(raw[:end]):
            self._rebuild()
            return
        self._read_at += end
        if self._read_at > _COMPACT_AT and self._lines > _COMPACT_RATIO * max(len(self._known), 1):
            self._write_all()

    def _apply(self, raw: bytes) -> bool:
        """Fold the records of ``raw`` (whole lines) into what is known; ``False`` if
        they are not all records (damage: zeros or garbage a power cut left). A
        record's fields are checked when a page shows it (``_refresh``)."""
        if not raw:
            return True
        try:
            rows = pydantic_core.from_json(b"[" + raw[:-2] + b"]")
        except ValueError:
            return False
        if not raw.endswith(b",\n"):
            return False
        known = self._known
        try:
            for row in rows:
                if len(row) == 7 and type(row[3]) is str and type(row[0]) is str:
                    known[row[0]] = row
                elif len(row) == 1:
                    known.pop(row[0], None)
                else:
                    return False
        except TypeError:  # not a list, or an unhashable id
            return False
        self._order = None
        self._lines += len(rows)
        return True

    def _rebuild(self) -> None:
        """Every thread of the folder read from its files, and the journal written anew."""
        self._known, self._order = {}, None
        try:
            names = self._fs.listdir(self._directory)
        except FileNotFoundError:
            return
        stems = set()
        for name in names:
            stem = name.partition("=")[0]
            if segment_seq(stem, name) is not None:
                stems.add(stem)
        for stem in stems:
            thread_id = _stem_thread(stem)
            if thread_id is None:
                continue
            try:
                found = self.read_thread(thread_id)
            except OSError:
                continue
            if isinstance(found, ThreadInfo):
                self._known[thread_id] = _row(found)
                if found.unreadable is not None:
                    self._unreadable[thread_id] = found.unreadable
        self._write_all(carry=False)

    def _write_all(self, carry: bool = True) -> None:
        """Write the journal anew with one record per known thread, renamed over the old
        one; records appended to the old one meanwhile are carried over (``carry``;
        not after a rebuild, which read the threads themselves)."""
        tmp = self._directory / f"{JOURNAL}.{os.getpid()}.{threading.get_ident()}.tmp"
        data = b"".join(_line(row) for row in self._known.values())
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
                    late = self._fs.pread(old, 1 << 24, self._read_at)
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
