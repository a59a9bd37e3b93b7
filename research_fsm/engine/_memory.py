"""``MemoryCheckpointStore``: checkpoints in a dict, for tests and short-lived apps."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

from ._errors import CheckpointConflict, ThreadBusy
from ._types import Checkpoint
from .store import validate_keep

__all__ = ["MemoryCheckpointStore"]


class _MemoryLease:
    __slots__ = ("_held", "_thread_id")

    def __init__(self, held: set[str], thread_id: str) -> None:
        self._held = held
        self._thread_id = thread_id

    async def release(self) -> None:
        self._held.discard(self._thread_id)


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

    async def history(self, thread_id: str) -> AsyncIterator[Checkpoint]:
        for checkpoint in reversed(list(self._threads.get(thread_id, ()))):
            yield checkpoint

    async def delete(self, thread_id: str) -> None:
        if thread_id in self._held:
            raise ThreadBusy(thread_id)
        self._threads.pop(thread_id, None)

    async def secret(self) -> bytes:
        return self._secret
