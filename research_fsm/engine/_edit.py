"""A thread's history edited by hand: ``update_state``, a run continued from a past
checkpoint (a new line of history), and ``fork`` onto a new thread.

Each writes one checkpoint with ``save`` (``Checkpoint.origin`` says which kind), with
the lease of the thread it writes held by the caller (``CompiledGraph``), so it never
races a run; a store's save is all or nothing, so a crash leaves the thread as it
was. The store's log stays one line of checkpoints (each saved after the thread's
latest): a new line of history is the copy of the past checkpoint it continues from,
saved after the latest, and the snapshots show that copy's parent as the past
checkpoint. Nothing here runs unless one of these is called.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from pydantic import BaseModel

from ._children import children_at
from ._errors import (
    CheckpointNotFound,
    IncompatibleCheckpoint,
    InvalidUpdate,
    ThreadExists,
    ThreadNotFound,
    UpdateRefused,
)
from ._parallel import ParallelRun
from ._plan import Fork, Plan
from ._records import BranchRecord, OriginRecord, SuspensionRecord
from ._restore import restore
from ._run import Run
from ._steps import now, route
from ._tokens import in_order
from ._types import END, Checkpoint, CheckpointStatus
from .store import new_checkpoint_id

__all__ = ["check_as_node", "check_checkpoint_id", "fork", "rewind", "update"]


def check_checkpoint_id(value: object, name: str = "checkpoint_id") -> str | None:
    """``value`` if it is ``None`` or a non-empty str, else ``ValueError`` naming it."""
    if value is None or (isinstance(value, str) and value):
        return value
    raise ValueError(
        f"{name} must be a checkpoint id (a non-empty str from a snapshot or result) or "
        f"None, got {value!r}"
    )


def check_as_node(plan: Plan, as_node: object) -> str | None:
    """``as_node`` if it is ``None``, END or a node of the graph, else ``InvalidUpdate``
    naming it and the nodes."""
    if as_node is None or as_node == END or (isinstance(as_node, str) and as_node in plan.nodes):
        return as_node
    raise InvalidUpdate(
        f"update_state: as_node {as_node!r} is not a node of this graph; nodes are: "
        f"{', '.join(plan.nodes)} (or END, to finish the thread)"
    )


async def update(
    plan: Plan,
    thread_id: str,
    values: dict[str, Any] | BaseModel | None,
    as_node: str | None,
) -> Checkpoint | None:
    """Save the thread's latest state with ``values`` merged through the reducers, as
    if ``as_node`` had just run (routing from it) or, without ``as_node``, leaving
    where the run goes unchanged. Returns the checkpoint saved (``None``: ``as_node``
    routes to a fan-out, whose start was saved; ``load_latest`` has it)."""
    store = plan.store
    schema = plan.schema
    latest = await store.load_latest(thread_id)
    if latest is None:
        raise ThreadNotFound(thread_id, "; start it with run(input, thread_id=...) first")
    state = _restored(plan, latest)
    if latest.branches and as_node != END:
        ids = ", ".join(branch_id for branch_id, _ in in_order(latest.branches))
        raise UpdateRefused(
            thread_id,
            f"parallel branches are in flight ({ids}); a fan-out's state cannot be "
            "changed until its branches meet: resume its suspended branches, or "
            "run(None, ...) to finish it, then update (or pass as_node=END to finish "
            "the thread without them)",
        )
    at_pause = latest.status == "suspended" and _at_breakpoint(latest)
    if latest.status == "suspended" and not at_pause and as_node != END:
        node = None if latest.suspension is None else latest.suspension.node
        if as_node != node:
            raise UpdateRefused(
                thread_id,
                f"it is suspended at node `{node}`: answer it with resume(token, value), "
                f"or pass as_node={node!r} to answer it with these values instead (its "
                "resume tokens then become stale), or as_node=END to finish the thread",
            )
    origin = "update_state" if as_node is None else f"update_state(as_node={as_node!r})"
    if values is not None and not isinstance(values, (dict, BaseModel)):
        raise InvalidUpdate(
            f"{origin}: values must be a dict of field changes or a partial "
            f"`{schema.model.__name__}`, got {type(values).__name__}"
        )
    changes: dict[str, int | None] | None = {} if plan.tracks else None
    state = schema.apply(state, schema.as_changes(values, origin), origin, changes)
    written = OriginRecord("update", as_node)
    status: CheckpointStatus = "running" if latest.status == "failed" else latest.status
    next_node, step = latest.next, latest.step
    # A breakpoint's pause stays a pause: the edit is what its next node sees; the
    # new checkpoint's token replaces the old one (get_state has it).
    suspension = latest.suspension if at_pause else None
    if as_node == END:  # finished by hand: nothing runs, no suspension is left
        status, next_node, suspension = "completed", None, None
    elif as_node is not None:
        target = await route(plan, as_node, state)
        step += 1
        if isinstance(target, Fork):
            at = Run(
                plan,
                thread_id,
                latest.run_id,
                step,
                latest.seq,
                latest.checkpoint_id,
                parent_thread=latest.parent_thread_id,
            )
            fan = ParallelRun(at)
            await fan.begin(target, state, changes, as_node, origin=written)
            return None
        status = "completed" if target == END else "running"
        next_node = None if target == END else target
        if at_pause and target != END:  # still paused: now before where as_node leads
            status = "suspended"
            suspension = SuspensionRecord(target, None, "before")
    checkpoint = Checkpoint(
        thread_id=thread_id,
        checkpoint_id=new_checkpoint_id(latest.seq + 1),
        parent_id=latest.checkpoint_id,
        seq=latest.seq + 1,
        run_id=latest.run_id,
        step=step,
        status=status,
        next=next_node,
        state=state,
        created_at=now(),
        last_node=None if as_node == END else as_node,
        changes=changes,
        origin=written,
        suspension=suspension,
        parent_thread_id=latest.parent_thread_id,
    )
    await store.save(checkpoint)
    return checkpoint


def _at_breakpoint(checkpoint: Checkpoint) -> bool:
    """Whether a suspended checkpoint is a pause at a breakpoint (not a node's
    ``Suspend``, which only ``as_node`` or ``resume`` may answer)."""
    suspension = checkpoint.suspension
    return suspension is not None and suspension.breakpoint is not None


async def rewind(plan: Plan, thread_id: str, checkpoint_id: str) -> Checkpoint | None:
    """Start a new line of history from the thread's past checkpoint ``checkpoint_id``:
    save its copy after the latest (the abandoned line's resume tokens go stale).
    Returns the copy (``None`` when ``checkpoint_id`` is the latest: nothing to do)."""
    store = plan.store
    latest = await store.load_latest(thread_id)
    if latest is None:
        raise ThreadNotFound(thread_id)
    if latest.checkpoint_id == checkpoint_id:
        return None
    past = await store.load(thread_id, checkpoint_id)
    if past is None:
        raise CheckpointNotFound(thread_id, checkpoint_id)
    state = _restored(plan, past)
    branches = _rekeyed(past.branches)
    copy = _copy(
        past,
        # A run of its own: the subgraph nodes it runs derive new child threads from
        # it, so the new line never takes (nor changes) the abandoned line's children.
        run_id=secrets.token_hex(8),
        thread_id=thread_id,
        seq=latest.seq + 1,
        parent_id=latest.checkpoint_id,
        state=state,
        branches=branches,
        origin=OriginRecord("rewind", checkpoint_id=checkpoint_id),
    )
    if plan.tracks:  # the store may save just what differs from the latest
        before = restore(plan, latest, nodes=False)
        if not isinstance(before, IncompatibleCheckpoint):
            copy.changes = {
                name: None
                for name in plan.schema.fields
                if getattr(before, name) != getattr(state, name)
            }
            old = latest.branches or {}
            new = branches or {}
            copy.changed_branches = tuple(k for k in {**old, **new} if old.get(k) != new.get(k))
    await store.save(copy)
    await _carry_children(plan, past, copy)
    return copy


async def fork(
    plan: Plan, thread_id: str, checkpoint_id: str | None, new_thread_id: str
) -> Checkpoint:
    """Copy the thread's checkpoint ``checkpoint_id`` (``None``: its latest) onto the
    new thread ``new_thread_id`` (its lease held by the caller) as its first
    checkpoint: state, where the run goes, and a fan-out's branch records whole
    (finished branches' results, suspended ones with their payloads)."""
    store = plan.store
    if thread_id == new_thread_id or await store.load_latest(new_thread_id) is not None:
        raise ThreadExists(new_thread_id)
    if checkpoint_id is None:
        past = await store.load_latest(thread_id)
        if past is None:
            raise ThreadNotFound(thread_id)
    else:
        past = await store.load(thread_id, checkpoint_id)
        if past is None:
            raise CheckpointNotFound(thread_id, checkpoint_id)
    copy = _copy(
        past,
        run_id=past.run_id,  # the children derive from the new thread id: new ones
        thread_id=new_thread_id,
        seq=1,
        parent_id=None,
        state=_restored(plan, past),
        # New suspension ids: a token issued on any other line (a thread deleted and
        # forked back onto its id) never answers this one.
        branches=_rekeyed(past.branches),
        origin=OriginRecord("fork", thread_id=thread_id, checkpoint_id=past.checkpoint_id),
    )
    await store.save(copy)
    await _carry_children(plan, past, copy)
    return copy


async def _carry_children(plan: Plan, past: Checkpoint, copy: Checkpoint) -> None:
    """``copy`` (of ``past``, on a new line or thread) waits on subgraph children of its
    own: fork each child suspension ``past`` passed on onto the copy's child thread, so
    an answer to the copy's token answers that question there, not the question asked
    again from the child's start. Saved after the copy: a crash in between leaves the
    child to run again from its start, as it did before children were carried."""
    graphs = plan.children
    if not graphs:
        return
    for was, new in zip(children_at(past, graphs), children_at(copy, graphs), strict=False):
        if not was.passed_on:
            continue
        saved = past.suspension if was.branch is None else (past.branches or {}).get(was.branch)
        child = None if saved is None else saved.child
        if child is None:
            continue
        try:
            await graphs[was.node].fork(was.thread_id, child, new.thread_id)
        except (CheckpointNotFound, ThreadExists):  # pruned by `keep`, or carried already
            continue


def _restored(plan: Plan, checkpoint: Checkpoint) -> BaseModel:
    state = restore(plan, checkpoint)
    if isinstance(state, IncompatibleCheckpoint):
        raise state
    return state


def _copy(
    past: Checkpoint,
    *,
    run_id: str,
    thread_id: str,
    seq: int,
    parent_id: str | None,
    state: BaseModel,
    branches: dict[str, BranchRecord] | None,
    origin: OriginRecord,
) -> Checkpoint:
    """``past`` saved anew at ``seq`` of ``thread_id``: where its run goes, unchanged
    (a suspension passed on from a child names no child: the copy's are new ones)."""
    return Checkpoint(
        thread_id=thread_id,
        checkpoint_id=new_checkpoint_id(seq),
        parent_id=parent_id,
        seq=seq,
        run_id=run_id,
        step=past.step,
        status=past.status,
        next=past.next,
        state=state,
        created_at=now(),
        suspension=None if past.suspension is None else past.suspension.without_child(),
        error=past.error,
        last_node=past.last_node,
        branches=branches,
        origin=origin,
        # A new line of the same thread keeps its parent; a fork is a thread of its own.
        parent_thread_id=past.parent_thread_id if thread_id == past.thread_id else None,
    )


def _rekeyed(branches: dict[str, BranchRecord] | None) -> dict[str, BranchRecord] | None:
    """``branches`` with a new suspension id for each suspended one: the tokens
    issued for them on another line answer nothing on the new one (nor does the
    child suspension a branch passed on: the new line's children are new ones)."""
    if not branches:
        return branches
    return {
        branch_id: record.rekeyed(os.urandom(12).hex()) if record.status == "suspended" else record
        for branch_id, record in branches.items()
    }
