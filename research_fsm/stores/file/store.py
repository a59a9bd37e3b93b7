"""``JsonFileCheckpointStore``: an append-only JSON-lines log per thread.

Layout under ``directory`` (one flat folder: creating a file in a folder that
already exists is many times cheaper than making a folder per thread)::

    .secret                          token-signing key (0600), unless one is passed in
    .locks                           leases: one byte-range lock per thread (Linux)
    .threads                         the thread listing's journal, a cache (``listing``)
    alice=000000000001.jsonl         a segment: checkpoints 1, 2, ... one JSON line each
    alice=000000000025.jsonl         the next segment, from checkpoint 25
    alice=000000000025.jsonl.corrupt   damaged lines moved aside
    alice.idx                        the segment list: the live segments, once there is more than one
    alice=pruned                     empty: the thread's segment 1 was pruned
    alice.lock                       the lease where there are no range locks (flock)

A save adds one line, a step's changes (the codec, ``stores/_codec/logformat.py``), with one ``write(2)``
after the last line (and one ``fdatasync`` with ``durability="fsync"``, shared by
a batch: ``groupcommit``; zeros pad the file's last disk block: ``append``); a
killed process leaves at most an unfinished last line, which the next lease
holder (``leases``) cuts off. Only the lease holder's own calls (taking the
lease, saving) repair a thread or keep its newest segment open; a read
(``load_latest``, ``history``), even through the store holding the lease, only
reads: it skips an unfinished last line, which may be a save still in flight.
Segments rotate after ``min(keep, 128)`` checkpoints or ~1 MiB; with ``keep``
the oldest whole ones are deleted (``segments``). Finding a thread's segments
reads its list and probes file names, never lists the folder (but to repair):
no run costs more as the folder fills. Every system call goes through ``fs``.
The leases assume a local file system; a network file system needs a database
store.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from research_fsm.engine import (
    Checkpoint,
    CheckpointConflict,
    CheckpointNotFound,
    CorruptCheckpoint,
    StoreWriteError,
    ThreadBusy,
    ThreadPage,
)
from research_fsm.engine.store import (
    Lease,
    hint_matches,
    seq_hint,
    thread_query,
    validate_keep,
    validate_thread_id,
)

from .._codec.logformat import SCHEMA_VERSION, TAIL, Scan, aliases_of, encode_line, salvage_bytes
from .append import cut_back, open_at_end, write_line
from .batch import Batcher
from .fs import (
    NOFOLLOW,
    FileSystem,
    fsync_dir,
    make_private_dirs,
    open_file,
    refuse_unsafe_dir,
    unlink,
)
from .groupcommit import GroupCommit
from .heads import Head, Heads
from .leases import FileLease, Locks
from .listing import Listing
from .secretfile import load_secret
from .segments import Segments, file_stem, refuse_rollback

__all__ = ["SCHEMA_VERSION", "JsonFileCheckpointStore"]

_SEGMENT_RECORDS = 128  # checkpoints per segment at most (fewer with a smaller keep)
_SEGMENT_BYTES = 1 << 20  # ... and rotate once changes pass this size
_ON_LOOP_BYTES = 64 << 10  # with durability "none", lines up to this size are written on the loop
_RESCAN_PAUSES = (0.001, 0.01, 0.05)  # a reader's waits before it believes a damaged last line

Durability = Literal["fsync", "none"]


class JsonFileCheckpointStore:
    """Checkpoints as append-only JSON lines, a few files per thread in one folder.

    Args:
        directory: root folder (created 0700 if missing; refused with
            ``UnsafeStoreDirectory`` if another user owns it or others can write it).
        durability: ``"fsync"`` survives power loss (one ``fdatasync`` per
            save); ``"none"`` survives a killed process but not a power cut, and
            is faster.
        keep: keep at least the newest ``keep`` checkpoints of each thread;
            older ones are deleted a whole segment at a time, so up to about
            ``2 * keep`` stay on disk (``None``: keep all).
        secret: key for signing resume tokens; by default a random key is kept
            in ``directory/.secret`` (0600) and shared by every process.
        fs: the system calls to use (tests pass one that injects faults).
    """

    saves_changes = True
    """Asks the engine for ``Checkpoint.changes``: a save writes only those."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        durability: Durability = "fsync",
        keep: int | None = None,
        secret: bytes | str | None = None,
        fs: FileSystem | None = None,
    ) -> None:
        if durability not in ("fsync", "none"):
            raise ValueError(f"durability must be 'fsync' or 'none', got {durability!r}")
        keep = validate_keep(keep)
        self.directory = Path(directory)
        self.durability: Durability = durability
        self.keep = keep
        self.fs = fs or FileSystem()
        self._per_segment = min(keep, _SEGMENT_RECORDS) if keep else _SEGMENT_RECORDS
        self._secret = secret.encode() if isinstance(secret, str) else secret
        self._segments = Segments(self.fs, self.directory, durability == "fsync")
        self._locks = Locks(
            self.fs, self.directory, file_stem, self._make_root, self._segments.known
        )
        self._heads = Heads(self.fs, self._segments, self._locks.holds)
        self._group = GroupCommit(self.fs, self.directory, self._segments.prune, self._heads.forget)
        self._worker = Batcher(commit=self._group.commit)
        self._listing = Listing(self.fs, self.directory, self._segments, keep, self._make_root)
        # The newest checkpoint read while taking a lease, what load_latest gives until
        # the lease holder's first save (nothing else can change it while the lease is held).
        self._peeked: dict[str, Checkpoint | None] = {}
        self._root_checked = False

    def __repr__(self) -> str:
        return (
            f"JsonFileCheckpointStore({str(self.directory)!r}, "
            f"durability={self.durability!r}, keep={self.keep!r})"
        )

    def __del__(self) -> None:
        locks = getattr(self, "_locks", None)
        if locks is not None:
            locks.close()
        listing = getattr(self, "_listing", None)
        if listing is not None:
            listing.close()

    def thread_files(self, thread_id: str) -> list[Path]:
        """Every file of ``thread_id``, sorted: its lock, its segments and any
        damaged lines moved aside (``ValueError`` for a bad id). Lists the
        whole folder: meant for tools and tests, not for hot paths."""
        return self._segments.files(file_stem(validate_thread_id(thread_id)))

    def segment_path(self, thread_id: str, first_seq: int) -> Path:
        """Where the segment of ``thread_id`` starting at checkpoint ``first_seq`` lives."""
        return self._segments.path(file_stem(validate_thread_id(thread_id)), first_seq)

    def _check_root(self) -> None:
        """Refuse a store directory another user could change (once per store)."""
        if not self._root_checked:
            self._root_checked = refuse_unsafe_dir(self.fs, self.directory)

    def _make_root(self) -> None:
        if make_private_dirs(self.fs, self.directory) and self.durability == "fsync":
            fsync_dir(self.fs, self.directory.parent)

    # -- lease -----------------------------------------------------------------

    async def acquire(self, thread_id: str) -> FileLease:
        # The lock is taken in a worker thread (file I/O stays off the event loop),
        # and the newest checkpoint is read in the same trip: the engine asks for it
        # next. If the caller is cancelled meanwhile, the locking still finishes and
        # its lease is dropped at once, so no orphan descriptor keeps the lock.
        # With durability "none", the lock is taken here when that waits on nothing,
        # and a new thread needs no trip at all (``_acquire_here``).
        taken = self._acquire_here(thread_id) if self.durability == "none" else None
        if taken == "new":
            return FileLease(self._release, thread_id)
        locking = self._worker.submit(self._peek if taken else self._lock_and_peek, thread_id)
        try:
            await locking  # cannot be cancelled: finishes before CancelledError comes
        except asyncio.CancelledError:
            if taken or (locking.done() and locking.exception() is None):
                FileLease(self._release, thread_id).release_now()
            raise
        return FileLease(self._release, thread_id)

    def _acquire_here(self, thread_id: str) -> Literal["new", "old"] | None:
        """Take the lease on the loop, if its lock is given at once (``Locks.try_lock``):
        ``"new"`` when none of the thread's files is there (the three names a new
        thread's read looks for: no list, no segment 1, no mark of a pruned one),
        else ``"old"`` (its newest checkpoint is read by the worker). ``None``:
        nothing held, the worker takes the lease; ``ThreadBusy`` if anyone holds it."""
        validate_thread_id(thread_id)
        if not self._root_checked or not self._locks.try_lock(thread_id):
            return None
        try:
            new = self._heads.get(thread_id) is None and self._segments.absent(file_stem(thread_id))
        except OSError:
            new = False
        if not new:
            return "old"
        self._peeked[thread_id] = None
        return "new"

    def _lock_and_peek(self, thread_id: str) -> None:
        self._lock(thread_id)
        self._peek(thread_id)

    def _peek(self, thread_id: str) -> None:
        """Read the held thread's newest checkpoint: what ``load_latest`` gives next."""
        try:
            self._peeked[thread_id] = self._load_latest(thread_id, holder=True)
        except Exception:  # load_latest will meet (and report) the same problem
            self._peeked.pop(thread_id, None)

    def _lock(self, thread_id: str) -> None:
        validate_thread_id(thread_id)
        self._check_root()
        self._locks.lock(thread_id)

    def _release(self, thread_id: str) -> None:
        self._peeked.pop(thread_id, None)
        self._listing.released(thread_id)
        self._heads.close(thread_id)
        self._locks.unlock(thread_id)

    # -- saving ----------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        # No sync asked for: a short line goes into the page cache with one write(2)
        # on the loop, cheaper than the hop to a worker thread and back. So does a
        # new thread's first line (its file created, nothing read), its whole state.
        here = self.durability == "none"
        if here and self._starts_here(checkpoint):
            whole = encode_line(checkpoint, None, {})
            if len(whole) <= _ON_LOOP_BYTES:
                self._peeked.pop(checkpoint.thread_id, None)
                self._start_segment(checkpoint, None, True, whole)
                self._listing.saved(checkpoint, leased=True)
                return
            here = False
        # Encoded here, where the checkpoint was just made (warm, unlike a worker just woken).
        line = None
        if checkpoint.changes is not None and isinstance(checkpoint.state, BaseModel):
            line = encode_line(checkpoint, checkpoint.changes, aliases_of(type(checkpoint.state)))
        head = None if line is None or not here else self._appends_here(checkpoint, line)
        if head is not None:
            self._peeked.pop(checkpoint.thread_id, None)
            self._append(checkpoint, head, True, line)
            self._listing.saved(checkpoint, leased=True)
            return
        await self._worker.run(self._save, checkpoint, line)

    def _starts_here(self, cp: Checkpoint) -> bool:
        """Whether ``cp`` is the first checkpoint of a held thread this store found
        empty when it took the lease (and has not written since)."""
        thread_id = cp.thread_id
        return (
            cp.seq == 1
            and cp.parent_id is None
            and thread_id in self._peeked
            and self._peeked[thread_id] is None
            and self._heads.get(thread_id) is None
            and self._locks.holds(thread_id)
        )

    def _appends_here(self, cp: Checkpoint, line: bytes) -> Head | None:
        """The held thread's head when ``cp``'s save is a plain append to its open
        segment, after the checkpoint this store last wrote (no file to open, read or
        create); else ``None``."""
        head = self._heads.get(cp.thread_id)
        appends = (
            head is not None
            and head.fd is not None
            and head.checkpoint.checkpoint_id == cp.parent_id
            and head.checkpoint.seq + 1 == cp.seq
            and head.records < self._per_segment
            and head.size - head.base <= max(_SEGMENT_BYTES, head.base)
            and len(line) <= _ON_LOOP_BYTES
            and self._locks.holds(cp.thread_id)
        )
        return head if appends else None

    def _save(self, cp: Checkpoint, line: bytes | None = None) -> None:
        thread_id = cp.thread_id
        self._peeked.pop(thread_id, None)
        if self._locks.holds(thread_id):
            self._save_leased(cp, line=line)
            self._listing.saved(cp, leased=True)
            return
        # Not leased by us: hold the lock for this one save (never wait for it).
        try:
            self._lock(thread_id)
        except ThreadBusy:
            raise CheckpointConflict(thread_id, cp.parent_id) from None
        try:
            self._load_latest(thread_id, holder=True)  # another store may have moved on
            self._save_leased(cp, group=False, line=line)  # synced before the lock goes
            self._listing.saved(cp, leased=False)
        finally:
            self._release(thread_id)

    def _save_leased(
        self, cp: Checkpoint, *, group: bool = True, line: bytes | None = None
    ) -> None:
        head = self._heads.get(cp.thread_id)
        if head is None or head.checkpoint.checkpoint_id != cp.parent_id:
            self._load_latest(cp.thread_id, holder=True)  # the thread as it is on disk
            head = self._heads.get(cp.thread_id)
        latest = None if head is None else head.checkpoint
        expected = (None, 1) if latest is None else (latest.checkpoint_id, latest.seq + 1)
        if expected != (cp.parent_id, cp.seq):
            raise CheckpointConflict(cp.thread_id, cp.parent_id)
        if (
            head is None
            or cp.changes is None
            or not isinstance(cp.state, BaseModel)
            or head.records >= self._per_segment
            or head.size - head.base > max(_SEGMENT_BYTES, head.base)
        ):
            self._start_segment(cp, head, group)
        else:
            self._append(cp, head, group, line)

    def _append(self, cp: Checkpoint, head: Head, group: bool, line: bytes | None) -> None:
        assert isinstance(cp.state, BaseModel)
        if line is None:
            line = encode_line(cp, cp.changes, aliases_of(type(cp.state)))
        fs, sync = self.fs, self.durability == "fsync"
        try:
            if head.fd is None:
                path = self._segments.path(file_stem(cp.thread_id), head.segments[0])
                head.fd = open_at_end(fs, path, head, cp.thread_id)
            try:
                padding = write_line(fs, head.fd, head.size, head.padding, line, sync)
                if sync and not (
                    group and self._group.defer(cp.thread_id, head.fd, head.size, None, None)
                ):
                    fs.fdatasync(head.fd)
            except OSError:
                # The next save must not follow a torn line; if the cut fails too,
                # forget the head: the next save reads the thread back from disk.
                try:
                    cut_back(fs, head)
                except OSError:
                    self._heads.forget(cp.thread_id)
                raise
        except OSError as exc:
            raise StoreWriteError(cp.thread_id, exc) from exc
        head.checkpoint = cp
        head.size += len(line)
        head.padding = padding
        head.tail = line[-TAIL:]
        head.records += 1

    def _start_segment(
        self, cp: Checkpoint, head: Head | None, group: bool, line: bytes | None = None
    ) -> None:
        """Write ``cp`` with its whole state as the first line of a new segment
        (``line``: that line, if encoded already)."""
        if line is None:
            line = encode_line(cp, None, {})
        path = self._segments.path(file_stem(cp.thread_id), cp.seq)
        segments = [cp.seq, *(head.segments if head is not None else ())]
        pruned: list[int] = []
        if self.keep is not None:  # segments older than the newest `keep`
            while len(segments) > 1 and segments[-2] - 1 <= cp.seq - self.keep:
                pruned.append(segments.pop())
        try:
            fd = self._create(path)
            try:
                padding = write_line(self.fs, fd, 0, 0, line, self.durability == "fsync")
                deferred = (
                    self.durability == "fsync"
                    and group
                    and self._group.defer(cp.thread_id, fd, 0, path, (segments, pruned))
                )
                if self.durability == "fsync" and not deferred:
                    self._sync_new(fd)
            except BaseException:
                self.fs.close(fd)
                unlink(self.fs, path)
                raise
        except FileExistsError:
            raise CheckpointConflict(cp.thread_id, cp.parent_id) from None
        except OSError as exc:
            raise StoreWriteError(cp.thread_id, exc) from exc
        started = Head(
            checkpoint=cp,
            segments=segments,
            ino=self.fs.fstat(fd).st_ino,
            size=len(line),
            tail=line[-TAIL:],
            records=1,
            base=len(line),
            fd=fd,
            padding=padding,
        )
        self._heads.remember(cp.thread_id, started)
        if not deferred:  # else once the new segment is durable (``GroupCommit.commit``)
            self._segments.prune(cp.thread_id, segments, pruned)

    def _sync_new(self, fd: int) -> None:
        """Make a new segment durable, its name in the folder included: one ``syncfs``
        where there is one (it writes out the file and the folder at once), else (or
        if it fails: another file's error may be what it reports) the file and then
        the folder."""
        if self.fs.has_syncfs():
            try:
                self.fs.syncfs(fd)
                return
            except OSError:
                pass
        self.fs.fsync(fd)
        self._segments.sync_folder()

    def _create(self, path: Path) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW
        try:
            return self.fs.open(path, flags, 0o600)
        except FileNotFoundError:
            self._make_root()
            return self.fs.open(path, flags, 0o600)

    # -- loading ---------------------------------------------------------------

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        # A read: it may come from the lease holder's run or from anyone else (a
        # page showing the thread mid-run), so it changes nothing (``holder=False``).
        try:
            return self._peeked[thread_id]
        except KeyError:
            pass
        return await self._worker.run(self._load_latest, thread_id, False)

    def _load_latest(self, thread_id: str, holder: bool) -> Checkpoint | None:
        """The newest checkpoint. As the lease ``holder`` (taking the lease, saving)
        it repairs what a killed writer left and keeps the head; else it only reads."""
        stem = file_stem(validate_thread_id(thread_id))
        self._check_root()
        head = self._heads.current(thread_id, stem, holder=holder)
        if head is not None:
            return head.checkpoint
        return self._read_newest(thread_id, stem, holder and self._locks.holds(thread_id))

    def _read_newest(self, thread_id: str, stem: str, leased: bool) -> Checkpoint | None:
        segments, scans, known = self._segments.chain(thread_id, stem)
        damaged: list[str] = []
        for index, first in enumerate(segments):
            path = self._segments.path(stem, first)
            scan = scans.get(first)
            if scan is None:
                try:
                    scan = self._segments.scan(stem, first, thread_id)
                except FileNotFoundError:  # pruned by a writer elsewhere
                    continue
            if scan.problem == "damaged" and not leased:
                scan = self._settled(stem, first, thread_id, scan)
            if scan.problem == "damaged" or (damaged and scan.records):
                refuse_rollback(path, scan, scan.records[-1] if scan.records else None)
            if leased:
                self._segments.repair(path, scan, damaged)
            elif scan.problem == "damaged":
                damaged.append(path.name)
            if not scan.records:
                continue
            if leased:
                live = segments[index:]
                head = Head(
                    checkpoint=scan.records[-1],
                    segments=live,
                    ino=scan.ino,
                    size=scan.good_size,
                    tail=scan.tail,
                    records=len(scan.records),
                    base=scan.base,
                    padding=scan.padding,
                )
                self._heads.remember(thread_id, head)
                if live != segments or index > 0 or not self._segments.list_says(stem, live):
                    self._segments.write_list(stem, live)
            return scan.records[-1]
        self._nothing_readable(thread_id, stem, damaged, known, leased)
        return None

    def _settled(self, stem: str, first: int, thread_id: str, scan: Scan) -> Scan:
        """As a reader: a last line that looks damaged may be a save in flight (its
        bytes land a page at a time): read the segment again before believing it."""
        for pause in _RESCAN_PAUSES:
            if scan.problem != "damaged" or scan.intact_after:
                break
            time.sleep(pause)  # in a worker thread, never on the event loop
            try:
                scan = self._segments.scan(stem, first, thread_id)
            except FileNotFoundError:  # moved aside by the lease holder meanwhile
                break
        return scan

    def _nothing_readable(
        self, thread_id: str, stem: str, damaged: list[str], known: bool, leased: bool
    ) -> None:
        """No checkpoint was readable: a new thread, or ``CorruptCheckpoint`` for one
        that had checkpoints."""
        if leased and damaged:  # mark the thread as one that had checkpoints
            self._segments.write_list(stem, [], force=True)
        if not damaged and known:  # lines moved aside earlier: "not a new thread"
            damaged = [p.name for p in self.thread_files(thread_id) if p.name.endswith(".corrupt")]
        if damaged:
            raise CorruptCheckpoint(
                thread_id,
                f"no readable checkpoint left; damaged files moved aside: {', '.join(damaged)}",
            )
        if leased and known:  # nothing but unfinished segments (now removed): a new thread
            unlink(self.fs, self._segments.list_path(stem))

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        stem = file_stem(validate_thread_id(thread_id))
        if limit is not None or before is not None:  # a page: read just its segments
            page = await self._worker.run(self._page, thread_id, stem, limit, before, False)
            if page is None:
                assert before is not None
                raise CheckpointNotFound(thread_id, before)
            for checkpoint in page:
                yield checkpoint
            return
        segments, scans, _ = await self._worker.run(self._segments.chain, thread_id, stem)
        left = self.keep  # older checkpoints may wait on disk for their segment to go
        vet = _Vetting(self._settled, self._segments.path, stem, thread_id)
        for first in segments:
            scan = scans.get(first)
            if scan is None:
                try:
                    scan = await self._worker.run(self._segments.scan, stem, first, thread_id)
                except FileNotFoundError:  # pruned meanwhile
                    continue
            scan = await self._worker.run(vet, first, scan)
            for checkpoint in reversed(scan.records):
                if left is not None:
                    if left == 0:
                        return
                    left -= 1
                yield checkpoint

    async def salvage(self, thread_id: str) -> AsyncIterator[Checkpoint]:
        """What every intact line of the thread's files (damaged or moved-aside ones
        too) says of its run, without states: for ``delete_thread`` to find a damaged
        thread's child threads. Lists the folder."""
        stem = file_stem(validate_thread_id(thread_id))
        for checkpoint in await self._worker.run(self._salvage, thread_id, stem):
            yield checkpoint

    def _salvage(self, thread_id: str, stem: str) -> list[Checkpoint]:
        found: list[Checkpoint] = []
        for path in self._segments.files(stem):
            if not path.name.endswith((".jsonl", ".corrupt")):
                continue
            try:
                fd = open_file(self.fs, path, os.O_RDONLY, thread_id)
            except (OSError, CorruptCheckpoint):
                continue  # gone meanwhile, or no file at all
            try:
                raw = self.fs.read_all(fd)
            except OSError:
                continue
            finally:
                self.fs.close(fd)
            found += salvage_bytes(raw, thread_id)
        return found

    async def load(self, thread_id: str, checkpoint_id: str) -> Checkpoint | None:
        stem = file_stem(validate_thread_id(thread_id))
        page = await self._worker.run(self._page, thread_id, stem, 1, checkpoint_id, True)
        return page[0] if page else None

    def _page(
        self, thread_id: str, stem: str, limit: int | None, at: str | None, inclusive: bool
    ) -> list[Checkpoint] | None:
        """Up to ``limit`` checkpoints, newest first, older than checkpoint ``at``
        (``inclusive``: from it); ``None`` when the thread has no (unpruned)
        checkpoint ``at``. Without ``keep``, an engine's id ``at`` names the
        segment holding it: that one is read up to ``at``, then the older ones the
        page spans. Else reads the newest segment too (which ``keep`` counts from);
        an id of another kind is looked for segment by segment."""
        hint = None if at is None else seq_hint(at)
        if hint is not None and self.keep is None:
            below = self._page_below(thread_id, stem, limit, at, hint, inclusive)
            if below is not None:
                return below
        if at is None and limit is not None and self.keep is None:
            latest = self._newest_page(thread_id, stem, limit)
            if latest is not None:
                return latest
        segments, scans, _ = self._segments.chain(thread_id, stem)
        vet = _Vetting(self._settled, self._segments.path, stem, thread_id)
        vetted: set[int] = set()

        def scan_of(first: int) -> Scan | None:
            if first not in scans:
                try:
                    scans[first] = self._segments.scan(stem, first, thread_id)
                except FileNotFoundError:  # pruned meanwhile
                    return None
            if first not in vetted:
                for newer in segments:  # newest first: damage is judged as history reads it
                    if newer >= first and newer not in vetted and newer in scans:
                        scans[newer] = vet(newer, scans[newer])
                        vetted.add(newer)
            return scans[first]

        newest = next(
            (scan.records[-1].seq for f in segments if (scan := scan_of(f)) and scan.records),
            None,
        )
        if newest is None:
            return None if at is not None else []
        oldest = newest - self.keep + 1 if self.keep is not None else 0
        end = newest + 1  # the page holds seqs below ``end``
        if at is not None:
            found = self._find(segments, scan_of, at)
            if found is None or found < oldest:
                return None
            end = found + 1 if inclusive else found
        page: list[Checkpoint] = []
        for first in segments:  # newest first: segment ``first`` holds seqs from ``first``
            if first >= end:
                continue
            scan = scan_of(first)
            for checkpoint in reversed(scan.records if scan is not None else ()):
                if checkpoint.seq >= end:
                    continue
                if checkpoint.seq < oldest or (limit is not None and len(page) >= limit):
                    return page
                page.append(checkpoint)
            if first <= oldest:
                break
        return page

    def _page_below(
        self,
        thread_id: str,
        stem: str,
        limit: int | None,
        at: str | None,
        hint: int,
        inclusive: bool,
    ) -> list[Checkpoint] | None:
        """``_page`` from the segment the listed segments say holds seq ``hint``, read
        up to it, and the older ones; ``None`` if checkpoint ``at`` is not there."""
        segments = self._segments.live(stem)[0]
        older = [first for first in segments if first <= hint]
        try:
            scan = self._segments.read(stem, older[0], thread_id, hint) if older else None
        except FileNotFoundError:
            return None
        if scan is not None and scan.problem == "damaged":  # ``_page`` judges it whole
            return None
        if scan is not None:  # up to the checkpoint at ``hint``
            scan.records = [cp for cp in scan.records if cp.seq <= hint]
        target = scan.records[-1] if scan is not None and scan.records else None
        if target is None or not hint_matches(hint, target.seq) or target.checkpoint_id != at:
            return None
        page = [target] if inclusive else []
        records = scan.records[:-1] if scan is not None else []
        return self._fill(thread_id, stem, limit, page, records, older)

    def _newest_page(self, thread_id: str, stem: str, limit: int) -> list[Checkpoint] | None:
        """``_page`` of the newest ``limit`` checkpoints: the newest listed segment
        read keeping its last lines only, then the older ones the page spans; ``None``
        when ``_page`` must judge (damage, a segment the list does not name yet)."""
        segments = self._segments.live(stem)[0]
        if not segments:
            return None
        try:
            scan = self._segments.read(stem, segments[0], thread_id)
        except FileNotFoundError:
            return None
        if scan.problem == "damaged" or not scan.records:
            return None
        if self.fs.lexists(self._segments.path(stem, scan.records[-1].seq + 1)):
            return None  # a newer segment: the list is behind
        return self._fill(thread_id, stem, limit, [], scan.records, segments)

    def _fill(
        self,
        thread_id: str,
        stem: str,
        limit: int | None,
        page: list[Checkpoint],
        records: list[Checkpoint],
        older: list[int],
    ) -> list[Checkpoint]:
        """``page`` filled up to ``limit``: ``records`` (of segment ``older[0]``)
        newest first, then the segments after it in ``older``, each read keeping
        just the checkpoints the page still needs."""
        for newer, first in zip([None, *older], older, strict=False):
            if limit is not None and len(page) >= limit:
                return page
            if newer is not None:
                # Segment ``first`` ends where ``newer`` starts: keep just its last few.
                try:
                    below = self._segments.read(stem, first, thread_id)
                except FileNotFoundError:  # pruned meanwhile
                    continue
                if below.problem == "damaged":  # checkpoints of the page are lost
                    raise _damaged(self._segments.path(stem, first), below)
                records = below.records
            for checkpoint in reversed(records):
                if limit is not None and len(page) >= limit:
                    return page
                page.append(checkpoint)
        return page[:limit]

    @staticmethod
    def _find(
        segments: list[int], scan_of: Callable[[int], Scan | None], checkpoint_id: str
    ) -> int | None:
        """The seq of checkpoint ``checkpoint_id``, or ``None``."""
        hint = seq_hint(checkpoint_id)
        if hint is not None:
            holder = next((f for f in segments if f <= hint), None)
            scan = scan_of(holder) if holder is not None else None
            for checkpoint in scan.records if scan is not None else ():
                if hint_matches(hint, checkpoint.seq) and checkpoint.checkpoint_id == checkpoint_id:
                    return checkpoint.seq
        for first in segments:  # an id of another kind (or made before this version)
            scan = scan_of(first)
            for checkpoint in scan.records if scan is not None else ():
                if checkpoint.checkpoint_id == checkpoint_id:
                    return checkpoint.seq
        return None

    # -- the rest ----------------------------------------------------------------

    async def delete(self, thread_id: str, *, lease: Lease | None = None) -> None:
        validate_thread_id(thread_id)
        if isinstance(lease, FileLease) and lease.holds(self._release, thread_id):
            await self._worker.run(self._delete, thread_id)
            return
        own = await self.acquire(thread_id)
        try:
            await self._worker.run(self._delete, thread_id)
        finally:
            await own.release()

    def _delete(self, thread_id: str) -> None:
        self._segments.forget_read(file_stem(thread_id))
        self._heads.forget(thread_id)
        self._peeked.pop(thread_id, None)
        self._segments.delete_all(file_stem(thread_id))
        self._listing.deleted(thread_id)

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str = "",
        status: str | Collection[str] | None = None,
        children: bool = True,
    ) -> ThreadPage:
        """A page of the folder's threads (``ThreadListing``): chosen by ``.threads``,
        the store's journal of thread summaries, each shown as its files say now
        (``listing``); the journal is rebuilt from the threads' files when missing."""
        query = thread_query(
            limit=limit, cursor=cursor, prefix=prefix, status=status, children=children
        )
        self._check_root()
        return await asyncio.to_thread(self._listing.page, query)

    async def secret(self) -> bytes:
        if self._secret is None:
            self._secret = await asyncio.to_thread(
                load_secret, self.fs, self.directory, self._make_root
            )
        return self._secret


