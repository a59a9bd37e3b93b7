"""One step's pieces, shared by the run loop (``_runloop``) and the parallel runner
(``_parallel``): call a node (retries, timeout), pick where the run goes next. (The run's
``Run``, ``_run``, saves its checkpoints.) Below them is only the ``Plan`` (``_plan``) they read."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import Span
from pydantic import BaseModel

from ._command import Command
from ._context import NodeContext
from ._errors import (
    ChildThreadMissing,
    CorruptCheckpoint,
    NodeTimeout,
    RoutingError,
    StateMisread,
)
from ._fresh import fresh_copy
from ._interrupt import ASKER, Asker, GraphInterrupt, Interruption, swallowed
from ._plan import NO_ITEM, Fork, NodeSpec, Plan
from ._types import END, Send, Suspend

__all__ = [
    "NO_VALUE",
    "ChildSuspend",
    "NodeError",
    "cannot_suspend",
    "fork",
    "invoke",
    "now",
    "route",
    "route_now",
]

NO_VALUE: Any = object()
"""No resume value: the node (or branch) is not being resumed."""


@dataclass(frozen=True, slots=True)
class ChildSuspend(Suspend):
    """A subgraph node's ``Suspend`` (``_subgraph``): the child's suspension it passes
    on, saved with the parent's (``"child"``), so a resume answers that one only."""

    child: str = ""
    """The id the child's suspension token names."""
    thread: str | None = None
    """The child's thread (``Suspension.child_thread_id``)."""


class NodeError(Exception):
    """A node failed for good (after retries); raised by ``invoke``."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause


def cannot_suspend(node: str) -> NodeError:
    """The failure of a ``(state)``-only node that returned ``Suspend``."""
    return NodeError(
        TypeError(
            f"node `{node}` takes only (state) and cannot suspend: give it "
            "a `ctx` parameter, or make it an object with `run`/`resume`"
        )
    )


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


async def invoke(
    spec: NodeSpec, state: BaseModel, ctx: NodeContext, resuming: bool, span: Span | None = None
) -> object:
    """The node's return value, after its retries and within its timeout; raises
    ``NodeError`` around what it finally raised. The node gets its own copy of
    ``state``; when it returns that copy (or suspends with it as the update), its
    changes to it are the update. ``span``: the node's span in a traced run
    (``_tracing``), which records each retry. A node's ``interrupt()`` returns
    ``Interruption``, its ``Suspend``, with the answers it was given (``_interrupt``)."""
    attempt, item = 1, ctx.item
    scope = None  # the attempt's timeout, when it has one
    while True:
        own = spec.schema.fresh(state)  # each attempt changes its own copy
        if item is not None:
            ctx.item = fresh_copy(item)  # and its own copy of its Send item
        # Its interrupt() calls, from the first: the answers they replay (``_interrupt``).
        asker = Asker(spec.name, ctx.answers, spec.resume is not None)
        asking = ASKER.set(asker)
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
            if asker.pending is not None:  # it caught its interrupt() and went on
                raise swallowed(asker)
            if out is own:
                return spec.schema.changes_of(state, own)
            if type(out) is not dict and getattr(out, "update", None) is own:
                changes = spec.schema.changes_of(state, own)
                if type(out) is Suspend:
                    return Suspend(out.payload, update=changes)
                if type(out) is Command:
                    return Command(update=changes, goto=out.goto)
            return out
        except GraphInterrupt as asked:  # interrupt(): suspend, keeping the answers
            return Interruption(asked.value, answers=asker.answers)
        except (ChildThreadMissing, CorruptCheckpoint):
            raise  # a subgraph's thread is gone or damaged: not the node's failure
        except Exception as raised:
            exc: Exception = raised
            if scope is not None and spec.timeout is not None and scope.expired():
                exc = NodeTimeout(spec.name, spec.timeout)
            scope = None
            policy = spec.retry
            if policy is None:
                raise NodeError(_explained(exc, own, item, spec.name)) from raised
            try:
                again = policy.should_retry(exc, attempt)
            except Exception as broken:  # the policy's own retry_on raised: the node fails with it
                raise NodeError(broken) from broken
            if not again:
                raise NodeError(_explained(exc, own, item, spec.name)) from raised
            ctx.log.warning("node failed; retrying", attempt=attempt, error=repr(exc))
            if span is not None:
                _retried(span, attempt, exc)
            await asyncio.sleep(policy.delay(attempt))
            attempt += 1
        finally:
            asker.ended = True  # a task the attempt left running asks no more
            ASKER.reset(asking)


def _explained(exc: Exception, own: BaseModel, item: object, node: str) -> Exception:
    """``exc``, or a ``StateMisread`` naming the fix when the node read its state as
    LangGraph's: ``state["x"]``, or (reached through ``Send``) ``state.x`` for a field
    only the item has. On the failure path only."""
    model = type(own)
    misread: StateMisread | None = None
    if isinstance(exc, AttributeError) and item is not None and exc.obj is own:
        if isinstance(exc.name, str) and exc.name not in model.model_fields:
            misread = StateMisread(node, model.__name__, exc.name, True)
    elif type(exc) is TypeError and str(exc) == f"'{model.__name__}' object is not subscriptable":
        misread = StateMisread(node, model.__name__, None, item is not None)
    if misread is None:
        return exc
    misread.__cause__ = exc
    return misread


def _retried(span: Span, attempt: int, exc: BaseException) -> None:
    """The node failed on ``attempt`` and is called again: an event on its span."""
    span.add_event(
        "research_fsm.retry",
        {
            "research_fsm.attempt": attempt,
            "exception.type": type(exc).__name__,
            "exception.message": str(exc),
        },
    )
    span.set_attribute("research_fsm.attempt", attempt + 1)


async def route(plan: Plan, source: str, state: BaseModel) -> str | Fork:
    """Where the run goes after ``source``: its edge, or what its router picks (given
    its own copy of the state)."""
    target = route_now(plan, source, state)
    if target is not None:
        return target
    router = plan.routers[source]  # an async router
    own = plan.schema.fresh(state)  # a router's in-place changes are its own
    return _picked(plan, source, await router.fn(own), state, own)


def route_now(plan: Plan, source: str, state: BaseModel) -> str | Fork | None:
    """``route`` without an await, for the run loop: ``None`` when ``source``'s router
    is async (then ``route`` it)."""
    target = plan.edges.get(source)
    if target is not None:
        return target
    router = plan.routers[source]
    if router.is_async:
        return None
    own = plan.schema.fresh(state)  # a router's in-place changes are its own
    return _picked(plan, source, router.fn(own), state, own)


def _picked(plan: Plan, source: str, key: object, state: BaseModel, own: BaseModel) -> str | Fork:
    """Where ``source``'s router sends the run by ``key``, picked on ``own``, its copy of
    ``state``."""
    if isinstance(key, (list, tuple)):
        return fork(plan, source, key)
    router = plan.routers[source]
    try:
        target = router.targets[key]
    except (KeyError, TypeError):
        raise RoutingError(source, key, list(router.targets)) from None
    if target != END:
        plan.schema.lend(state, own)  # the next node's copy, if the router left it as it was
    return target


def fork(plan: Plan, source: str, keys: list[object] | tuple[object, ...]) -> str | Fork:
    """A router's list: the branches to start (an empty list goes to the join)."""
    router = plan.routers[source]
    join = plan.router_joins[source] or END
    starts: list[tuple[str, object]] = []
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
