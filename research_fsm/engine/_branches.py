"""Parallel branches as data: the in-memory branches and fan-outs of a run, their
saved records, and the merge at a join. The parallel runner (``_parallel``) runs
them; ``_restore`` finds the branch a resume token answers.

The saved form of an unfinished fan-out is ``Checkpoint.branches``: one JSON-able
record per branch, keyed by branch id (``node[index]``, nested ``outer[0]/inner[1]``):

``{"i": index, "p": owner branch id ("" at the top), "node": next node | None,
"status": ..., "join": node | END, "updates": [{"n": node, "u": {field: value},
"r": [fields replaced]}], "item": ..., "at": suspension id, "payload": ...,
"error": {...}, "k": key of the next node execution (graphs with subgraphs), "child":
the child suspension a suspended subgraph node passed on}``

``Checkpoint.state`` stays the state the outermost fan-out started from; a
branch's own view is that state plus its updates, replayed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel

from ._errors import InvalidUpdate
from ._plan import NO_ITEM
from ._reducers import Replace, append, replace
from ._state import StateSchema
from ._steps import NO_VALUE
from ._types import BranchStatus, ErrorInfo

__all__ = [
    "Branch",
    "BranchFailure",
    "Continue",
    "Frame",
    "Limiter",
    "entry",
    "find_suspended",
    "first_failure_or_all",
    "merge",
    "record",
    "replay",
    "walk",
]


@dataclass(slots=True, eq=False)
class Branch:
    id: str
    parent: str
    index: int
    node: str | None
    join: str
    state: BaseModel
    item: Any = NO_ITEM
    status: BranchStatus = "pending"
    updates: list[dict[str, Any]] = field(default_factory=list)
    frame: Frame | None = None
    at: str | None = None
    payload: Any = None
    error: dict[str, str] | None = None
    resume_value: Any = NO_VALUE
    resumed_from: str | None = None
    pending_error: ErrorInfo | None = None
    key: str | None = None  # the next node execution's key, in graphs with subgraphs
    child: str | None = None  # a suspended subgraph node: the child suspension passed on
    breakpoint: tuple[str, str] | None = None  # paused: ("before"/"after", the node)
    past_breakpoint: bool = False  # resumed from a pause: the next node runs


@dataclass(slots=True, eq=False)
class Frame:
    join: str
    base: BaseModel
    branches: list[Branch]


class Continue(NamedTuple):
    """The fan-out ended: the run goes on at ``node`` with ``state`` (and the
    ``on_error`` node sees ``error``)."""

    node: str
    state: BaseModel
    error: ErrorInfo | None = None


class BranchFailure(Exception):
    """A branch node failed for good; ``on_error`` says where the run goes."""

    def __init__(
        self,
        branch: Branch,
        node: str,
        step: int,
        cause: BaseException,
        on_error: str | None,
        *,
        routing: bool = False,
    ) -> None:
        self.branch = branch
        self.node = node
        self.step = step
        self.cause = cause
        self.on_error = on_error
        self.routing = routing
        """The router failed (not the node): its error is raised as it is."""


class Limiter:
    """At most ``size`` holders at once; waiters are served in arrival order."""

    def __init__(self, size: int | None) -> None:
        self._free = size
        self._waiters: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._free is None:
            yield
            return
        if self._free > 0 and not self._waiters:
            self._free -= 1
        else:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # granted, then cancelled: pass it on
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        assert self._free is not None
        self._free += 1


def first_failure_or_all(tasks: list[asyncio.Task[None]]) -> asyncio.Future[None]:
    """A future done once every task is, or one of them failed (``asyncio.wait``
    with ``FIRST_EXCEPTION``, for the cost of one callback per task)."""
    waiter: asyncio.Future[None] = tasks[0].get_loop().create_future()
    left = len(tasks)

    def on_done(task: asyncio.Task[None]) -> None:
        nonlocal left
        left -= 1
        failed = not task.cancelled() and task.exception() is not None
        if (failed or not left) and not waiter.done():
            waiter.set_result(None)

    for task in tasks:
        task.add_done_callback(on_done)
    return waiter


def find_suspended(records: dict[str, dict[str, Any]], suspension_id: str) -> str | None:
    """The id of the branch suspended with ``suspension_id``, if any."""
    for branch_id, record in records.items():
        if record.get("status") == "suspended" and record.get("at") == suspension_id:
            return branch_id
    return None


def entry(node: str, update: dict[str, Any]) -> dict[str, Any]:
    """A node's update as a branch record keeps it (``Replace`` marked by name)."""
    values: dict[str, Any] = {}
    replaced: list[str] = []
    for name, value in update.items():
        if isinstance(value, Replace):
            values[name] = value.value
            replaced.append(name)
        else:
            values[name] = value
    saved: dict[str, Any] = {"n": node, "u": values}
    if replaced:
        saved["r"] = replaced
    return saved


def changes(saved: dict[str, Any]) -> dict[str, Any]:
    """The update a record entry holds, ``Replace`` restored."""
    values: dict[str, Any] = saved["u"]
    replaced = saved.get("r")
    if not replaced:
        return values
    return {k: Replace(v) if k in replaced else v for k, v in values.items()}


def replay(
    schema: StateSchema, state: BaseModel, entries: list[dict[str, Any]], origin: str
) -> BaseModel:
    """``state`` with a branch record's ``entries`` applied in order."""
    for item in entries:
        state = schema.apply(state, changes(item), origin)
    return state


