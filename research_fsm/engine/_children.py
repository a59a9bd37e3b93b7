"""A checkpoint's child threads, as its snapshot lists them (``StateSnapshot.children``,
``Suspension.child_thread_id``).

A subgraph node runs its child graph on a thread whose id the parent derives
(``_family.child_thread``) from where the node execution was saved: the checkpoint's
step for the node it runs next, waits on or paused at, or a parallel branch's key.
This module reads those places back from one checkpoint; nothing is recorded for it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ._family import child_thread
from ._tokens import in_order
from ._types import Checkpoint

__all__ = ["ChildAt", "children_at"]


@dataclass(frozen=True, slots=True)
class ChildAt:
    """One subgraph node execution a checkpoint names, and its child thread."""

    node: str
    """The subgraph node."""
    thread_id: str
    """Its child thread."""
    branch: str | None
    """The parallel branch that runs it (``None``: not in a fan-out)."""
    passed_on: bool
    """Whether the checkpoint's suspension (or the branch's) is the child's, passed on."""


def children_at(checkpoint: Checkpoint, nodes: Collection[str]) -> list[ChildAt]:
    """The subgraph node executions (of the nodes ``nodes``) that ``checkpoint`` runs
    next, waits on or paused at, in order: the top-level one, then each branch's."""
    found: list[ChildAt] = []
    thread, run_id, step = checkpoint.thread_id, checkpoint.run_id, checkpoint.step
    saved = checkpoint.suspension
    if saved is not None and checkpoint.status == "suspended":
        node = saved.node
        # Paused after the node: it ran at the step before the pause's.
        at = step - 1 if saved.breakpoint == "after" else step
        if node in nodes:
            tid = child_thread(thread, node, run_id, f"s{at}")
            # A subgraph node suspends only with its child's question (not a pause).
            found.append(ChildAt(node, tid, None, saved.breakpoint is None))
    elif not checkpoint.branches and checkpoint.next in nodes and checkpoint.next is not None:
        tid = child_thread(thread, checkpoint.next, run_id, f"s{step}")
        found.append(ChildAt(checkpoint.next, tid, None, False))
    for branch_id, record in in_order(checkpoint.branches or {}):
        running, key = record.node, record.key
        if running is not None and running in nodes and key is not None:
            tid = child_thread(thread, running, run_id, f"k{key}")
            passed = record.status == "suspended" and record.breakpoint is None
            found.append(ChildAt(running, tid, branch_id, passed))
    return found
