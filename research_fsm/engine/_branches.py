"""Parallel branches as data: the in-memory branches and fan-outs of a run, their
saved records, and the merge at a join. The parallel runner (``_parallel``) runs
them; ``_restore`` finds the branch a resume token answers.

The saved form of an unfinished fan-out is ``Checkpoint.branches``: a
``BranchRecord`` per branch (``record``), keyed by branch id (``node[index]``, nested
``outer[0]/inner[1]``), its nodes' updates as ``UpdateEntry``s (``entry``).

``Checkpoint.state`` stays the state the outermost fan-out started from; a
branch's own view is that state plus its updates, replayed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel

from ._errors import InvalidUpdate
from ._plan import NO_ITEM
from ._records import BranchRecord, UpdateEntry, Where
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


# A record's class with every field in order: ``tuple.__new__`` builds it as its
# constructor would, without the frame of the constructor Python generates for it.
_new_record: Callable[[type[BranchRecord], tuple[object, ...]], BranchRecord] = tuple.__new__
_new_entry: Callable[[type[UpdateEntry], tuple[object, ...]], UpdateEntry] = tuple.__new__


@dataclass(slots=True, eq=False)
class Branch:
    id: str
    parent: str
    index: int
    node: str | None
    join: str
    state: BaseModel
    item: object = NO_ITEM
    status: BranchStatus = "pending"
    updates: list[UpdateEntry] = field(default_factory=list)
    frame: Frame | None = None
    at: str | None = None
    payload: object = None
    error: dict[str, str] | None = None
    resume_value: object = NO_VALUE
    resumed_from: str | None = None
    pending_error: ErrorInfo | None = None
    key: str | None = None  # the next node execution's key, in graphs with subgraphs
    child: str | None = None  # a suspended subgraph node: the child suspension passed on
    breakpoint: tuple[Where, str] | None = None  # paused: ("before"/"after", the node)
    past_breakpoint: bool = False  # resumed from a pause: the next node runs
    answers: tuple[object, ...] = ()  # suspended by interrupt(): the answers given before


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


def find_suspended(records: dict[str, BranchRecord], suspension_id: str) -> str | None:
    """The id of the branch suspended with ``suspension_id``, if any."""
    for branch_id, record in records.items():
        if record.status == "suspended" and record.at == suspension_id:
            return branch_id
    return None


def entry(node: str, update: dict[str, object]) -> UpdateEntry:
    """A node's update as a branch record keeps it (``Replace`` unwrapped, its field named)."""
    replaced: list[str] = []
    for name, value in update.items():
        if isinstance(value, Replace):
            replaced.append(name)
    if not replaced:  # (``UpdateEntry(node, dict(update))``, without its frame: see ``record``)
        return _new_entry(UpdateEntry, (node, dict(update), ()))
    values = {k: v.value if isinstance(v, Replace) else v for k, v in update.items()}
    return UpdateEntry(node, values, tuple(replaced))


def changes(saved: UpdateEntry) -> dict[str, object]:
    """The update a record entry holds, ``Replace`` restored."""
    replaced = saved.replaced
    if not replaced:
        return saved.values
    return {k: Replace(v) if k in replaced else v for k, v in saved.values.items()}


def replay(
    schema: StateSchema, state: BaseModel, entries: Iterable[UpdateEntry], origin: str
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
) -> tuple[BaseModel, list[UpdateEntry]]:
    """Apply the branches' updates to ``base`` in declared order; two branches
    setting one ``replace`` field is an ``InvalidUpdate`` naming both. (Each update
    was validated when its node returned it: errors here name the branch. Entries
    whose ``id`` is in ``fresh`` hold values validated in this process.)"""
    _check_writers(schema, branches)
    pending = _Pending(schema, track)
    entries: list[UpdateEntry] = []
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
            replaced = saved.replaced
            for name in saved.values:
                spec = schema.fields.get(name)
                if spec is None:
                    continue
                writer = (branch.id, saved.node)
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
        self.values: dict[str, Any] = {}  # a field's value, or the items it appends
        self.origin = ""
        self.validated = False

    def add(self, state: BaseModel, saved: UpdateEntry, origin: str, validated: bool) -> BaseModel:
        fields = self.schema.fields
        values = saved.values
        simple = not saved.replaced and all(
            name in fields and fields[name].reducer in (replace, append) for name in values
        )
        # Values not yet validated are validated when flushed: keep their origin exact.
        if not simple or validated != self.validated or (not validated and self.origin != origin):
            state = self.flush(state)
            self.origin, self.validated = origin, validated
        if not simple:
            return self.schema.apply(state, changes(saved), origin, self.track, validated)
        for name, value in values.items():
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


def record(branch: Branch) -> BranchRecord:
    """The branch's saved record (a new one: records are never changed in place);
    what it was asked keeps only while suspended, its error only while not.

    Built by ``tuple.__new__`` with every field in order, as ``BranchRecord(...)``
    would, without its generated ``__new__``'s frame: a fan-out builds one at each
    step of each branch."""
    if branch.status == "suspended":
        fields: tuple[object, ...] = (
            branch.index,
            branch.parent,
            branch.node,
            "suspended",
            branch.join,
            tuple(branch.updates),
            branch.item,
            branch.key,
            branch.at,
            branch.payload,
            branch.child,
            branch.breakpoint,
            None,
            None,
            branch.answers,
        )
    else:
        fields = (
            branch.index,
            branch.parent,
            branch.node,
            branch.status,
            branch.join,
            tuple(branch.updates),
            branch.item,
            branch.key,
            None,
            None,
            None,
            None,
            branch.error,
            None,
            (),
        )
    return _new_record(BranchRecord, fields)


def walk(frame: Frame) -> Iterator[Branch]:
    """The frame's branches, each followed by the branches of its own fan-out."""
    for branch in frame.branches:
        yield branch
        if branch.frame is not None:
            yield from walk(branch.frame)
