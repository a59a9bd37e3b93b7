"""``JsonFileCheckpointStore``: one readable JSON file per checkpoint.

Layout under ``directory``::

    .secret                      token-signing key (0600), unless one is passed in
    <thread>/                    one directory per thread (0700)
        .lock                    the lease: an OS file lock, released when the process dies
        000000000001.json        checkpoint seq 1 (0600)
        000000000002.json        ...
        000000000002.json.corrupt  a damaged file moved aside

A save writes a temporary file, fsyncs it, hard-links it to its final name
(which fails if another writer took that slot: ``CheckpointConflict``) and
fsyncs the directory, so a killed process leaves the old or the new checkpoint,
never a torn one. The lease relies on ``flock`` and assumes a local file
system; a network file system needs a database-backed store.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import secrets
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal, TypeVar

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

SCHEMA_VERSION = 1
_TMP_COUNTER = itertools.count()
_HEADER_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_CHECKSUM_MARK = ',\n  "checksum": "'
_HEADER_FIELDS = (
    "thread_id", "checkpoint_id", "parent_id", "seq", "run_id", "step", "status",
    "next", "last_node", "created_at", "suspension", "error",
)  # fmt: skip
_log = structlog.get_logger("research_fsm.engine.store")

Durability = Literal["fsync", "none"]
T = TypeVar("T")


def _thread_dirname(thread_id: str) -> str:
    # Ids are case-sensitive; on a case-insensitive file system "Alice" and
    # "alice" must not share a directory, so ids with capitals get a hash suffix
    # ('+' never appears in a valid id).
    if thread_id == thread_id.lower():
        return thread_id
    return f"{thread_id}+{hashlib.sha256(thread_id.encode()).hexdigest()[:16]}"


def _file_name(seq: int) -> str:
    return f"{seq:012d}.json"


def _seq_of(name: str) -> int | None:
    if len(name) == 17 and name.endswith(".json") and name[:12].isdigit():
        return int(name[:12])
    return None


class _FileLease:
    __slots__ = ("_fd", "_owner", "_thread_id")

    def __init__(self, owner: JsonFileCheckpointStore, thread_id: str, fd: int) -> None:
        self._owner = owner
        self._thread_id = thread_id
        self._fd: int | None = fd

    async def release(self) -> None:
        self.release_now()

    def release_now(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            self._owner._leased.discard(self._thread_id)
            self._owner._heads.pop(self._thread_id, None)
            self._owner._peeked.pop(self._thread_id, None)
            os.close(fd)  # closing the descriptor drops the flock


class JsonFileCheckpointStore:
    """Checkpoints as JSON files, one directory per thread.

    Args:
        directory: root folder (created 0700 if missing).
        durability: ``"fsync"`` survives power loss; ``"none"`` survives a killed
            process (atomic rename) but not a power cut, and is much faster.
        keep: prune each thread to its newest ``keep`` checkpoints (``None``: keep all).
        secret: key for signing resume tokens; by default a random key is kept
            in ``directory/.secret`` (0600) and shared by every process.
    """

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
        self._secret = secret.encode() if isinstance(secret, str) else secret
        self._leased: set[str] = set()
        self._worker = Batcher()
        # Latest (seq, checkpoint id) per leased thread, as this store last read or
        # wrote it: lets a save skip re-reading its parent (the link still guards).
        self._heads: dict[str, tuple[int, str]] = {}
        # The newest checkpoint read while taking a lease, handed to the next
        # load_latest of that thread (nothing can change it while the lease is held).
        self._peeked: dict[str, Checkpoint | None] = {}

    def __repr__(self) -> str:
        return (
            f"JsonFileCheckpointStore({str(self.directory)!r}, "
            f"durability={self.durability!r}, keep={self.keep!r})"
        )

    def thread_dir(self, thread_id: str) -> Path:
        """The folder holding ``thread_id``'s checkpoints (``ValueError`` for a bad id)."""
        return self.directory / _thread_dirname(validate_thread_id(thread_id))

    # -- lease -----------------------------------------------------------------

    async def acquire(self, thread_id: str) -> _FileLease:
        # The lock is taken in a worker thread (file I/O stays off the event loop),
        # and the newest checkpoint is read in the same trip: the engine asks for it
        # next. If the caller is cancelled meanwhile, the locking still finishes and
        # its lease is dropped at once, so no orphan descriptor keeps the lock.
        locking = asyncio.ensure_future(self._worker.run(self._lock_and_peek, thread_id))
        try:
            fd = await asyncio.shield(locking)
        except asyncio.CancelledError:
            while not locking.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({locking})
            if not locking.cancelled() and locking.exception() is None:
                _FileLease(self, thread_id, locking.result()).release_now()
            raise
        return _FileLease(self, thread_id, fd)

    def _lock_and_peek(self, thread_id: str) -> int:
        fd = self._lock(thread_id)
        self._leased.add(thread_id)
        try:
            self._peeked[thread_id] = self._load_latest(thread_id)
        except Exception:  # load_latest will meet (and report) the same problem
            self._peeked.pop(thread_id, None)
        return fd

    def _lock(self, thread_id: str) -> int:
        folder = self.thread_dir(thread_id)
        lock = folder / ".lock"
        try:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # a new thread: make its folder first
                self._mkdir(folder)
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
        return fd

    def _mkdir(self, folder: Path) -> None:
        for path in (self.directory, folder):
            _make_private_dirs(path)

    # -- saving ----------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._worker.run(self._save, checkpoint)

    def _save(self, cp: Checkpoint) -> None:
        self._peeked.pop(cp.thread_id, None)
        data = self.encode(cp)
        folder = self.thread_dir(cp.thread_id)
        final = folder / _file_name(cp.seq)
        tmp = folder / f".tmp-{os.getpid()}-{next(_TMP_COUNTER)}.json"
        leased = cp.thread_id in self._leased
        # When the checkpoint this save prunes is not its parent (keep >= 2), reuse
        # its file (renamed to the temp name, overwritten in place) instead of
        # deleting one file and creating another: that costs a block discard on many
        # disks. With keep == 1 the parent is deleted only after the new file lands.
        prune = None if self.keep is None or cp.seq <= self.keep else cp.seq - self.keep
        recycled = False
        try:
            if not leased:
                self._mkdir(folder)
            if not leased or self._heads.get(cp.thread_id) != (cp.seq - 1, cp.parent_id):
                self._check_parent(folder, cp)
            if prune is not None and prune < cp.seq - 1:
                with contextlib.suppress(FileNotFoundError):
                    os.rename(folder / _file_name(prune), tmp)
                    recycled = True
            flags = os.O_WRONLY if recycled else os.O_WRONLY | os.O_CREAT | os.O_EXCL
            fd = os.open(tmp, flags, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if recycled:
                    os.ftruncate(fd, len(data))
                if self.durability == "fsync":
                    os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, final)
            except FileExistsError:
                raise CheckpointConflict(cp.thread_id, cp.parent_id) from None
            finally:
                _unlink(tmp)
            if self.durability == "fsync":
                _fsync_dir(folder)
        except OSError as exc:
            _unlink(tmp)
            raise StoreWriteError(cp.thread_id, exc) from exc
        if leased:
            self._heads[cp.thread_id] = (cp.seq, cp.checkpoint_id)
        if prune is not None and not recycled:
            _unlink(folder / _file_name(prune))

    @staticmethod
    def _check_parent(folder: Path, cp: Checkpoint) -> None:
        """The expected-parent check: ``cp.parent_id`` must be the checkpoint at
        ``seq - 1`` (or, for ``None``, the thread must have none). Together with
        the hard link into a free slot this makes the parent the latest."""
        if cp.parent_id is None:
            ok = cp.seq == 1 and all(_seq_of(name) is None for name in os.listdir(folder))
        else:
            line = f'\n  "checkpoint_id": {json.dumps(cp.parent_id, ensure_ascii=False)},\n'
            try:
                with open(folder / _file_name(cp.seq - 1), "rb") as file:
                    ok = line.encode() in file.read(4096)
            except FileNotFoundError:
                ok = False
        if not ok:
            raise CheckpointConflict(cp.thread_id, cp.parent_id)

    @staticmethod
    def encode(cp: Checkpoint) -> bytes:
        """The exact bytes written for ``cp`` (indented JSON with a checksum)."""
        lines = ['{\n  "schema_version": ' + str(SCHEMA_VERSION)]
        for name in _HEADER_FIELDS:
            value = getattr(cp, name)
            try:
                text = _HEADER_ENCODER.encode(value)
            except (TypeError, ValueError) as exc:
                path, detail = find_unserializable(value, name)
                raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None
            lines.append(f'  "{name}": {text}')
        lines.append('  "state": ' + _state_json(cp).replace("\n", "\n  "))
        body = ",\n".join(lines).encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(body).hexdigest()
        return body + f'{_CHECKSUM_MARK}sha256:{digest}"\n}}\n'.encode()

    # -- loading ---------------------------------------------------------------

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        if thread_id in self._peeked:
            return self._peeked.pop(thread_id)
        return await self._worker.run(self._load_latest, thread_id)

    def _load_latest(self, thread_id: str) -> Checkpoint | None:
        folder = self.thread_dir(thread_id)
        seqs = self._list(folder, thread_id)
        damaged: list[str] = []
        for seq in seqs:
            path = folder / _file_name(seq)
            try:
                checkpoint = self._read(path, thread_id)
            except _Damaged as exc:
                damaged.append(path.name)
                _log.warning(
                    "corrupt checkpoint moved aside; using the one before it",
                    thread_id=thread_id, file=str(path), reason=str(exc),
                )  # fmt: skip
                with contextlib.suppress(OSError):
                    os.replace(path, path.with_name(path.name + ".corrupt"))
                continue
            if thread_id in self._leased:
                self._heads[thread_id] = (checkpoint.seq, checkpoint.checkpoint_id)
            return checkpoint
        if not damaged:  # files moved aside earlier still mean "not a new thread"
            with contextlib.suppress(FileNotFoundError):
                damaged = sorted(n for n in os.listdir(folder) if n.endswith(".json.corrupt"))
        if damaged:
            raise CorruptCheckpoint(
                thread_id,
                f"no readable checkpoint left; damaged files moved aside: {', '.join(damaged)}",
            )
        return None

    def _list(self, folder: Path, thread_id: str) -> list[int]:
        """Checkpoint seqs on disk, newest first; tidies up if we hold the lease."""
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return []
        seqs = sorted((s for s in map(_seq_of, names) if s is not None), reverse=True)
        if thread_id in self._leased:
            for name in names:
                if name.startswith(".tmp-"):
                    _unlink(folder / name)  # left by a writer killed mid-save
            if self.keep is not None:
                for seq in seqs[self.keep :]:
                    _unlink(folder / _file_name(seq))
                del seqs[self.keep :]
        return seqs

    def _read(self, path: Path, thread_id: str) -> Checkpoint:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise _Damaged("vanished") from None
        cut = raw.rfind(_CHECKSUM_MARK.encode())
        if cut < 0:
            raise _Damaged("no checksum (truncated?)")
        expected = raw[cut + len(_CHECKSUM_MARK) :].split(b'"', 1)[0].decode("ascii", "replace")
        actual = "sha256:" + hashlib.sha256(raw[:cut]).hexdigest()
        if expected != actual:
            raise _Damaged("checksum mismatch")
        try:
            data = json.loads(raw.decode("utf-8", "surrogatepass"))
        except ValueError as exc:
            raise _Damaged(f"not JSON: {exc}") from None
        version = data.get("schema_version") if isinstance(data, dict) else None
        if not isinstance(version, int):
            raise _Damaged("no schema_version")
        if version > SCHEMA_VERSION:
            raise CorruptCheckpoint(
                thread_id,
                f"{path.name} was written with checkpoint schema version {version}; this "
                f"research_fsm reads up to version {SCHEMA_VERSION}: upgrade research_fsm",
            )
        if data.get("thread_id") != thread_id:
            raise _Damaged(f"belongs to thread {data.get('thread_id')!r}")
        try:
            return Checkpoint(**{name: data[name] for name in _HEADER_FIELDS}, state=data["state"])
        except (KeyError, TypeError) as exc:
            raise _Damaged(f"missing field {exc}") from None

    async def history(self, thread_id: str) -> AsyncIterator[Checkpoint]:
        folder = self.thread_dir(thread_id)
        seqs = await asyncio.to_thread(self._list, folder, thread_id)
        for seq in seqs:
            try:
                yield await asyncio.to_thread(self._read, folder / _file_name(seq), thread_id)
            except _Damaged:
                continue

    # -- the rest ----------------------------------------------------------------

    async def delete(self, thread_id: str) -> None:
        lease = await self.acquire(thread_id)
        try:
            await self._worker.run(self._delete, thread_id)
        finally:
            await lease.release()

    def _delete(self, thread_id: str) -> None:
        folder = self.thread_dir(thread_id)
        # Checkpoints go oldest first, after everything else: a process killed
        # midway leaves the thread whole (its newest checkpoint in place) or gone,
        # never rolled back to an older checkpoint whose used token works again.
        names = sorted(os.listdir(folder), key=lambda name: (_seq_of(name) or 0, name))
        for name in names:
            if name != ".lock":
                path = folder / name
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    _unlink(path)

    async def secret(self) -> bytes:
        if self._secret is None:
            self._secret = await asyncio.to_thread(self._load_secret)
        return self._secret

    def _load_secret(self) -> bytes:
        # The key is written to a temporary file, synced and hard-linked into place,
        # so ``.secret`` is always whole: a writer killed (or out of disk) midway
        # leaves no half-written key that would lock every token out for good.
        path = self.directory / ".secret"
        self._mkdir(self.directory)
        if not path.exists():
            tmp = self.directory / f".tmp-secret-{secrets.token_hex(8)}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    view = memoryview(secrets.token_bytes(32).hex().encode())
                    while view:
                        view = view[os.write(fd, view) :]
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


class _Damaged(Exception):
    """A checkpoint file that cannot be trusted."""


def _state_json(cp: Checkpoint) -> str:
    state: BaseModel | dict[str, Any] = cp.state
    try:
        if isinstance(state, BaseModel):  # by alias: what model_validate reads back
            return state.model_dump_json(indent=2, by_alias=True)
        return json.dumps(state, indent=2, ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(state, "state")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


def _make_private_dirs(path: Path) -> None:
    """``mkdir -p`` where every directory made, missing parents included, is 0700
    (``Path.mkdir(parents=True)`` gives parents the umask's mode, maybe 0777)."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        _make_private_dirs(path.parent)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
