"""What a checkpoint store implements, and what store authors share with the engine.

The ``CheckpointStore`` and ``Lease`` protocols; the checks every store applies to
its arguments (``validate_thread_id``, ``validate_keep``); and the two facts about a
state's JSON that the engine's state checks and a store's codec must agree on: which
fields are untyped (``loose_fields``) and how deep containers may nest
(``MAX_NESTING``). The stores in ``research_fsm.stores`` are built on this module;
so is a store of your own.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ._types import Checkpoint

__all__ = [
    "MAX_NESTING",
    "CheckpointStore",
    "Lease",
    "loose_fields",
    "validate_keep",
    "validate_thread_id",
]

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

    Implementations: ``MemoryCheckpointStore`` (``research_fsm.engine``),
    ``JsonFileCheckpointStore`` and ``PostgresCheckpointStore`` (``research_fsm.stores``).
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


MAX_NESTING = 200
"""Containers nested deeper than this in an untyped field are refused: JSON encoders
(pydantic's stops at about 255) and Python's own recursion cannot follow them."""


@functools.cache
def loose_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` whose annotation lets any value in somewhere."""
    return frozenset(
        name for name, info in model.model_fields.items() if _is_loose(info.annotation)
    )


def _is_loose(annotation: Any) -> bool:
    if annotation is Any or annotation is object or annotation in (dict, list):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return False
    if isinstance(annotation, typing.TypeVar):
        return True
    return any(_is_loose(arg) for arg in typing.get_args(annotation) if _is_type(arg))


def _is_type(arg: Any) -> bool:
    return isinstance(arg, (type, types.GenericAlias, types.UnionType)) or (
        arg is Any or typing.get_origin(arg) is not None
    )