def _damaged(path: Path, scan: Scan) -> CorruptCheckpoint:
    """A segment older than the thread's newest is damaged: the checkpoints from its
    damaged line on cannot be read."""
    return CorruptCheckpoint(
        scan.thread_id,
        f"{path.name} is damaged ({scan.reason}): the checkpoints from there to the "
        "segment's end cannot be read; restore the file from a backup, or delete the thread",
    )


class _Vetting:
    """A history read's judge of the segments it reads, newest first (in a worker
    thread): damage in the newest is judged as ``load_latest`` judges it (a last
    line may be a save in flight; intact checkpoints after it raise
    ``CorruptCheckpoint``), damage in an older segment raises (checkpoints in the
    middle of the history are lost)."""

    def __init__(
        self,
        settled: Callable[[str, int, str, Scan], Scan],
        path: Callable[[str, int], Path],
        stem: str,
        thread_id: str,
    ) -> None:
        self._settled = settled
        self._path = path
        self._stem = stem
        self._thread_id = thread_id
        self._newest_read = False  # a segment with checkpoints was read
        self._damaged = False  # a newer segment than the one read was damaged

    def __call__(self, first: int, scan: Scan) -> Scan:
        path = self._path(self._stem, first)
        if self._newest_read:
            if scan.problem == "damaged":
                raise _damaged(path, scan)
            return scan
        if scan.problem == "damaged":
            scan = self._settled(self._stem, first, self._thread_id, scan)
        if scan.problem == "damaged" or (self._damaged and scan.records):
            refuse_rollback(path, scan, scan.records[-1] if scan.records else None)
        self._damaged = self._damaged or scan.problem == "damaged"
        self._newest_read = bool(scan.records)
        return scan
