"""The ``CheckpointStore`` protocol every store implements."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ._types import Checkpoint

__all__ = ["CheckpointStore", "Lease", "validate_keep", "validate_thread_id"]

_THREAD_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def validate_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if valid, else raise ``ValueError`` saying why.

    Valid ids are 1-128 characters of ``A-Z a-z 0-9 . _ -`` not starting with a
    dot; they are case-sensitive.
    """
    if not isinstance(thread_id, str):
        raise ValueError(f"thread_id must be a str, got {type(thread_id).__name__}")
    if _THREAD_ID.fullmatch(thread_id) is None:
        shown = thread_id if len(thread_id) <= 40 else thread_id[:40] + "..."
        raise ValueError(
            f"invalid thread_id {shown!r}: use 1-128 characters from A-Z a-z 0-9 . _ - "
            "not starting with a dot"
        )
    return thread_id


def validate_keep(keep: object) -> int | None:
    """Return a store's ``keep`` if valid (``None``, or an int >= 1; a bool is
    not a count), else raise ``ValueError`` naming it and the allowed values."""
    if keep is None or (isinstance(keep, int) and not isinstance(keep, bool) and keep >= 1):
        return keep
    raise ValueError(f"keep must be None (keep all) or an int >= 1, got {keep!r}")


@runtime_checkable
class Lease(Protocol):
    """Exclusive hold on one thread; the engine keeps it for a whole run."""

    async def release(self) -> None:
        """Give the thread back; calling it twice is harmless."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Where a compiled graph keeps its checkpoints.

    Implementations: :class:`MemoryCheckpointStore`, :class:`JsonFileCheckpointStore`.
    The engine validates thread ids before calling any method.
    """

    saves_changes: bool
    """Whether a save writes only the step's changes (``Checkpoint.changes``),
    which the engine then works out for every checkpoint but a thread's first
    after a fresh start; ``False``: the engine leaves them ``None`` and the
    store saves whole states. A store never modifies the checkpoints it is given."""

    async def acquire(self, thread_id: str) -> Lease:
        """Take the thread's lease at once, or raise ``ThreadBusy`` (never wait)."""
        ...

    async def load_latest(self, thread_id: str) -> Checkpoint | None:
        """The newest readable checkpoint, or ``None`` for an unknown thread."""
        ...

    async def save(self, checkpoint: Checkpoint) -> None:
        """Add ``checkpoint`` after its parent.

        Raises ``CheckpointConflict`` when ``checkpoint.parent_id`` is not the
        thread's latest checkpoint; nothing is overwritten then.

        A checkpoint with status ``"completed"`` or ``"suspended"`` is the last its
        run saves: no node code runs after it, and the run's ``Lease.release``
        follows. A store may end the lease together with that save (the release
        then has nothing left to do).
        """
        ...

    def history(self, thread_id: str) -> AsyncIterator[Checkpoint]:
        """The thread's checkpoints, newest first."""
        ...

    async def delete(self, thread_id: str) -> None:
        """Remove the thread and all its checkpoints."""
        ...

    async def secret(self) -> bytes:
        """The key that signs resume tokens for this store."""
        ...
