"""A thread's segments and its segment list (``<thread>.idx``).

A thread's checkpoints live in segments, ``<thread>=<first seq>.jsonl``, each
starting at the checkpoint after the last one of its predecessor. The segment
list names the live ones, newest first, once there is more than segment 1. A
reader follows the list, then any newer segment the list missed (a segment is
made just before the list names it: a probe for the segment after the last
checkpoint finds it). Without a list, a thread is segment 1 and the segments
probes find after it, or new if segment 1 is not there: finding a thread's
segments never lists the folder, whose size is the number of threads.

The folder is listed only to repair: when the list is unreadable, names only
segments gone (a kill while deleting), or is missing once segment 1 was pruned
(``<thread>=pruned``, made before segment 1 is deleted, says so), and when a
walk from segment 1 without a list meets a damaged segment (the damage may hide
a newer one; an unfinished last line cannot: a writer cuts it before it writes
on); so a thread with any readable segment on disk never looks new. Deleting a
thread (``files``) lists it too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Literal

from research_fsm.engine import Checkpoint, CorruptCheckpoint

from ..._logging import get_logger
from .._codec.logformat import Scan, index_bytes, index_seqs, scan_bytes
from .fs import NOFOLLOW, FileSystem, fsync_dir, open_file, remove, unlink, write_all

__all__ = ["MOVED_ASIDE", "PRUNED", "Segments", "file_stem", "segment_seq"]

MOVED_ASIDE = "corrupt checkpoint moved aside; using the one before it"
PRUNED = "=pruned"  # ``<thread>=pruned``: the thread's segment 1 was (or is being) deleted
_READ_CACHED = 16  # segments a store remembers having read for pages
_log = get_logger("research_fsm.engine.store")


def file_stem(thread_id: str) -> str:
    # Ids are case-sensitive; on a case-insensitive file system "Alice" and
    # "alice" must not share files, so ids with capitals get a hash suffix.
    # '+' and '=' never appear in a valid id: "a=..." files are thread a's alone.
    if thread_id == thread_id.lower():
        return thread_id
    return f"{thread_id}+{hashlib.sha256(thread_id.encode()).hexdigest()[:16]}"


def segment_seq(stem: str, name: str) -> int | None:
    """The first seq of ``name`` if it is one of ``stem``'s segments."""
    digits = name[len(stem) + 1 : -len(".jsonl")]
    if name.startswith(f"{stem}=") and name.endswith(".jsonl") and digits.isdigit():
        return int(digits)
    return None