def merge(
    schema: StateSchema,
    branches: list[Branch],
    base: BaseModel,
    track: dict[str, int | None] | None,
    fresh: set[int] | frozenset[int] = frozenset(),
) -> tuple[BaseModel, list[dict[str, Any]]]:
    """Apply the branches' updates to ``base`` in declared order; two branches
    setting one ``replace`` field is an ``InvalidUpdate`` naming both. (Each update
    was validated when its node returned it: errors here name the branch. Entries
    whose ``id`` is in ``fresh`` hold values validated in this process.)"""
    _check_writers(schema, branches)
    pending = _Pending(schema, track)
    entries: list[dict[str, Any]] = []
    state = base
    for branch in branches:
        origin = f"branch `{branch.id}`"
        for saved in branch.updates:
            state = pending.add(state, saved, origin, id(saved) in fresh)
            entries.append(saved)
    return pending.flush(state), entries


def _check_writers(schema: StateSchema, branches: list[Branch]) -> None:
    """A field two branches write is an ``InvalidUpdate`` naming the field and both
    branches when either overwrites it (a ``replace`` field, or ``Replace(...)``, which
    is also what an in-place change other than appending becomes): the merge would
    keep what the branch declared last wrote and silently drop the other's write."""
    first: dict[str, tuple[str, str]] = {}  # field -> (branch, node) that wrote it first
    other: dict[str, tuple[str, str]] = {}  # field -> a writer in another branch
    replacer: dict[str, tuple[str, str]] = {}  # field -> the first that overwrote it
    for branch in branches:
        for saved in branch.updates:
            replaced = saved.get("r") or ()
            for name in saved["u"]:
                spec = schema.fields.get(name)
                if spec is None:
                    continue
                writer = (branch.id, saved["n"])
                if first.setdefault(name, writer)[0] != branch.id:
                    other.setdefault(name, writer)
                if spec.reducer is replace or name in replaced:
                    replacer.setdefault(name, writer)
    for name, overwriting in replacer.items():
        if name not in other:
            continue
        partner = other[name] if overwriting[0] == first[name][0] else first[name]
        one, two = sorted((overwriting, partner), key=lambda w: _position(branches, w[0]))
        if schema.fields[name].reducer is replace:
            how = (
                ", whose reducer is `replace`: give the field a reducer (e.g. `append`) "
                "or let one branch set it"
            )
        else:
            how = (
                f", and `{overwriting[0]}` replaces it (`Replace(...)`, or an in-place change "
                "that is not an append): the other branch's write would be lost; let one "
                "branch write it"
            )
        raise InvalidUpdate(
            f"branches `{one[0]}` (node `{one[1]}`) and `{two[0]}` (node `{two[1]}`) both "
            f"set field `{name}`{how}"
        )


def _position(branches: list[Branch], branch_id: str) -> int:
    return next(i for i, branch in enumerate(branches) if branch.id == branch_id)


class _Pending:
    """Updates of ``replace`` and ``append`` fields gathered into one (the last value,
    the items in order), so a join over many branches builds the state once;
    any other update is applied on its own, in order."""

    def __init__(self, schema: StateSchema, track: dict[str, int | None] | None) -> None:
        self.schema = schema
        self.track = track
        self.values: dict[str, Any] = {}
        self.origin = ""
        self.validated = False

    def add(
        self, state: BaseModel, saved: dict[str, Any], origin: str, validated: bool
    ) -> BaseModel:
        fields = self.schema.fields
        simple = not saved.get("r") and all(
            name in fields and fields[name].reducer in (replace, append) for name in saved["u"]
        )
        # Values not yet validated are validated when flushed: keep their origin exact.
        if not simple or validated != self.validated or (not validated and self.origin != origin):
            state = self.flush(state)
            self.origin, self.validated = origin, validated
        if not simple:
            return self.schema.apply(state, changes(saved), origin, self.track, validated)
        for name, value in saved["u"].items():
            if fields[name].reducer is append:
                items = list(value) if isinstance(value, (list, tuple)) else [value]
                self.values[name] = [*self.values.get(name, ()), *items]
            else:
                self.values[name] = value
        return state

    def flush(self, state: BaseModel) -> BaseModel:
        if self.values:
            state = self.schema.apply(state, self.values, self.origin, self.track, self.validated)
            self.values = {}
        return state


def record(branch: Branch) -> dict[str, Any]:
    """The branch's saved record (a new dict: records are never changed in place)."""
    saved: dict[str, Any] = {
        "i": branch.index,
        "p": branch.parent,
        "node": branch.node,
        "status": branch.status,
        "join": branch.join,
        "updates": list(branch.updates),
    }
    if branch.item is not NO_ITEM:
        saved["item"] = branch.item
    if branch.key is not None:
        saved["k"] = branch.key
    if branch.status == "suspended":
        saved["at"], saved["payload"] = branch.at, branch.payload
        if branch.child is not None:
            saved["child"] = branch.child
        if branch.breakpoint is not None:
            saved["breakpoint"] = list(branch.breakpoint)
    elif branch.error is not None:
        saved["error"] = branch.error
    return saved


def walk(frame: Frame) -> Iterator[Branch]:
    """The frame's branches, each followed by the branches of its own fan-out."""
    for branch in frame.branches:
        yield branch
        if branch.frame is not None:
            yield from walk(branch.frame)
