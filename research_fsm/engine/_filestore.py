"""``JsonFileCheckpointStore``: an append-only JSON-lines log per thread.

Layout under ``directory`` (one flat folder: creating a file in a folder that
already exists is many times cheaper than making a folder per thread)::

    .secret                          token-signing key (0600), unless one is passed in
    .locks                           leases: one byte-range lock per thread (Linux)
    alice=000000000001.jsonl         a segment: checkpoints 1, 2, ... one JSON line each
    alice=000000000025.jsonl         the next segment, from checkpoint 25
    alice=000000000025.jsonl.corrupt   damaged lines moved aside
    alice.idx                        the live segments, once there is more than one
    alice.lock                       the lease where there are no range locks (flock)

A new thread costs one new file; leases cost no file at all on Linux (locks
owned by the store's open ``.locks`` file, released when the process dies).

Each line is one checkpoint: its JSON, a tab and a checksum. The first line of
a segment holds the whole state; every later line holds only what its step
changed (fields set, items appended to ``append`` lists), so a save writes a
few hundred bytes however long the conversation, and never rewrites what is
already on disk. A save is one ``write(2)`` to the open segment (and one
``fdatasync`` with ``durability="fsync"``); a killed process leaves at most an
unfinished last line, which the next lease holder cuts off. Segments rotate
after ``min(keep, 128)`` checkpoints (or ~1 MiB of changes); each starts at the
checkpoint after the last one of its predecessor, so the newest is always
found by following that chain. With ``keep``, the oldest whole segments are
deleted. The leases assume a local file system; a network file system needs a
database-backed store.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import hashlib
import json
import os
import secrets
import struct
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic_core
import structlog
from pydantic import BaseModel

from ._batch import Batcher
from ._errors import (
    CheckpointConflict,
    CorruptCheckpoint,
    StateSerializationError,
    StoreWriteError,
    ThreadBusy,
)
from ._serialize import find_unserializable
from ._store import validate_thread_id
from ._types import Checkpoint

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["SCHEMA_VERSION", "JsonFileCheckpointStore"]

SCHEMA_VERSION = 3  # 3: lines may carry parallel-branch records (others are still 2)
_SEGMENT_RECORDS = 128  # checkpoints per segment at most (fewer with a smaller keep)
_SEGMENT_BYTES = 1 << 20  # ... and rotate once changes pass this size
_CACHED_HEADS = 256  # newest checkpoints remembered between leases (LRU)
_TAIL = 34  # a line ends with a tab, 32 hex digits of checksum and a newline
_HEADER_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_HEADER_FIELDS = (
    "thread_id", "checkpoint_id", "parent_id", "seq", "run_id", "step", "status",
    "next", "last_node", "created_at", "suspension", "error",
)  # fmt: skip
_CLAIMED = -2  # in ``_locks``: being locked by a worker thread of this store
_MOVED_ASIDE = "corrupt checkpoint moved aside; using the one before it"
_log = structlog.get_logger("research_fsm.engine.store")

Durability = Literal["fsync", "none"]

# struct flock for open-file-description locks (Linux, 64-bit off_t): l_type,
# l_whence, l_start, l_len, l_pid (must be 0).
_FLOCK = "hhxxxxqqixxxx"
_OFD_LOCKS = (
    sys.platform == "linux"
    and hasattr(fcntl, "F_OFD_SETLK")
    and struct.calcsize(_FLOCK) == 32
    and struct.calcsize("P") == 8
)


def _file_stem(thread_id: str) -> str:
    # Ids are case-sensitive; on a case-insensitive file system "Alice" and
    # "alice" must not share files, so ids with capitals get a hash suffix.
    # '+' and '=' never appear in a valid id: "a=..." files are thread a's alone.
    if thread_id == thread_id.lower():
        return thread_id
    return f"{thread_id}+{hashlib.sha256(thread_id.encode()).hexdigest()[:16]}"


def _segment_seq(stem: str, name: str) -> int | None:
    """The first seq of ``name`` if it is one of ``stem``'s segments."""
    digits = name[len(stem) + 1 : -len(".jsonl")]
    if name.startswith(f"{stem}=") and name.endswith(".jsonl") and digits.isdigit():
        return int(digits)
    return None


def _index_bytes(segments: list[int]) -> bytes:
    return (" ".join(f"{seq:012d}" for seq in segments) + "\n").encode()


def _index_seqs(data: bytes) -> list[int] | None:
    """The segments a whole ``<thread>.idx`` lists (``None`` if it is not one)."""
    text = data.decode("ascii", "replace")
    words = text.split()
    if text.endswith("\n") and words and all(w.isdigit() and len(w) == 12 for w in words):
        return [int(w) for w in words]
    return None


def _checksum(body: bytes) -> bytes:
    return hashlib.sha256(body).hexdigest()[:32].encode()


