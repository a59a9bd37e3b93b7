"""``MemoryCheckpointStore``: checkpoints in a dict, for tests and short-lived apps."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Collection

from ._errors import CheckpointConflict, CheckpointNotFound, ThreadBusy
from ._types import Checkpoint, ThreadPage
from .store import Lease, hint_matches, seq_hint, thread_info, thread_query, validate_keep

__all__ = ["MemoryCheckpointStore"]


class _MemoryLease:
    __slots__ = ("_held", "_released", "_thread_id")

    def __init__(self, held: set[str], thread_id: str) -> None:
        self._held = held
        self._thread_id = thread_id
        self._released = False

    async def release(self) -> None:
        if not self._released:
            self._released = True
            self._held.discard(self._thread_id)

    def holds(self, held: set[str], thread_id: str) -> bool:
        """Whether this is a lease of ``held``'s store on ``thread_id``, not released."""
        return held is self._held and thread_id == self._thread_id and not self._released


class MemoryCheckpointStore:
    """Keeps checkpoints in this process's memory.

    States are kept as the model instances the engine produced (no copy, no
    serialisation), so nodes must treat the state they receive as read-only and
    return updates instead of mutating it.

    Args:
        keep: prune each thread's history to its newest ``keep`` checkpoints.
        secret: key for signing resume tokens (random per store by default).
    """

    saves_changes = False
    """Keeps the whole state of every checkpoint: needs no ``Checkpoint.changes``."""

    def __init__(self, *, keep: int | None = None, secret: bytes | str | None = None) -> None:
        self._keep = validate_keep(keep)
        self._threads: dict[str, list[Checkpoint]] = {}
        self._held: set[str] = set()
        if isinstance(secret, str):
            secret = secret.encode()
        self._secret = secret or secrets.token_bytes(32)

    async def acquire(self, thread_id: str) -> _MemoryLease:
        if thread_id in self._held:
            raise ThreadBusy(thread_id)
        self._held.add(thread_id)
        return _MemoryLease(self._held, thread_id)

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        history = self._threads.get(thread_id)
        return history[-1] if history else None

    async def save(self, checkpoint: Checkpoint) -> None:
        history = self._threads.setdefault(checkpoint.thread_id, [])
        latest_id = history[-1].checkpoint_id if history else None
        if latest_id != checkpoint.parent_id:
            raise CheckpointConflict(checkpoint.thread_id, checkpoint.parent_id)
        history.append(checkpoint)
        if self._keep is not None and len(history) > self._keep:
            del history[: len(history) - self._keep]

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        history = self._threads.get(thread_id, [])
        end = len(history)
        if before is not None:
            at = self._position(history, before)
            if at is None:
                raise CheckpointNotFound(thread_id, before)
            end = at
        start = 0 if limit is None else max(0, end - limit)
        for checkpoint in history[start:end][::-1]:
            yield checkpoint

    async def load(self, thread_id: str, checkpoint_id: str) -> Checkpoint | None:
        history = self._threads.get(thread_id, [])
        at = self._position(history, checkpoint_id)
        return None if at is None else history[at]

    @staticmethod
    def _position(history: list[Checkpoint], checkpoint_id: str) -> int | None:
        """Where ``checkpoint_id`` is in ``history`` (its seq says, for an engine's id)."""
        hint = seq_hint(checkpoint_id)
        if history and hint is not None:  # the engine's seqs follow on from the first kept
            at = (hint - history[0].seq) & 0xFFFFFFFF
            found = history[at] if at < len(history) else None
            if found and hint_matches(hint, found.seq) and found.checkpoint_id == checkpoint_id:
                return at
        for at in range(len(history) - 1, -1, -1):  # an id of another kind
            if history[at].checkpoint_id == checkpoint_id:
                return at
        return None

    async def delete(self, thread_id: str, *, lease: Lease | None = None) -> None:
        mine = isinstance(lease, _MemoryLease) and lease.holds(self._held, thread_id)
        if thread_id in self._held and not mine:
            raise ThreadBusy(thread_id)
        self._threads.pop(thread_id, None)

    async def secret(self) -> bytes:
        return self._secret

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str = "",
        status: str | Collection[str] | None = None,
        children: bool = True,
    ) -> ThreadPage:
        query = thread_query(
            limit=limit, cursor=cursor, prefix=prefix, status=status, children=children
        )
        return query.page(
            thread_info(history[-1], len(history)) for history in self._threads.values() if history
        )
