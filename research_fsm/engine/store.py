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

import base64
import binascii
import functools
import heapq
import json
import os
import re
import threading
import types
import typing
from collections.abc import AsyncIterator, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ._errors import InvalidThreadQuery
from ._records import NO_ITEM, BranchRecord, OriginRecord, SuspensionRecord, UpdateEntry
from ._types import Checkpoint, CheckpointStatus, ThreadInfo, ThreadPage

__all__ = [
    "MAX_NESTING",
    "NO_ITEM",
    "THREAD_STATUSES",
    "BranchRecord",
    "CheckpointStore",
    "Lease",
    "OriginRecord",
    "SuspensionRecord",
    "ThreadListing",
    "ThreadQuery",
    "UpdateEntry",
    "encode_cursor",
    "hint_matches",
    "loose_fields",
    "new_checkpoint_id",
    "seq_hint",
    "standing_node",
    "thread_info",
    "thread_query",
    "validate_keep",
    "validate_limit",
    "validate_thread_id",
]

_THREAD_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_ENGINE_ID = re.compile(r"[0-9a-f]{24}")


class _RandomHex(threading.local):
    """Random hex digits from ``os.urandom``, drawn 4 KiB at a time (a system call per
    id cost more than the rest of a step's save); each thread has its own, and a
    forked child draws afresh (``_forked``): no two ids share their digits."""

    text = ""
    at = 0


_random_hex = _RandomHex()
_RANDOM_BYTES = 4096


def _forked() -> None:
    _random_hex.text, _random_hex.at = "", 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def new_checkpoint_id(seq: int) -> str:
    """A new checkpoint id for position ``seq`` of its thread: 24 lowercase hex
    digits, the low 32 bits of ``seq`` then 64 random bits (so a store can find a
    checkpoint by id without reading the thread: ``seq_hint``)."""
    pool = _random_hex
    at = pool.at
    if at >= len(pool.text):
        pool.text, at = os.urandom(_RANDOM_BYTES).hex(), 0
    pool.at = at + 16
    return f"{seq & 0xFFFFFFFF:08x}{pool.text[at : at + 16]}"


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


THREAD_STATUSES: tuple[CheckpointStatus, ...] = ("completed", "suspended", "failed", "running")
"""The statuses a thread listing filters by: its latest checkpoint's."""

_MAX_PAGE = 1000
_CURSOR_PREFIX = "tc1."
_PREFIX = re.compile(r"[A-Za-z0-9._-]{0,128}")


def standing_node(checkpoint: Checkpoint) -> str | None:
    """The node a thread whose latest checkpoint is ``checkpoint`` stands at
    (``ThreadInfo.node``): the one it runs next, waits on or failed in, else the
    last that ran."""
    node = checkpoint.next
    if node is None and checkpoint.suspension is not None:
        node = checkpoint.suspension.node
    if node is None and checkpoint.error is not None:
        node = checkpoint.error.get("node")
    if node is None:
        node = checkpoint.last_node
    return node if isinstance(node, str) else None


def thread_info(checkpoint: Checkpoint, checkpoints: int) -> ThreadInfo:
    """The listing's view of a thread whose latest checkpoint is ``checkpoint`` and
    whose history holds ``checkpoints`` checkpoints."""
    return ThreadInfo(
        thread_id=checkpoint.thread_id,
        status=checkpoint.status,
        node=standing_node(checkpoint),
        updated_at=checkpoint.created_at,
        checkpoints=checkpoints,
        parent_thread_id=checkpoint.parent_thread_id,
        checkpoint_id=checkpoint.checkpoint_id,
    )