@dataclass(slots=True)
class _Head:
    """The newest checkpoint of a thread as this store last read or wrote it."""

    checkpoint: Checkpoint
    segments: list[int]  # first seqs of the live segments, newest first
    ino: int  # the newest segment's inode, size and last bytes: unchanged means
    size: int  # nobody wrote to it since
    tail: bytes
    records: int  # lines in the newest segment
    base: int  # bytes of its first (whole-state) line
    fd: int | None = field(default=None)  # open for appending while the lease is held


class _FileLease:
    __slots__ = ("_held", "_owner", "_thread_id")

    def __init__(self, owner: JsonFileCheckpointStore, thread_id: str) -> None:
        self._owner = owner
        self._thread_id = thread_id
        self._held = True

    async def release(self) -> None:
        self.release_now()

    def release_now(self) -> None:
        if self._held:
            self._held = False
            self._owner._release(self._thread_id)


class JsonFileCheckpointStore:
    """Checkpoints as append-only JSON lines, a few files per thread in one folder.

    Args:
        directory: root folder (created 0700 if missing).
        durability: ``"fsync"`` survives power loss (one ``fdatasync`` per
            save); ``"none"`` survives a killed process but not a power cut, and
            is faster.
        keep: keep at least the newest ``keep`` checkpoints of each thread;
            older ones are deleted a whole segment at a time, so up to about
            ``2 * keep`` stay on disk (``None``: keep all).
        secret: key for signing resume tokens; by default a random key is kept
            in ``directory/.secret`` (0600) and shared by every process.
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
    ) -> None:
        if durability not in ("fsync", "none"):
            raise ValueError(f"durability must be 'fsync' or 'none', got {durability!r}")
        if keep is not None and (not isinstance(keep, int) or keep < 1):
            raise ValueError(f"keep must be None or an int >= 1, got {keep!r}")
        if fcntl is None:  # pragma: no cover
            raise RuntimeError("JsonFileCheckpointStore needs a POSIX system (fcntl)")
        self.directory = Path(directory)
        self.durability: Durability = durability
        self.keep = keep
        self._per_segment = min(keep, _SEGMENT_RECORDS) if keep else _SEGMENT_RECORDS
        self._secret = secret.encode() if isinstance(secret, str) else secret
        # The threads we hold: their flock descriptor, or -1 for a range lock.
        self._locks: dict[str, int] = {}
        self._lock_fd: int | None = None  # the shared ``.locks`` file (range locks)
        self._lock_pid = 0
        self._lock_fd_guard = threading.Lock()
        self._claims = threading.Lock()
        self._worker = Batcher(commit=self._commit)
        self._pending = threading.local()  # writes of the running batch awaiting a sync
        self._heads: dict[str, _Head] = {}
        # The newest checkpoint read while taking a lease, handed to the next
        # load_latest of that thread (nothing can change it while the lease is held).
        self._peeked: dict[str, Checkpoint | None] = {}
        self._aliases: dict[type[BaseModel], dict[str, str]] = {}

    def __repr__(self) -> str:
        return (
            f"JsonFileCheckpointStore({str(self.directory)!r}, "
            f"durability={self.durability!r}, keep={self.keep!r})"
        )

    def thread_files(self, thread_id: str) -> list[Path]:
        """Every file of ``thread_id``, sorted: its lock, its segments and any
        damaged lines moved aside (``ValueError`` for a bad id). Lists the
        whole folder: meant for tools and tests, not for hot paths."""
        stem = _file_stem(validate_thread_id(thread_id))
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        own = (f"{stem}.lock", f"{stem}.idx")
        mine = [n for n in names if n in own or n.startswith(f"{stem}=")]
        return [self.directory / n for n in sorted(mine)]

    def segment_path(self, thread_id: str, first_seq: int) -> Path:
        """Where the segment of ``thread_id`` starting at checkpoint ``first_seq`` lives."""
        return self._segment(_file_stem(validate_thread_id(thread_id)), first_seq)

    def _segment(self, stem: str, first_seq: int) -> Path:
        return self.directory / f"{stem}={first_seq:012d}.jsonl"

    def _index(self, stem: str) -> Path:
        """``<thread>.idx``: the live segments, once there is more than the first."""
        return self.directory / f"{stem}.idx"

    def _read_index(self, stem: str) -> bytes | None:
        try:
            with open(self._index(stem), "rb") as file:
                return file.read(1 << 16)
        except FileNotFoundError:
            return None

    # -- lease -----------------------------------------------------------------

    async def acquire(self, thread_id: str) -> _FileLease:
        # The lock is taken in a worker thread (file I/O stays off the event loop),
        # and the newest checkpoint is read in the same trip: the engine asks for it
        # next. If the caller is cancelled meanwhile, the locking still finishes and
        # its lease is dropped at once, so no orphan descriptor keeps the lock.
        locking = self._worker.submit(self._lock_and_peek, thread_id)
        try:
            await locking  # cannot be cancelled: finishes before CancelledError comes
        except asyncio.CancelledError:
            if locking.done() and locking.exception() is None:
                _FileLease(self, thread_id).release_now()
            raise
        return _FileLease(self, thread_id)

    def _lock_and_peek(self, thread_id: str) -> None:
        self._lock(thread_id)
        try:
            self._peeked[thread_id] = self._load_latest(thread_id)
        except Exception:  # load_latest will meet (and report) the same problem
            self._peeked.pop(thread_id, None)

    def _release(self, thread_id: str) -> None:
        self._peeked.pop(thread_id, None)
        head = self._heads.get(thread_id)
        if head is not None and head.fd is not None:
            fd, head.fd = head.fd, None
            os.close(fd)
        lock = self._locks.pop(thread_id, None)
        if lock is None or lock == _CLAIMED:
            return
        if lock >= 0:
            os.close(lock)  # closing the descriptor drops the flock
        else:
            self._range_lock(thread_id, fcntl.F_UNLCK)

    def _lock(self, thread_id: str) -> None:
        """Take the thread's lock (``ThreadBusy`` if anyone holds it, this store
        included): a byte-range lock on the shared ``.locks`` file where the system
        has open-file-description locks (Linux), else a ``flock`` on ``<thread>.lock``."""
        validate_thread_id(thread_id)
        with self._claims:  # two worker threads of this store may ask at once
            if thread_id in self._locks:
                raise ThreadBusy(thread_id)
            self._locks[thread_id] = _CLAIMED
        try:
            self._lock_in_kernel(thread_id)
        except BaseException:
            self._locks.pop(thread_id, None)
            raise

    def _lock_in_kernel(self, thread_id: str) -> None:
        if _OFD_LOCKS:
            try:
                fd = self._shared_lock_fd()
            except OSError as exc:  # a read-only or full file system, no permission
                raise StoreWriteError(thread_id, exc) from exc
            try:
                self._range_lock(thread_id, fcntl.F_WRLCK, fd)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise ThreadBusy(thread_id) from None
                raise StoreWriteError(thread_id, exc) from exc
            self._locks[thread_id] = -1
            return
        lock = self.directory / f"{_file_stem(thread_id)}.lock"
        try:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # a new store: make its folder first
                self._make_root()
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a read-only or full file system, no permission
            raise StoreWriteError(thread_id, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ThreadBusy(thread_id) from None
        except BaseException:
            os.close(fd)
            raise
        self._locks[thread_id] = fd

    def _range_lock(self, thread_id: str, kind: int, fd: int | None = None) -> None:
        # One byte per thread, at a 63-bit hash of its id: locks are owned by the
        # open file description, so each store (and each process) competes for it.
        digest = hashlib.sha256(_file_stem(thread_id).encode()).digest()
        offset = int.from_bytes(digest[:8], "big") >> 1
        lock = struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0)
        fcntl.fcntl(self._shared_lock_fd() if fd is None else fd, fcntl.F_OFD_SETLK, lock)

    def _shared_lock_fd(self) -> int:
        fd = self._lock_fd
        if fd is not None and self._lock_pid == os.getpid():
            return fd
        with self._lock_fd_guard:  # two worker threads may both get here first
            if self._lock_fd is None or self._lock_pid != os.getpid():
                # A forked child gets its own description: it must not share our locks.
                path = self.directory / ".locks"
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                except FileNotFoundError:
                    self._make_root()
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                self._lock_fd, self._lock_pid = fd, os.getpid()
            return self._lock_fd

    def __del__(self) -> None:
        fd = getattr(self, "_lock_fd", None)
        if fd is not None and getattr(self, "_lock_pid", None) == os.getpid():
            with contextlib.suppress(OSError):
                os.close(fd)

    def _make_root(self) -> None:
        if _make_private_dirs(self.directory) and self.durability == "fsync":
            _fsync_dir(self.directory.parent)

    # -- saving ----------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._worker.run(self._save, checkpoint)

    def _save(self, cp: Checkpoint) -> None:
        thread_id = cp.thread_id
        self._peeked.pop(thread_id, None)
        if thread_id in self._locks:
            self._save_leased(cp)
            return
        # Not leased by us: hold the lock for this one save (never wait for it).
        try:
            self._lock(thread_id)
        except ThreadBusy:
            raise CheckpointConflict(thread_id, cp.parent_id) from None
        try:
            self._load_latest(thread_id)  # another store may have moved on meanwhile
            self._save_leased(cp, group=False)  # synced before the lock goes
        finally:
            self._release(thread_id)

    def _save_leased(self, cp: Checkpoint, *, group: bool = True) -> None:
        head = self._heads.get(cp.thread_id)
        if head is None or head.checkpoint.checkpoint_id != cp.parent_id:
            self._load_latest(cp.thread_id)  # the thread as it is on disk
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
            self._append(cp, head, group)

    def _append(self, cp: Checkpoint, head: _Head, group: bool) -> None:
        line = self._line(cp, delta=True)
        try:
            if head.fd is None:
                path = self._segment(_file_stem(cp.thread_id), head.segments[0])
                head.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                _write_all(head.fd, line)
                if self.durability == "fsync" and not (
                    group and self._defer_sync(cp.thread_id, head.fd, head.size, None, None)
                ):
                    os.fdatasync(head.fd)
            except OSError:
                # Cut off whatever part of the line landed, so the next save does not
                # follow a torn line; if even that fails, forget the head: the next
                # save reads the thread back from disk (and cuts it off then).
                try:
                    os.ftruncate(head.fd, head.size)
                except OSError:
                    self._forget(cp.thread_id)
                raise
        except OSError as exc:
            raise StoreWriteError(cp.thread_id, exc) from exc
        cp.changes = None  # written; the cached copy need not keep it
        head.checkpoint = cp
        head.size += len(line)
        head.tail = line[-_TAIL:]
        head.records += 1

    def _start_segment(self, cp: Checkpoint, head: _Head | None, group: bool) -> None:
        """Write ``cp`` with its whole state as the first line of a new segment."""
        line = self._line(cp, delta=False)
        path = self._segment(_file_stem(cp.thread_id), cp.seq)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL
        try:
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                self._make_root()
                fd = os.open(path, flags, 0o600)
            segments = [cp.seq, *(head.segments if head is not None else ())]
            pruned: list[int] = []
            if self.keep is not None:  # segments older than the newest `keep`
                while len(segments) > 1 and segments[-2] - 1 <= cp.seq - self.keep:
                    pruned.append(segments.pop())
            try:
                _write_all(fd, line)
                deferred = (
                    self.durability == "fsync"
                    and group
                    and self._defer_sync(cp.thread_id, fd, 0, path, (segments, pruned))
                )
                if self.durability == "fsync" and not deferred:
                    os.fsync(fd)
                    _fsync_dir(self.directory)
            except BaseException:
                os.close(fd)
                _unlink(path)
                raise
        except FileExistsError:
            raise CheckpointConflict(cp.thread_id, cp.parent_id) from None
        except OSError as exc:
            raise StoreWriteError(cp.thread_id, exc) from exc
        cp.changes = None  # written; the cached copy need not keep it
        self._remember(
            cp.thread_id,
            _Head(cp, segments, os.fstat(fd).st_ino, len(line), line[-_TAIL:], 1, len(line), fd),
        )
        if not deferred:  # else once the new segment is durable (``_commit``)
            self._after_new_segment(cp.thread_id, segments, pruned)

    def _after_new_segment(self, thread_id: str, segments: list[int], pruned: list[int]) -> None:
        """Delete the segments ``keep`` no longer needs, then record the live ones:
        only once the new segment is safely written, so a failed one loses nothing.
        Readers find a thread whose first segment is gone only through the list,
        so it must name the old segments before they go (a missing one is skipped;
        a stray one, never listed, would be lost to readers)."""
        stem = _file_stem(thread_id)
        listed = not pruned or self._pointer_lists(stem, pruned)
        if not listed and not self._write_pointer(thread_id, [*segments, *pruned]):
            return  # keep everything until the list can be written
        for first in pruned:
            _unlink(self._segment(stem, first))
        self._write_pointer(thread_id, segments)

    # -- group commit ------------------------------------------------------------

    def _defer_sync(
        self,
        thread_id: str,
        fd: int,
        old_size: int,
        path: Path | None,
        segments: tuple[list[int], list[int]] | None,
    ) -> bool:
        """Inside a batch, leave the sync of this write to ``_commit`` (one sync
        for the whole batch); elsewhere return ``False``: sync it now."""
        index = Batcher.call_index()
        if index is None:
            return False
        pending: list[_PendingSync] | None = getattr(self._pending, "items", None)
        if pending is None:
            pending = self._pending.items = []
        pending.append(_PendingSync(index, thread_id, fd, old_size, path, segments))
        return True

    def _commit(self) -> list[tuple[int, BaseException]]:
        """After a batch: make its writes durable, with one ``syncfs`` when there
        are several (else, or if that fails, file by file); a write that cannot be
        synced is undone and its save fails with ``StoreWriteError``."""
        pending: list[_PendingSync] = getattr(self._pending, "items", None) or []
        if not pending:
            return []
        self._pending.items = []
        if len(pending) >= 3 and _syncfs_available():
            try:
                _syncfs(pending[0].fd)
                pending, synced = [], pending
            except OSError:
                synced = []  # find out which write it was, one by one
        else:
            synced = []
        failed: dict[int, tuple[_PendingSync, OSError]] = {}  # by position in the batch
        for item in pending:
            try:
                if item.path is None:
                    os.fdatasync(item.fd)
                else:
                    os.fsync(item.fd)
            except OSError as exc:
                failed[item.index] = (item, exc)
        if any(item.path is not None for item in pending):
            try:
                _fsync_dir(self.directory)
            except OSError as exc:
                for item in pending:
                    if item.path is not None:
                        failed.setdefault(item.index, (item, exc))
        for item in [*synced, *pending]:
            if item.segments is not None and item.index not in failed:
                self._after_new_segment(item.thread_id, *item.segments)
        out: list[tuple[int, BaseException]] = []
        for item, error in failed.values():
            if item.path is None:
                with contextlib.suppress(OSError):
                    os.ftruncate(item.fd, item.old_size)
            else:
                _unlink(item.path)
            self._forget(item.thread_id)  # the next save reads the thread from disk
            out.append((item.index, StoreWriteError(item.thread_id, error)))
        return out

    def _write_pointer(self, thread_id: str, segments: list[int], force: bool = False) -> bool:
        """Record the live segments in ``<thread>.idx`` (replaced whole, never
        half-written; an empty list marks a thread whose every checkpoint was
        moved aside). Returns whether the file now says so."""
        stem = _file_stem(thread_id)
        path = self._index(stem)
        if segments == [1] and not force and not os.path.lexists(path):
            return True  # the default: a thread's first segment starts at checkpoint 1
        data = _index_bytes(segments)
        tmp = self.directory / f"{stem}=idx.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                _write_all(fd, data)
                if self.durability == "fsync":
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError:
            _unlink(tmp)
            return False
        return True

    def _line(self, cp: Checkpoint, *, delta: bool) -> bytes:
        """One log line: the checkpoint's JSON, a tab, its checksum, a newline."""
        parts = ['{"v":' + ("3" if cp.branches else "2")]
        for name in _HEADER_FIELDS:
            value = getattr(cp, name)
            try:
                text = _HEADER_ENCODER.encode(value)
            except (TypeError, ValueError) as exc:
                path, detail = find_unserializable(value, name)
                raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None
            parts.append(f'"{name}":{text}')
        if delta:
            assert isinstance(cp.state, BaseModel) and cp.changes is not None
            include: dict[str, Any] = {}
            appended: list[str] = []
            aliases = self._alias_map(type(cp.state))
            for name, count in cp.changes.items():
                if count is None:
                    include[name] = True
                elif count > 0:
                    total = len(getattr(cp.state, name))
                    include[name] = set(range(total - count, total))
                    appended.append(aliases.get(name, name))
            parts.append('"set":' + _state_json(cp, include))
            if appended:
                parts.append('"append":' + _HEADER_ENCODER.encode(appended))
        else:
            parts.append('"state":' + _state_json(cp, None))
        if cp.branches:
            parts.extend(_branch_parts(cp, delta))
        body = (",".join(parts) + "}").encode("utf-8", "surrogatepass")
        return body + b"\t" + _checksum(body) + b"\n"

    def _alias_map(self, model: type[BaseModel]) -> dict[str, str]:
        aliases = self._aliases.get(model)
        if aliases is None:
            aliases = {}
            for name, info in model.model_fields.items():
                alias = info.serialization_alias or info.alias
                if isinstance(alias, str):
                    aliases[name] = alias
            self._aliases[model] = aliases
        return aliases

    def _remember(self, thread_id: str, head: _Head) -> None:
        old = self._heads.pop(thread_id, None)
        if old is not None and old.fd is not None and old.fd != head.fd:
            os.close(old.fd)
        self._heads[thread_id] = head
        if len(self._heads) > _CACHED_HEADS:
            for name in list(self._heads):
                if name not in self._locks:
                    self._forget(name)
                    if len(self._heads) <= _CACHED_HEADS:
                        break

    def _forget(self, thread_id: str) -> None:
        head = self._heads.pop(thread_id, None)
        if head is not None and head.fd is not None:
            os.close(head.fd)

    # -- loading ---------------------------------------------------------------

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        if thread_id in self._peeked:
            return self._peeked.pop(thread_id)
        return await self._worker.run(self._load_latest, thread_id)

    def _load_latest(self, thread_id: str) -> Checkpoint | None:
        stem = _file_stem(validate_thread_id(thread_id))
        head = self._heads.get(thread_id)
        if head is not None and self._unchanged(stem, head):
            if thread_id in self._locks:  # most recently used
                self._heads[thread_id] = self._heads.pop(thread_id)
            return head.checkpoint
        return self._read_newest(thread_id, stem)

    def _unchanged(self, stem: str, head: _Head) -> bool:
        """Whether the newest segment still ends with the line this store last saw,
        and no newer segment follows it."""
        if os.path.lexists(self._segment(stem, head.checkpoint.seq + 1)):
            return False
        try:
            fd = os.open(self._segment(stem, head.segments[0]), os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            st = os.fstat(fd)
            if st.st_ino != head.ino or st.st_size != head.size:
                return False
            return os.pread(fd, len(head.tail), head.size - len(head.tail)) == head.tail
        finally:
            os.close(fd)

    def _pointer_lists(self, stem: str, seqs: list[int]) -> bool:
        """Whether ``<thread>.idx`` names every segment in ``seqs``."""
        data = self._read_index(stem)
        listed = set(_index_seqs(data) or ()) if data is not None else set()
        return all(seq in listed for seq in seqs)

    def _pointer_says(self, stem: str, segments: list[int]) -> bool:
        """Whether ``<thread>.idx`` lists ``segments`` (or, for just the first
        segment, is absent): a lease holder that had to list the folder repairs it."""
        data = self._read_index(stem)
        return segments == [1] if data is None else data == _index_bytes(segments)

    def _live_segments(self, stem: str) -> tuple[list[int], bool]:
        """First seqs of the thread's segments, newest first: ``<thread>.idx``'s
        list, or (if that is unreadable) a listing of the folder; and whether the
        thread has had checkpoints (its ``.idx`` exists, even empty)."""
        data = self._read_index(stem) or b""
        listed = _index_seqs(data)
        if listed:
            return listed, True
        if not data and not os.path.lexists(self._segment(stem, 1)):
            return [], False  # a new thread (the common case): no need to list the folder
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return [], False
        seqs = [seq for seq in (_segment_seq(stem, name) for name in names) if seq is not None]
        return sorted(seqs, reverse=True), bool(data) or bool(seqs)

    def _chain(self, thread_id: str, stem: str) -> tuple[list[int], dict[int, _Scan], bool]:
        """The live segments, newest first, with any newer ones the list missed
        (a segment is made just before the list names it), the scans made while
        finding them, and whether the thread has had checkpoints."""
        segments, known = self._live_segments(stem)
        scans: dict[int, _Scan] = {}
        while segments:
            try:
                scan = _scan(self._segment(stem, segments[0]), thread_id)
            except FileNotFoundError:  # moved aside or deleted since the list was written
                segments.pop(0)
                continue
            scans[segments[0]] = scan
            if not scan.records:
                break
            following = scan.records[-1].seq + 1
            if not os.path.lexists(self._segment(stem, following)):
                break
            segments.insert(0, following)
        return segments, scans, known or bool(segments)

    def _read_newest(self, thread_id: str, stem: str) -> Checkpoint | None:
        leased = thread_id in self._locks
        segments, scans, known = self._chain(thread_id, stem)
        damaged: list[str] = []
        for index, first in enumerate(segments):
            path = self._segment(stem, first)
            scan = scans.get(first)
            if scan is None:
                try:
                    scan = _scan(path, thread_id)
                except FileNotFoundError:  # pruned by a writer elsewhere
                    continue
            if leased:
                self._repair(path, scan, damaged)
            elif scan.problem == "damaged":
                damaged.append(path.name)
            if not scan.records:
                continue
            checkpoint = scan.records[-1]
            if leased:
                live = segments[index:]
                self._remember(
                    thread_id,
                    _Head(
                        checkpoint, live, scan.ino, scan.good_size, scan.tail,
                        len(scan.records), scan.base,
                    ),
                )  # fmt: skip
                if live != segments or index > 0 or not self._pointer_says(stem, live):
                    self._write_pointer(thread_id, live)
            return checkpoint
        if leased and damaged:  # mark the thread as one that had checkpoints
            self._write_pointer(thread_id, [], force=True)
        if not damaged and known:  # lines moved aside earlier: "not a new thread"
            damaged = [p.name for p in self.thread_files(thread_id) if p.name.endswith(".corrupt")]
        if damaged:
            raise CorruptCheckpoint(
                thread_id,
                f"no readable checkpoint left; damaged files moved aside: {', '.join(damaged)}",
            )
        if leased and known:  # nothing but unfinished segments (now removed): a new thread
            _unlink(self._index(stem))
        return None

    def _repair(self, path: Path, scan: _Scan, damaged: list[str]) -> None:
        """As lease holder: cut an unfinished last line, move damaged lines aside."""
        if scan.problem == "torn":  # a writer killed mid-line: it never returned
            if scan.records:
                with open(path, "r+b") as file:
                    file.truncate(scan.good_size)
            else:
                _unlink(path)
        elif scan.problem == "damaged":
            aside = path.with_name(path.name + ".corrupt")
            if aside.exists():
                aside = path.with_name(f"{path.name}.{scan.good_size}.corrupt")
            _log.warning(
                _MOVED_ASIDE, thread_id=scan.thread_id, file=str(path),
                reason=scan.reason, moved_to=aside.name,
            )  # fmt: skip
            if scan.records:
                with open(path, "r+b") as file:
                    file.seek(scan.good_size)
                    rest = file.read()
                    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    try:
                        _write_all(fd, rest)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    file.truncate(scan.good_size)
            else:
                os.replace(path, aside)
            damaged.append(aside.name)

    async def history(self, thread_id: str) -> AsyncIterator[Checkpoint]:
        stem = _file_stem(validate_thread_id(thread_id))
        segments, scans, _ = await asyncio.to_thread(self._chain, thread_id, stem)
        left = self.keep  # older checkpoints may wait on disk for their segment to go
        for first in segments:
            scan = scans.get(first)
            if scan is None:
                try:
                    scan = await asyncio.to_thread(_scan, self._segment(stem, first), thread_id)
                except FileNotFoundError:  # pruned meanwhile
                    continue
            for checkpoint in reversed(scan.records):
                if left is not None:
                    if left == 0:
                        return
                    left -= 1
                yield checkpoint

    # -- the rest ----------------------------------------------------------------

    async def delete(self, thread_id: str) -> None:
        lease = await self.acquire(thread_id)
        try:
            await self._worker.run(self._delete, thread_id)
        finally:
            await lease.release()

    def _delete(self, thread_id: str) -> None:
        self._forget(thread_id)
        self._peeked.pop(thread_id, None)
        stem = _file_stem(thread_id)

        def order(path: Path) -> tuple[int, int, str]:
            # Moved-aside files first, then segments oldest first: a process killed
            # midway leaves the thread whole (its newest checkpoint in place) or
            # gone, never rolled back to an older checkpoint whose used token works.
            seq = _segment_seq(stem, path.name)
            return (0, 0, path.name) if seq is None else (1, seq, path.name)

        files = [
            p
            for p in self.thread_files(thread_id)
            if p.name.endswith((".jsonl", ".corrupt", ".tmp"))
        ]
        for path in sorted(files, key=order):
            _unlink(path)
        _unlink(self._index(stem))  # last: until then the thread is known

    async def secret(self) -> bytes:
        if self._secret is None:
            self._secret = await asyncio.to_thread(self._load_secret)
        return self._secret

    def _load_secret(self) -> bytes:
        # The key is written to a temporary file, synced and hard-linked into place,
        # so ``.secret`` is always whole: a writer killed (or out of disk) midway
        # leaves no half-written key that would lock every token out for good.
        path = self.directory / ".secret"
        self._make_root()
        if not path.exists():
            tmp = self.directory / f".tmp-secret-{secrets.token_hex(8)}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    _write_all(fd, secrets.token_bytes(32).hex().encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
                with contextlib.suppress(FileExistsError):  # another process was first
                    os.link(tmp, path)
                _fsync_dir(self.directory)
            finally:
                _unlink(tmp)
        data = path.read_bytes()
        if len(data) == 64:
            with contextlib.suppress(ValueError):
                return bytes.fromhex(data.decode("ascii"))
        raise CorruptCheckpoint(
            ".secret", f"the key file {path} is damaged; delete it to make a new key"
        )


# -- group commit helpers ---------------------------------------------------------


@dataclass(slots=True)
class _PendingSync:
    index: int  # the save's position in its batch
    thread_id: str
    fd: int
    old_size: int  # for an append: the size to cut back to if the sync fails
    path: Path | None  # for a new segment: the file to remove if it fails
    segments: tuple[list[int], list[int]] | None  # ... its live and pruned segments


@functools.cache
def _libc() -> Any:
    import ctypes  # only when a batch has several durable writes

    return ctypes.CDLL(None, use_errno=True)


def _syncfs_available() -> bool:
    return sys.platform == "linux" and hasattr(_libc(), "syncfs")


def _syncfs(fd: int) -> None:
    """``syncfs(2)``: write out everything of the file system holding ``fd``."""
    import ctypes

    if _libc().syncfs(fd) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


# -- reading a segment ----------------------------------------------------------


@dataclass(slots=True)
class _Scan:
    thread_id: str
    records: list[Checkpoint]
    ino: int
    good_size: int  # bytes up to the end of the last good line
    base: int  # bytes of the first line
    tail: bytes  # the last bytes of the last good line
    problem: Literal["", "torn", "damaged"] = ""
    reason: str = ""


class _Damaged(Exception):
    """A line that cannot be trusted."""


def _scan(path: Path, thread_id: str) -> _Scan:
    """Read a segment: its checkpoints oldest first (each with its whole state),
    up to the first unfinished (torn) or damaged line."""
    with open(path, "rb") as file:
        ino = os.fstat(file.fileno()).st_ino
        raw = file.read()
    scan = _Scan(thread_id, [], ino, 0, 0, b"")
    state: dict[str, Any] = {}
    previous: Checkpoint | None = None
    offset = 0
    while offset < len(raw):
        end = raw.find(b"\n", offset)
        if end < 0:
            scan.problem, scan.reason = "torn", "unfinished last line"
            break
        line = raw[offset : end + 1]
        try:
            checkpoint, state = _parse(line, thread_id, state, previous)
        except _Damaged as exc:
            scan.problem, scan.reason = "damaged", f"line {len(scan.records) + 1}: {exc}"
            break
        scan.records.append(checkpoint)
        previous = checkpoint
        offset = end + 1
        if len(scan.records) == 1:
            scan.base = offset
        scan.good_size, scan.tail = offset, line[-_TAIL:]
    if not raw:  # made, then its writer was killed before the first line
        scan.problem, scan.reason = "torn", "empty segment"
    return scan


def _parse(
    line: bytes, thread_id: str, state: dict[str, Any], previous: Checkpoint | None
) -> tuple[Checkpoint, dict[str, Any]]:
    body, tab, rest = line[:-1].rpartition(b"\t")
    if not tab or rest != _checksum(body):
        raise _Damaged("checksum mismatch")
    try:
        data = json.loads(body.decode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise _Damaged(f"not JSON: {exc}") from None
    version = data.get("v") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise _Damaged("no schema version")
    if version > SCHEMA_VERSION:
        raise CorruptCheckpoint(
            thread_id,
            f"a checkpoint was written with checkpoint schema version {version}; this "
            f"research_fsm reads up to version {SCHEMA_VERSION}: upgrade research_fsm",
        )
    if data.get("thread_id") != thread_id:
        raise _Damaged(f"belongs to thread {data.get('thread_id')!r}")
    if "state" in data and isinstance(data["state"], dict):
        state = data["state"]
    elif previous is not None and isinstance(data.get("set"), dict):
        if data.get("seq") != previous.seq + 1 or data.get("parent_id") != previous.checkpoint_id:
            raise _Damaged("does not follow the line before it")
        changes: dict[str, Any] = data["set"]
        before, state = state, {**state, **changes}
        try:
            for key in data.get("append") or ():
                state[key] = [*before.get(key, ()), *changes[key]]
        except (KeyError, TypeError):
            raise _Damaged("bad append") from None
    else:
        raise _Damaged("no state")
    branches = _branches_of(data, previous)
    try:
        checkpoint = Checkpoint(
            **{name: data[name] for name in _HEADER_FIELDS}, state=state, branches=branches
        )
        return checkpoint, state
    except (KeyError, TypeError) as exc:
        raise _Damaged(f"missing field {exc}") from None


def _branches_of(
    data: dict[str, Any], previous: Checkpoint | None
) -> dict[str, dict[str, Any]] | None:
    """A line's branch records: given whole, or as changes to the line before."""
    if "branches" in data:
        branches = data["branches"]
    elif "bset" in data:
        before = previous.branches if previous is not None and previous.branches else {}
        branches = {**before, **data["bset"]}
        for gone in data.get("bdel") or ():
            branches.pop(gone, None)
    else:
        return None
    if not isinstance(branches, dict) or not all(isinstance(r, dict) for r in branches.values()):
        raise _Damaged("bad branch records")
    return branches or None


def _branch_parts(cp: Checkpoint, delta: bool) -> list[str]:
    """The JSON members holding ``cp``'s branch records (just the changed ones in a delta)."""
    branches = cp.branches or {}
    changed = cp.changed_branches
    if delta and changed is not None:
        parts = ['"bset":' + _records_json(cp, {k: branches[k] for k in changed if k in branches})]
        gone = [k for k in changed if k not in branches]
        if gone:
            parts.append('"bdel":' + _HEADER_ENCODER.encode(gone))
        return parts
    return ['"branches":' + _records_json(cp, branches)]


def _records_json(cp: Checkpoint, records: dict[str, Any]) -> str:
    try:
        return pydantic_core.to_json(records).decode("utf-8", "surrogatepass")
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(records, "branches")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


# -- helpers ------------------------------------------------------------------------


def _state_json(cp: Checkpoint, include: dict[str, Any] | None) -> str:
    state: BaseModel | dict[str, Any] = cp.state
    try:
        if isinstance(state, BaseModel):  # by alias: what model_validate reads back
            return state.model_dump_json(by_alias=True, include=include)
        return json.dumps(state, ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(state, "state")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _make_private_dirs(path: Path) -> bool:
    """``mkdir -p`` where every directory made, missing parents included, is 0700
    (``Path.mkdir(parents=True)`` gives parents the umask's mode, maybe 0777).
    Returns whether ``path`` was made."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return False
    except FileNotFoundError:
        _make_private_dirs(path.parent)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            return False
    return True


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
