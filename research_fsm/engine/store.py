"""What a checkpoint store implements, and what store authors share with the engine.

The ``CheckpointStore`` and ``Lease`` protocols; the records a ``Checkpoint`` carries
besides its state (``SuspensionRecord``, ``BranchRecord`` with its ``UpdateEntry``s,
``OriginRecord``: a store that keeps bytes writes them as ``research_fsm.stores``'s
codec does); the checks every store applies to its arguments (``validate_thread_id``,
``validate_keep``); and the two facts about a
state's JSON that the engine's state checks and a store's codec must agree on: which
fields are untyped (``loose_fields``) and how deep containers may nest
(``MAX_NESTING``). The stores in ``research_fsm.stores`` are built on this module;
so is a store of your own.
"""

from __future__ import annotations

import functools
import os
import re
import types
import typing
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ._records import NO_ITEM, BranchRecord, OriginRecord, SuspensionRecord, UpdateEntry
from ._types import Checkpoint

__all__ = [
    "MAX_NESTING",
    "NO_ITEM",
    "BranchRecord",
    "CheckpointStore",
    "Lease",
    "OriginRecord",
    "SuspensionRecord",
    "UpdateEntry",
    "hint_matches",
    "loose_fields",
    "new_checkpoint_id",
    "seq_hint",
    "validate_keep",
    "validate_limit",
    "validate_thread_id",
]

_THREAD_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_ENGINE_ID = re.compile(r"[0-9a-f]{24}")


def new_checkpoint_id(seq: int) -> str:
    """A new checkpoint id for position ``seq`` of its thread: 24 lowercase hex
    digits, the low 32 bits of ``seq`` then 64 random bits (so a store can find a
    checkpoint by id without reading the thread: ``seq_hint``)."""
    return f"{seq & 0xFFFFFFFF:08x}{os.urandom(8).hex()}"


def seq_hint(checkpoint_id: str) -> int | None:
    """Where in its thread ``checkpoint_id`` probably is: the low 32 bits of its
    ``seq`` for an id made by ``new_checkpoint_id`` (``None`` when it cannot be one).
    Only a hint: ids of older versions are random, so a store checks the checkpoint
    it finds there and else looks further."""
    if not isinstance(checkpoint_id, str) or _ENGINE_ID.fullmatch(checkpoint_id) is None:
        return None
    return int(checkpoint_id[:8], 16)


def hint_matches(hint: int | None, seq: int) -> bool:
    """Whether a checkpoint at ``seq`` is where ``seq_hint`` points."""
    return hint is not None and hint == seq & 0xFFFFFFFF


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


def validate_limit(limit: object) -> int | None:
    """Return a page's ``limit`` if valid (``None``, or an int >= 1), else raise
    ``ValueError`` naming it and the allowed values."""
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        return limit
    raise ValueError(f"limit must be None (every checkpoint) or an int >= 1, got {limit!r}")


@runtime_checkable
class Lease(Protocol):
    """Exclusive hold on one thread; the engine keeps it for a whole run."""

    async def release(self) -> None:
        """Give the thread back; calling it twice is harmless."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Where a compiled graph keeps its checkpoints.

    Implementations: ``MemoryCheckpointStore`` (``research_fsm.engine``),
    ``JsonFileCheckpointStore`` and ``PostgresCheckpointStore`` (``research_fsm.stores``).
    The engine validates thread ids before calling any method.

    A store whose history can be damaged (``history`` raises ``CorruptCheckpoint``)
    may also offer ``salvage(thread_id)``, an async iterator of what every intact
    record says of its run (states may be empty): ``delete_thread`` reads it to find
    the child threads of a damaged thread.
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

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        """The thread's checkpoints, newest first: at most ``limit`` of them
        (``None``: all), and with ``before``, only those saved before checkpoint
        ``before`` (paging: pass the last one of the previous page). Reads no more
        of the thread than the page needs, as far as the store can. Raises
        ``CheckpointNotFound`` when ``before`` is not one of the thread's
        checkpoints (a checkpoint ``keep`` pruned counts as gone)."""
        ...

    async def load(self, thread_id: str, checkpoint_id: str) -> Checkpoint | None:
        """The thread's checkpoint ``checkpoint_id`` with its whole state, or ``None``
        when the thread has no such checkpoint (or ``keep`` pruned it)."""
        ...

    async def delete(self, thread_id: str, *, lease: Lease | None = None) -> None:
        """Remove the thread and all its checkpoints.

        Without ``lease``, takes the thread's lease for the delete (``ThreadBusy``
        while a run holds it). With ``lease``, the caller's own lease on the thread
        from this store's ``acquire``, held for the whole delete: the store deletes
        under it and leaves it held (the caller releases it)."""
        ...

    async def secret(self) -> bytes:
        """The key that signs resume tokens for this store."""
        ...


MAX_NESTING = 200
"""Containers nested deeper than this in an untyped field are refused: JSON encoders
(pydantic's stops at about 255) and Python's own recursion cannot follow them."""


@functools.cache
def loose_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` whose annotation lets any value in somewhere."""
    return frozenset(
        name for name, info in model.model_fields.items() if _is_loose(info.annotation)
    )


def _is_loose(annotation: object) -> bool:
    if annotation is Any or annotation is object or annotation in (dict, list):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return False
    if isinstance(annotation, typing.TypeVar):
        return True
    return any(_is_loose(arg) for arg in typing.get_args(annotation) if _is_type(arg))


def _is_type(arg: object) -> bool:
    return isinstance(arg, (type, types.GenericAlias, types.UnionType)) or (
        arg is Any or typing.get_origin(arg) is not None
    )