class Segments:
    """The segment files and segment lists of every thread in one folder."""

    def __init__(self, fs: FileSystem, directory: Path, sync: bool) -> None:
        self._fs = fs
        self._directory = directory
        self._sync = sync
        # Segments read whole by history pages, as read: (inode, bytes read, the scan).
        self._read: OrderedDict[Path, tuple[int, int, Scan]] = OrderedDict()
        self._read_lock = threading.Lock()

    def path(self, stem: str, first_seq: int) -> Path:
        return self._directory / f"{stem}={first_seq:012d}.jsonl"

    def list_path(self, stem: str) -> Path:
        """``<thread>.idx``: the live segments, once there is more than the first."""
        return self._directory / f"{stem}.idx"

    def pruned_path(self, stem: str) -> Path:
        """``<thread>=pruned``: an empty file made before segment 1 is deleted; with
        the list missing, it says the folder must be listed to find the thread."""
        return self._directory / f"{stem}{PRUNED}"

    def scan(
        self,
        stem: str,
        first_seq: int,
        thread_id: str,
        until: int | None = None,
        keep_from: int | None = None,
        keep_last: int | None = None,
    ) -> Scan:
        """Read one segment (``until``: up to the checkpoint at that seq only;
        ``keep_from``: keeping the checkpoints from that seq only; ``keep_last``:
        keeping at least the last that many, as far as its lines tell)."""
        fd = open_file(self._fs, self.path(stem, first_seq), os.O_RDONLY, thread_id)
        try:
            ino = self._fs.fstat(fd).st_ino
            raw = self._fs.read_all(fd)
        finally:
            self._fs.close(fd)
        if keep_last is not None:  # one line a checkpoint: keep one more than asked
            keep_from = first_seq + raw.count(b"\n") - keep_last - 1
        scan = scan_bytes(raw, thread_id, until, keep_from)
        scan.ino = ino
        return scan

    def read(self, stem: str, first_seq: int, thread_id: str, until: int | None = None) -> Scan:
        """Read one segment for a page of history (``until``: up to the checkpoint at
        that seq at least), from where this store read it last: a segment is only ever
        appended to (a writer's next line goes where its last one ended, over the zeros
        that pad its disk block), so while its inode is the same and the last line read
        still ends where it did, only the bytes after it are parsed, folded on from the
        last checkpoint read. The last ``_READ_CACHED`` segments read stay remembered. A
        segment with damage is read afresh each time (the callers judge it); the
        checkpoints returned are shared with later reads (they are never changed)."""
        path = self.path(stem, first_seq)
        fd = open_file(self._fs, path, os.O_RDONLY, thread_id)
        try:
            st = self._fs.fstat(fd)
            with self._read_lock:
                known = self._read.get(path)
            if known is not None and known[0] == st.st_ino and known[1] <= st.st_size:
                ino, done, before = known
                # The last line read must still end where it did (not a new file that
                # took a deleted one's inode, nor a line cut off and written anew).
                mark = len(before.tail)
                new = self._fs.pread(fd, st.st_size - done + mark, done - mark)
                if new[:mark] != before.tail:
                    new = b"\0"
                    before = Scan(thread_id, problem="damaged")
                new = new[mark:]
                far = until is not None and before.records and before.records[-1].seq >= until
                if (far or not new.strip(b"\0")) and not before.problem:  # nothing to add
                    return _copy(before)
                if before.records and not before.problem:
                    more = scan_bytes(new, thread_id, until, after=before.records[-1])
                    if more.problem != "damaged":
                        scan = _copy(before)
                        scan.records += more.records
                        scan.lines += more.lines
                        scan.problem, scan.reason = more.problem, more.reason
                        if more.lines:
                            scan.good_size = done + more.good_size
                            scan.tail = more.tail
                        if not more.problem:  # (a line in flight: read again next time)
                            self._remember(path, ino, scan)
                        return _copy(scan)
            raw = self._fs.read_all(fd)
        finally:
            self._fs.close(fd)
        scan = scan_bytes(raw, thread_id, until)
        scan.ino = st.st_ino
        if not scan.problem and scan.records:
            self._remember(path, st.st_ino, scan)
        return _copy(scan)

    def _remember(self, path: Path, ino: int, scan: Scan) -> None:
        with self._read_lock:
            self._read[path] = (ino, scan.good_size, scan)
            self._read.move_to_end(path)
            while len(self._read) > _READ_CACHED:
                self._read.popitem(last=False)

    def forget_read(self, stem: str) -> None:
        """Forget the segments of a thread read for pages (deleted, or its files moved)."""
        prefix = f"{stem}="
        with self._read_lock:
            for path in [p for p in self._read if p.name.startswith(prefix)]:
                del self._read[path]

    def files(self, stem: str) -> list[Path]:
        """Every file of the thread, sorted (lists the whole folder)."""
        try:
            names = self._fs.listdir(self._directory)
        except FileNotFoundError:
            return []
        own = (f"{stem}.lock", f"{stem}.idx")
        mine = [n for n in names if n in own or n.startswith(f"{stem}=")]
        return [self._directory / n for n in sorted(mine)]

    def delete_all(self, stem: str) -> None:
        """Delete the thread's files: moved-aside ones first, then segments oldest
        first, the list last. A process killed midway leaves the thread whole (its
        newest checkpoint in place) or gone, never rolled back to an older
        checkpoint whose used token works."""

        def order(path: Path) -> tuple[int, int, str]:
            seq = segment_seq(stem, path.name)
            if path.name.endswith(PRUNED):  # after the segments: while they remain, it counts
                return (2, 0, path.name)
            return (0, 0, path.name) if seq is None else (1, seq, path.name)

        ends = (".jsonl", ".corrupt", ".tmp", PRUNED)
        files = [p for p in self.files(stem) if p.name.endswith(ends)]
        try:  # a directory or a link in a file's place goes too
            for path in sorted(files, key=order):
                remove(self._fs, path)
            remove(self._fs, self.list_path(stem))  # last: until then the thread is known
        except OSError as exc:
            name = exc.filename or self.list_path(stem)
            raise CorruptCheckpoint(
                stem, f"cannot delete {name}: {exc.strerror or exc}; remove it by hand"
            ) from exc

    # -- the segment list ----------------------------------------------------------

    def read_list(self, stem: str) -> bytes | None:
        try:
            fd = open_file(self._fs, self.list_path(stem), os.O_RDONLY, stem)
        except FileNotFoundError:
            return None
        try:
            return self._fs.pread(fd, 1 << 16, 0)
        finally:
            self._fs.close(fd)

    def write_list(self, stem: str, segments: list[int], force: bool = False) -> bool:
        """Record the live segments in ``<thread>.idx`` (replaced whole, never
        half-written; an empty list marks a thread whose every checkpoint was
        moved aside). Returns whether the file now says so."""
        path = self.list_path(stem)
        if segments == [1] and not force and not self._fs.lexists(path):
            return True  # the default: a thread's first segment starts at checkpoint 1
        # One name per thread (only its lease holder writes its list): one left by a
        # writer killed before the rename goes here, the next time the list is written.
        tmp = self._directory / f"{stem}=idx.tmp"
        try:
            unlink(self._fs, tmp)
            fd = self._fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
            try:
                write_all(self._fs, fd, index_bytes(segments))
                if self._sync:
                    self._fs.fsync(fd)
            finally:
                self._fs.close(fd)
            self._fs.replace(tmp, path)
        except OSError:
            unlink(self._fs, tmp)
            return False
        return True

    def list_names(self, stem: str, seqs: list[int]) -> bool:
        """Whether ``<thread>.idx`` names every segment in ``seqs``."""
        data = self.read_list(stem)
        listed = set(index_seqs(data) or ()) if data is not None else set()
        return all(seq in listed for seq in seqs)

    def list_says(self, stem: str, segments: list[int]) -> bool:
        """Whether ``<thread>.idx`` lists ``segments`` (or, for just the first
        segment, is absent): a lease holder that had to list the folder repairs it."""
        data = self.read_list(stem)
        return segments == [1] if data is None else data == index_bytes(segments)

    def in_folder(self, stem: str) -> list[int]:
        """First seqs of the thread's segment files in the folder, newest first
        (lists the whole folder: only to repair, see the module's docstring)."""
        try:
            names = self._fs.listdir(self._directory)
        except FileNotFoundError:
            return []
        seqs = [seq for seq in (segment_seq(stem, name) for name in names) if seq is not None]
        return sorted(seqs, reverse=True)

    # -- finding the newest --------------------------------------------------------

    def live(self, stem: str) -> tuple[list[int], bool, bool]:
        """First seqs of the thread's segments, newest first, as far as its list
        says: ``<thread>.idx``'s list; without one, segment 1 if it is there (or
        none: a new thread); the folder's if the list is unreadable, or missing
        once segment 1 was pruned. Also whether the thread has had checkpoints
        (its ``.idx`` exists, even empty), and whether the list is only segment 1
        found without a list (``chain`` walks on from it)."""
        data = self.read_list(stem)
        if data is None:  # no list: just segment 1, or a new thread (never a listing)
            if self._fs.lexists(self.path(stem, 1)):
                return [1], True, True
            if not self._fs.lexists(self.pruned_path(stem)):
                return [], False, False
        else:
            listed = index_seqs(data)
            if listed:
                return listed, True, False
        # Repair: the list is unreadable (or empty), or gone once segment 1 was pruned.
        seqs = self.in_folder(stem)
        return seqs, bool(data) or bool(seqs), False

    def absent(self, stem: str) -> bool:
        """Whether none of the files ``live`` looks for first is there (no list, no
        segment 1, no mark of a pruned one): a new thread, found with three lookups
        of names (built as strings: a ``Path`` costs more than the lookup)."""
        base = f"{self._directory}/{stem}"
        lexists = self._fs.lexists
        return not (
            lexists(f"{base}.idx")
            or lexists(f"{base}=000000000001.jsonl")
            or lexists(base + PRUNED)
        )

    def known(self, stem: str) -> bool:
        """Whether the thread has had checkpoints (lists the folder only to repair)."""
        return self.live(stem)[1]

    def chain(self, thread_id: str, stem: str) -> tuple[list[int], dict[int, Scan], bool]:
        """The live segments, newest first, with any newer ones the list missed,
        the scans made while finding them, and whether the thread has had checkpoints."""
        segments, known, unlisted = self.live(stem)
        scans: dict[int, Scan] = {}
        folder_read = False
        while segments:
            scan = scans.get(segments[0])
            if scan is None:
                try:
                    scan = self.scan(stem, segments[0], thread_id)
                except FileNotFoundError:  # moved aside or deleted since the list was written
                    if not folder_read:  # a list left stale by a kill: the folder knows better
                        folder_read = True
                        segments = self.in_folder(stem)
                        known = known or bool(segments)
                    else:
                        segments.pop(0)
                    continue
                scans[segments[0]] = scan
            if unlisted and scan.problem == "damaged" and not folder_read:
                # Walking on from segment 1 without a list: a damaged segment may end
                # before the first seq of a newer one. The folder knows.
                folder_read = True
                segments = self.in_folder(stem)
                continue
            if not scan.records:
                break
            following = scan.records[-1].seq + 1
            if not self._fs.lexists(self.path(stem, following)):
                break
            segments.insert(0, following)
        return segments, scans, known

    # -- pruning and repair --------------------------------------------------------

    def prune(self, thread_id: str, segments: list[int], pruned: list[int]) -> None:
        """Delete the segments ``keep`` no longer needs, then record the live ones
        (in ``segments``, which keeps any that could not be deleted): only once the
        new segment is safely written, so a failed one loses nothing. Readers find
        a thread whose first segment is gone only through the list, so it must
        name the old segments before they go."""
        stem = file_stem(thread_id)
        listed = not pruned or self.list_names(stem, pruned)
        if not listed and not self.write_list(stem, [*segments, *pruned]):
            return  # keep everything until the list can be written
        if 1 in pruned and not self._mark_pruned(stem):
            return  # ... and until segment 1's absence can be told from a new thread's
        for first in pruned:
            try:
                unlink(self._fs, self.path(stem, first))
            except OSError as exc:  # kept listed: the next rotation tries again
                _log.warning(
                    "could not delete a pruned segment",
                    thread_id=thread_id,
                    file=self.path(stem, first).name,
                    error=str(exc),
                )
                segments.append(first)
        self.write_list(stem, segments)

    def _mark_pruned(self, stem: str) -> bool:
        """Make ``<thread>=pruned`` (anything already there counts); whether it is there."""
        path = self.pruned_path(stem)
        if self._fs.lexists(path):
            return True
        try:
            self._fs.close(self._fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW))
        except FileExistsError:
            return True
        except OSError as exc:
            _log.warning(
                "could not mark segment 1 as pruned; keeping it", file=path.name, error=str(exc)
            )
            return False
        return True

    def repair(self, path: Path, scan: Scan, damaged: list[str]) -> None:
        """As lease holder: cut an unfinished last line, move damaged lines aside."""
        if scan.problem == "torn":  # a writer killed mid-line: it never returned
            if scan.records:
                self._cut(path, scan)
            else:
                unlink(self._fs, path)
        elif scan.problem == "damaged":
            aside = path.with_name(path.name + ".corrupt")
            if self._fs.lexists(aside):
                aside = path.with_name(f"{path.name}.{scan.good_size}.corrupt")
            _log.warning(
                MOVED_ASIDE,
                thread_id=scan.thread_id,
                file=str(path),
                reason=scan.reason,
                moved_to=aside.name,
            )
            if scan.records:
                self._cut(path, scan, aside)
            else:
                self._fs.replace(path, aside)
            damaged.append(aside.name)

    def _cut(self, path: Path, scan: Scan, aside: Path | None = None) -> None:
        """Cut ``path`` after its last good line, keeping the rest in ``aside``."""
        fd = open_file(self._fs, path, os.O_RDWR, scan.thread_id)
        try:
            if aside is not None:
                size = self._fs.fstat(fd).st_size
                rest = self._fs.pread(fd, size - scan.good_size, scan.good_size).rstrip(b"\0")
                out = self._fs.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW)
                try:
                    write_all(self._fs, out, rest)
                    self._fs.fsync(out)
                finally:
                    self._fs.close(out)
            self._fs.ftruncate(fd, scan.good_size)
        finally:
            self._fs.close(fd)

    def sync_folder(self) -> None:
        fsync_dir(self._fs, self._directory)


def _copy(scan: Scan) -> Scan:
    """A scan callers may change (its list of checkpoints, not the checkpoints)."""
    return dataclasses.replace(scan, records=list(scan.records))


def refuse_rollback(path: Path, scan: Scan, fallback: Checkpoint | None) -> None:
    """Damage is repaired by rolling back to the checkpoint before it, unless
    intact checkpoints follow it (they would be lost) or that checkpoint waits on
    a suspension (its resume token was used: the resume code would run twice)."""
    detail: str | Literal[""] = ""
    if scan.intact_after:
        detail = f"{scan.intact_after} intact checkpoint(s) follow it and depend on it"
    elif fallback is not None and (fallback.status == "suspended" or fallback.branches):
        detail = "the checkpoint before it waits on a suspension whose token was used"
    if detail:
        raise CorruptCheckpoint(
            scan.thread_id,
            f"{path.name} is damaged ({scan.reason or 'a newer segment'}) and {detail}; "
            "nothing was moved or rolled back: restore the file from a backup, or "
            "delete the thread",
        )
