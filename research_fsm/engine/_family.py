"""A parent thread's child threads: the ids its subgraph nodes run their children on.

``child_thread`` derives a child's thread id from the parent thread, the node, the run
and the position of that node execution in the run. Nothing records the children: the
parent's own checkpoints already say where each subgraph node ran, so
``child_threads`` reads them back from the parent's history. Each node execution is
saved before it runs (that is how a crash goes on inside the same child), as

* the checkpoint whose ``next`` (or whose suspension's node) is a subgraph node: the
  child at position ``s<step>`` of that checkpoint's run;
* a parallel branch's record whose ``node`` is a subgraph node: the child at
  ``k<key>`` (the branch's ``key``, a new one for each of its node executions).

So the step loop writes nothing for this, and graphs without subgraphs read nothing.
Only ``delete_thread`` calls it (and only on a graph with subgraphs); a history a
damaged line cuts short is read through the store's ``salvage`` where it has one; a store's
``keep`` that pruned a checkpoint takes with it the knowledge of a child it alone
named (the child of a node execution whose every checkpoint was pruned).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection

from ._errors import CorruptCheckpoint
from ._types import Checkpoint
from .store import CheckpointStore

__all__ = ["child_thread", "child_threads"]

_NODE_PART = re.compile(r"[A-Za-z0-9_-]+")


def child_thread(parent: str, node: str, run_id: str, position: str) -> str:
    """The child thread of subgraph node ``node`` at ``position`` of the parent's run.

    ``<parent>.<node>.<16 hex>``, the hex a digest of the parent thread, node, run and
    position (the step, or in a parallel branch the key saved with the branch); when
    that is no valid thread id (a node name with other characters, or longer than
    128), ``sub.<32 hex>``."""
    digest = hashlib.sha256(f"{parent}\n{node}\n{run_id}\n{position}".encode()).hexdigest()
    derived = f"{parent}.{node}.{digest[:16]}"
    if len(derived) <= 128 and _NODE_PART.fullmatch(node):
        return derived
    return f"sub.{digest[:32]}"


def _named(checkpoint: Checkpoint, nodes: Collection[str]) -> set[tuple[str, str]]:
    """The (node, child thread) pairs of the subgraph node executions ``checkpoint``
    saved before they ran."""
    found: set[tuple[str, str]] = set()
    thread, run_id = checkpoint.thread_id, checkpoint.run_id
    suspension = checkpoint.suspension
    here = {checkpoint.next, None if suspension is None else suspension.node}
    for node in here:
        if node is not None and node in nodes:
            found.add((node, child_thread(thread, node, run_id, f"s{checkpoint.step}")))
    for record in (checkpoint.branches or {}).values():
        node, key = record.node, record.key
        if node is not None and node in nodes and key is not None:
            found.add((node, child_thread(thread, node, run_id, f"k{key}")))
    return found


async def child_threads(
    store: CheckpointStore, thread_id: str, nodes: Collection[str]
) -> list[tuple[str, str]]:
    """The (subgraph node, child thread id) pairs of every child thread the parent
    thread ``thread_id`` may have started, read from its history (not every id need
    exist: a node execution saved but never run has none)."""
    found: set[tuple[str, str]] = set()
    try:
        async for checkpoint in store.history(thread_id):
            found |= _named(checkpoint, nodes)
    except CorruptCheckpoint:
        # A damaged history: what every intact line says, if the store can tell
        # (``salvage``, see ``CheckpointStore``), else the children read so far.
        salvage = getattr(store, "salvage", None)
        if salvage is not None:
            async for checkpoint in salvage(thread_id):
                found |= _named(checkpoint, nodes)
    return sorted(found)
