"""Group commit: the durable writes of one ``Batcher`` batch share their syncs.

Inside a batch, a save with ``durability="fsync"`` writes its line and leaves
the sync to ``GroupCommit.commit``, which runs after the batch: one ``syncfs``
when there are several writes or a new file among them (it syncs the folder
too); else, or if that fails, file by file. A write
that cannot be synced is undone and only its own save fails, with
``StoreWriteError``; tidying up after a durable new segment (pruning) never
fails a save, nor the batch.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from research_fsm.engine import StoreWriteError

from ..._logging import get_logger
from .batch import Batcher
from .fs import FileSystem, fsync_dir, unlink

__all__ = ["GroupCommit"]

_log = get_logger("research_fsm.engine.store")
_SYNCFS_FROM = 3  # writes in a batch from which one syncfs beats syncing each file


@dataclass(slots=True)
class _PendingSync:
    index: int  # the save's position in its batch
    thread_id: str
    fd: int
    old_size: int  # for an append: the size to cut back to if the sync fails
    path: Path | None  # for a new segment: the file to remove if it fails
    segments: tuple[list[int], list[int]] | None  # ... its live and pruned segments


class GroupCommit:
    """The writes of the running batch that await a sync, and the sync after it."""

    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        prune: Callable[[str, list[int], list[int]], None],
        forget: Callable[[str], None],
    ) -> None:
        self._fs = fs
        self._directory = directory
        self._prune = prune
        self._forget = forget
        self._pending = threading.local()

    def defer(
        self,
        thread_id: str,
        fd: int,
        old_size: int,
        path: Path | None,
        segments: tuple[list[int], list[int]] | None,
    ) -> bool:
        """Inside a batch, leave the sync of this write to ``commit`` (one sync
        for the whole batch); elsewhere return ``False``: sync it now."""
        index = Batcher.call_index()
        if index is None:
            return False
        pending: list[_PendingSync] | None = getattr(self._pending, "items", None)
        if pending is None:
            pending = self._pending.items = []
        pending.append(_PendingSync(index, thread_id, fd, old_size, path, segments))
        return True

    def commit(self) -> list[tuple[int, BaseException]]:
        """After a batch: make its writes durable; returns the saves that failed."""
        pending: list[_PendingSync] = getattr(self._pending, "items", None) or []
        if not pending:
            return []
        self._pending.items = []
        synced: list[_PendingSync] = []
        # One syncfs for several writes, or for a new file's (its folder's sync too).
        several = len(pending) >= _SYNCFS_FROM or any(p.path is not None for p in pending)
        if several and self._fs.has_syncfs():
            try:
                self._fs.syncfs(pending[0].fd)
                pending, synced = [], pending
            except OSError:
                pass  # find out which write it was, one by one
        failed = self._sync_each(pending)
        for item in [*synced, *pending]:
            if item.segments is not None and item.index not in failed:
                try:  # the save is durable: tidying up cannot fail it, nor the batch
                    self._prune(item.thread_id, *item.segments)
                except OSError as exc:
                    _log.warning("could not prune", thread_id=item.thread_id, error=str(exc))
        return [self._undo(item, error) for item, error in failed.values()]

    def _sync_each(self, pending: list[_PendingSync]) -> dict[int, tuple[_PendingSync, OSError]]:
        failed: dict[int, tuple[_PendingSync, OSError]] = {}  # by position in the batch
        for item in pending:
            try:
                if item.path is None:
                    self._fs.fdatasync(item.fd)
                else:
                    self._fs.fsync(item.fd)
            except OSError as exc:
                failed[item.index] = (item, exc)
        if any(item.path is not None for item in pending):
            try:
                fsync_dir(self._fs, self._directory)
            except OSError as exc:
                for item in pending:
                    if item.path is not None:
                        failed.setdefault(item.index, (item, exc))
        return failed

    def _undo(self, item: _PendingSync, error: OSError) -> tuple[int, BaseException]:
        if item.path is None:
            with contextlib.suppress(OSError):
                self._fs.ftruncate(item.fd, item.old_size)
        else:
            unlink(self._fs, item.path)
        self._forget(item.thread_id)  # the next save reads the thread from disk
        return item.index, StoreWriteError(item.thread_id, error)