@dataclass(frozen=True, slots=True)
class ThreadQuery:
    """A thread listing's arguments, checked (``thread_query``): what a store's
    ``threads`` filters by and where its page starts."""

    limit: int
    after: tuple[str, str] | None
    """``(updated_at, thread_id)`` of the last thread of the previous page: this page
    holds the threads ordered after it (older, or as old with a smaller id)."""
    prefix: str
    statuses: frozenset[str] | None
    children: bool

    def wants(self, info: ThreadInfo) -> bool:
        """Whether ``info`` passes the filters and comes after the cursor."""
        return (
            info.thread_id.startswith(self.prefix)
            and (self.statuses is None or info.status in self.statuses)
            and (self.children or info.parent_thread_id is None)
            and (self.after is None or (info.updated_at, info.thread_id) < self.after)
        )

    def page(self, candidates: Iterable[ThreadInfo]) -> ThreadPage:
        """The page of the threads in ``candidates`` (any order) this query shows."""
        chosen = heapq.nlargest(
            self.limit + 1,
            (info for info in candidates if self.wants(info)),
            key=lambda info: (info.updated_at, info.thread_id),
        )
        return self.cut(chosen)

    def cut(self, ordered: list[ThreadInfo]) -> ThreadPage:
        """The page of ``ordered`` (newest first, filtered, up to ``limit + 1`` of them:
        one more tells there is a next page)."""
        shown = tuple(ordered[: self.limit])
        more = len(ordered) > self.limit
        return ThreadPage(shown, encode_cursor(shown[-1]) if more and shown else None)


def encode_cursor(last: ThreadInfo) -> str:
    """The cursor of the page after the one ending with ``last``."""
    return _cursor(last.updated_at, last.thread_id)


def _cursor(updated_at: str, thread_id: str) -> str:
    raw = json.dumps([updated_at, thread_id], separators=(",", ":")).encode()
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode_cursor(cursor: object) -> tuple[str, str]:
    allowed = "pass None for the first page, or the next_cursor of the page before"
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR_PREFIX) or len(cursor) > 600:
        raise InvalidThreadQuery("cursor", cursor, allowed)
    body = cursor[len(_CURSOR_PREFIX) :]
    try:
        if not body.isascii():
            raise ValueError("not ascii")
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidThreadQuery("cursor", cursor, allowed) from None
    if (
        not isinstance(data, list)
        or len(data) != 2
        or not all(isinstance(part, str) for part in data)
        or _cursor(data[0], data[1]) != cursor
    ):
        raise InvalidThreadQuery("cursor", cursor, allowed)
    return data[0], data[1]


def thread_query(
    *,
    limit: object = 50,
    cursor: object = None,
    prefix: object = "",
    status: object = None,
    children: object = True,
) -> ThreadQuery:
    """A store's ``threads`` arguments checked: ``InvalidThreadQuery`` names the one
    at fault and the allowed values."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_PAGE:
        raise InvalidThreadQuery("limit", limit, f"an int from 1 to {_MAX_PAGE}")
    if prefix is None:
        prefix = ""
    if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
        raise InvalidThreadQuery(
            "prefix", prefix, "a str of up to 128 characters from A-Z a-z 0-9 . _ -"
        )
    statuses: frozenset[str] | None = None
    if status is not None:
        given = [status] if isinstance(status, str) else status
        if not isinstance(given, Iterable):
            raise InvalidThreadQuery("status", status, _allowed_statuses())
        statuses = frozenset()
        for one in given:
            if one not in THREAD_STATUSES:
                raise InvalidThreadQuery("status", one, _allowed_statuses())
            statuses |= {one}
        if not statuses:
            raise InvalidThreadQuery("status", status, _allowed_statuses())
    if not isinstance(children, bool):
        raise InvalidThreadQuery("children", children, "True or False")
    after = None if cursor is None else _decode_cursor(cursor)
    return ThreadQuery(limit, after, prefix, statuses, children)


def _allowed_statuses() -> str:
    return "one of " + ", ".join(repr(s) for s in THREAD_STATUSES) + " (or a list of them)"


@runtime_checkable
class ThreadListing(Protocol):
    """A store that lists its threads (every store of ``research_fsm`` does): what
    ``CompiledGraph.threads`` and the thread inspector call. Kept apart from
    ``CheckpointStore`` so a store of your own without it still runs graphs."""

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str = "",
        status: str | Collection[str] | None = None,
        children: bool = True,
    ) -> ThreadPage:
        """A page of the store's threads, most recently updated first, each as its
        latest checkpoint tells (``ThreadInfo``), without loading whole threads.

        ``limit``: at most that many (1-1000); ``cursor``: the previous page's
        ``next_cursor`` (opaque; a thread updated meanwhile moves to the top and is
        not shown again); ``prefix``: only thread ids starting with it; ``status``:
        only threads whose latest status is one of these (``THREAD_STATUSES``);
        ``children``: ``False`` leaves out subgraph child threads. A bad argument
        raises ``InvalidThreadQuery`` naming the allowed values (``thread_query``
        checks them all; ``ThreadQuery.page`` cuts a page from candidates)."""
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
