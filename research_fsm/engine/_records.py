"""What a checkpoint records besides its state, as typed records: a suspension
(``SuspensionRecord``), a parallel branch of an unfinished fan-out (``BranchRecord``,
with its nodes' updates as ``UpdateEntry``s) and how a checkpoint not made by a
run's step came about (``OriginRecord``).

Each is built by one constructor and never changed in place (a changed branch gets a
new record). They are named tuples because a fan-out builds one per
branch at each of its saves: the cheapest immutable record Python builds. How they
are written as JSON (their short keys) is the stores' codec's business
(``research_fsm.stores``); the engine reads them by attribute only.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

__all__ = [
    "NO_ITEM",
    "BranchRecord",
    "BranchStatus",
    "OriginRecord",
    "SuspensionRecord",
    "UpdateEntry",
    "Where",
]

BranchStatus = Literal["pending", "forked", "suspended", "failed", "done"]
Where = Literal["before", "after"]


class _NoItem:
    """The type of ``NO_ITEM``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_ITEM"


NO_ITEM: Final[object] = _NoItem()
"""The item of a branch that was not started by ``Send`` (``BranchRecord.item``)."""


class SuspensionRecord(NamedTuple):
    """A suspended checkpoint's suspension (``Checkpoint.suspension``)."""

    node: str
    """The node that suspended, or the node a breakpoint paused at."""
    payload: object = None
    """What the node asked (``Suspend.payload``; ``None`` at a breakpoint)."""
    breakpoint: Where | None = None
    """``"before"``/``"after"`` for a pause at a breakpoint of ``node``; else ``None``."""
    child: str | None = None
    """A subgraph node's: the id of the child suspension it passed on."""
    trace: str | None = None
    """The suspended run's trace context (a W3C ``traceparent``), when traced."""
    answers: tuple[object, ...] = ()
    """The answers already given to the node's earlier ``interrupt()`` calls of this
    execution, in order (the node re-runs from the top and gets them back)."""

    def without_child(self) -> SuspensionRecord:
        """This suspension naming no child suspension (a copy's children are new ones)."""
        return self if self.child is None else self._replace(child=None)


class UpdateEntry(NamedTuple):
    """One update a node of a parallel branch made (``BranchRecord.updates``)."""

    node: str
    """The node that made it."""
    values: dict[str, object]
    """The fields it set, by name (a ``Replace``'s value unwrapped)."""
    replaced: tuple[str, ...] = ()
    """The fields it set with ``Replace(...)`` (not through their reducer)."""


class BranchRecord(NamedTuple):
    """One parallel branch of an unfinished fan-out (``Checkpoint.branches``)."""

    position: int
    """Its index in its fan-out (the order its branches merge in)."""
    owner: str
    """The id of the branch whose fan-out it belongs to (``""``: the outermost)."""
    node: str | None
    """The node it runs next (``None``: it reached its join, or forked)."""
    status: BranchStatus
    """``pending``, ``forked``, ``suspended``, ``failed`` or ``done``."""
    join: str
    """The node its fan-out's branches meet at (``END``: none)."""
    updates: tuple[UpdateEntry, ...] = ()
    """The updates its nodes made, in order (its state is the fan-out's plus these)."""
    item: object = NO_ITEM
    """Its ``Send`` item (``NO_ITEM``: not sent)."""
    key: str | None = None
    """The key of its next node execution (graphs with subgraphs: its child thread)."""
    at: str | None = None
    """Suspended: the suspension's id (its resume token names it)."""
    payload: object = None
    """Suspended: what its node asked."""
    child: str | None = None
    """Suspended in a subgraph node: the child suspension it passed on."""
    breakpoint: tuple[Where, str] | None = None
    """Paused at a breakpoint: where and the node (its next node, or after its last)."""
    error: dict[str, str] | None = None
    """Failed: ``{"node", "exc_type", "message"}`` of its failing node."""
    trace: str | None = None
    """Suspended in a traced run: the run's trace context (a ``traceparent``)."""
    answers: tuple[object, ...] = ()
    """Suspended by ``interrupt()``: the answers already given to its node's earlier
    ``interrupt()`` calls of this execution, in order."""

    def traced(self, trace: str) -> BranchRecord:
        """This record with the run's trace context ``trace``."""
        return self._replace(trace=trace)

    def rekeyed(self, at: str) -> BranchRecord:
        """This suspended branch under the new suspension id ``at``, naming no child
        suspension (on a new line of history, or thread, a copy's children are new)."""
        return self._replace(at=at, child=None)


class OriginRecord(NamedTuple):
    """How a checkpoint not made by a run's step came about (``Checkpoint.origin``)."""

    by: Literal["update", "rewind", "fork"]
    """``update`` (``update_state``), ``rewind`` (the first checkpoint of a line
    continued from a past checkpoint) or ``fork`` (a forked thread's first)."""
    as_node: str | None = None
    """``update``: the ``as_node`` given (``None``: none)."""
    thread_id: str | None = None
    """``fork``: the thread it was copied from."""
    checkpoint_id: str | None = None
    """``rewind``/``fork``: the past checkpoint whose state it copies."""
