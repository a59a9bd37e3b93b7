"""One step's pieces, shared by the run loop and the parallel runner: call a node
(retries, timeout), pick where the run goes next, save a checkpoint."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ._branches import NodeError
from ._context import NodeContext
from ._errors import NodeTimeout, RoutingError
from ._fresh import fresh_copy
from ._topology import NO_ITEM, Fork
from ._types import END, Checkpoint, CheckpointStatus, Send, Suspend
from .store import CheckpointStore

if TYPE_CHECKING:
    from ._compiled import CompiledGraph
    from ._graph import NodeSpec

__all__ = ["fork", "invoke", "now", "route", "save", "save_failure"]

_clock: tuple[int, str] = (-1, "")  # the last millisecond formatted, and its text


def now() -> str:
    """ISO-8601 UTC time to the millisecond (formatted once per millisecond)."""
    global _clock
    ms = int(time.time() * 1000)
    cached_ms, text = _clock
    if ms != cached_ms:
        text = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
        _clock = (ms, text)
    return text


async def invoke(spec: NodeSpec, state: BaseModel, ctx: NodeContext, resuming: bool) -> Any:
    """The node's return value, after its retries and within its timeout; raises
    ``NodeError`` around what it finally raised. The node gets its own copy of
    ``state``; when it returns that copy (or suspends with it as the update), its
    changes to it are the update."""
    attempt, item = 1, ctx.item
    while True:
        own = spec.schema.fresh(state)  # each attempt changes its own copy
        if item is not None:
            ctx.item = fresh_copy(item)  # and its own copy of its Send item
        scope = None
        try:
            if resuming and spec.resume is not None:
                coro = spec.resume(own, ctx.resume_value, ctx)
            else:
                coro = spec.call(own, ctx)
            if spec.timeout is None:
                out = await coro
            else:
                async with asyncio.timeout(spec.timeout) as scope:
                    out = await coro
            if out is own:
                return spec.schema.changes_of(state, own)
            if type(out) is Suspend and out.update is own:
                return Suspend(out.payload, update=spec.schema.changes_of(state, own))
            return out
        except Exception as raised:
            exc: Exception = raised
            if scope is not None and spec.timeout is not None and scope.expired():
                exc = NodeTimeout(spec.name, spec.timeout)
            policy = spec.retry
            if policy is None:
                raise NodeError(exc) from raised
            try:
                again = policy.should_retry(exc, attempt)
            except Exception as broken:  # the policy's own retry_on raised: the node fails with it
                raise NodeError(broken) from broken
            if not again:
                raise NodeError(exc) from raised
            ctx.log.warning("node failed; retrying", attempt=attempt, error=repr(exc))
            if ctx._span is not None:
                from ._tracing import retried  # a traced run: its node span gets an event

                retried(ctx, attempt, exc)
            await asyncio.sleep(policy.delay(attempt))
            attempt += 1


async def route(graph: CompiledGraph[Any], source: str, state: BaseModel) -> str | Fork:
    """Where the run goes after ``source``: its edge, or what its router picks (given
    its own copy of the state)."""
    target = graph._edges.get(source)
    if target is not None:
        return target
    router = graph._routers[source]
    key = router.fn(graph._schema.fresh(state))  # a router's in-place changes are its own
    if router.is_async:
        key = await key
    if isinstance(key, (list, tuple)):
        return fork(graph, source, key)
    try:
        return router.targets[key]
    except (KeyError, TypeError):
        raise RoutingError(source, key, list(router.targets)) from None


def fork(graph: CompiledGraph[Any], source: str, keys: list[Any] | tuple[Any, ...]) -> str | Fork:
    """A router's list: the branches to start (an empty list goes to the join)."""
    router = graph._routers[source]
    join = graph._router_joins[source] or END
    starts: list[tuple[str, Any]] = []
    for key in keys:
        if isinstance(key, Send):
            if key.node not in router.targets.values() or key.node == END:
                nodes = [t for t in dict.fromkeys(router.targets.values()) if t != END]
                raise RoutingError(source, key.node, nodes, what="node")
            starts.append((key.node, key.item))
            continue
        try:
            node = router.targets[key]
        except (KeyError, TypeError):
            raise RoutingError(source, key, list(router.targets)) from None
        if node == END:  # END starts no branch
            keys = [k for k, t in router.targets.items() if t != END]
            raise RoutingError(source, key, keys, what="branch key")
        starts.append((node, NO_ITEM))
    return Fork(tuple(starts), join) if starts else join


async def save(
    store: CheckpointStore, thread_id: str, run_id: str, step: int, seq: int,
    parent_id: str | None, status: CheckpointStatus, next_node: str | None, state: BaseModel,
    *, last_node: str | None, suspension: dict[str, Any] | None = None,
    error: dict[str, str] | None = None, changes: dict[str, int | None] | None = None,
    branches: dict[str, dict[str, Any]] | None = None,
    changed_branches: tuple[str, ...] | None = None,
) -> str:  # fmt: skip
    """Save a checkpoint after ``parent_id``; returns its id. ``changes``: the
    fields the step changed, for stores that save just those."""
    checkpoint_id = os.urandom(12).hex()
    await store.save(
        Checkpoint(
            thread_id=thread_id, checkpoint_id=checkpoint_id, parent_id=parent_id,
            seq=seq, run_id=run_id, step=step, status=status,
            next=None if next_node == END else next_node, state=state,
            created_at=now(), suspension=suspension, error=error, last_node=last_node,
            changes=changes, branches=branches, changed_branches=changed_branches,
        )
    )  # fmt: skip
    return checkpoint_id


async def save_failure(
    store: CheckpointStore, thread_id: str, run_id: str, step: int, seq: int,
    parent_id: str | None, node: str, state: BaseModel, cause: BaseException,
) -> None:  # fmt: skip
    """Save that ``node`` failed with ``cause`` (the state is the one it was given)."""
    error = {"node": node, "exc_type": type(cause).__name__, "message": str(cause)}
    await save(
        store, thread_id, run_id, step, seq, parent_id, "failed", node, state,
        last_node=node, error=error, changes={},
    )  # fmt: skip
