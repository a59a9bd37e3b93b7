"""The run loop: run a call node after node from where ``begin`` put it, saving a
checkpoint after each step, until the run completes, suspends or fails.

``CompiledGraph`` (``_compiled``) calls ``run`` inside the thread's lease. ``run``
asks ``_restore.begin`` where the call starts and ``_loop`` goes on from there: each
step calls the node (``_steps.invoke``, or ``_tracing``'s traced one), applies its
update, routes (``_steps.route``) and saves (``_steps.save``). A route to a fan-out
hands the run to ``_parallel.ParallelRun`` until its branches meet.

This is the engine's hot path. The loop keeps the run's position in local
variables, and a step that goes on to the next node calls nothing but the node,
its route and the save: the helpers below it run once per call, when a step fails,
suspends or forks, or (sending events) when streaming.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, NoReturn

import structlog
from pydantic import BaseModel

from ._branches import Continue
from ._breakpoints import pause
from ._command import Applied, Command, apply_several, command_target
from ._context import NodeContext
from ._errors import EngineError, InvalidUpdate, NodeFailed, StepLimitExceeded
from ._events import Completed, NodeFinished, NodeStarted, Sink, StepState, Suspended
from ._parallel import ParallelRun
from ._plan import Breakpoints, Fork, NodeSpec, Plan
from ._restore import Start, begin
from ._steps import (
    NO_VALUE,
    ChildSuspend,
    NodeError,
    cannot_suspend,
    invoke,
    route,
    save,
    save_failure,
)
from ._tokens import branch_suspensions, sign
from ._tracing import RunTrace, start_run
from ._types import END, START, ErrorInfo, RunResult, Suspend, SuspendToken, Suspension
from .store import CheckpointStore

__all__ = ["run"]

_log = structlog.get_logger("research_fsm.engine")


async def run(
    plan: Plan,
    thread_id: str,
    input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, Any] | None,
    sink: Sink,
    stops: Breakpoints | None = None,
) -> RunResult[Any]:
    """Run one call on the thread (its lease held by the caller): from where ``begin``
    puts it, node after node, in a run span when tracing records (``_tracing``).
    ``stops``: the call's breakpoints (``None``: none)."""
    begun = await begin(plan, thread_id, input, resume)
    if isinstance(begun, RunResult):  # nothing to run: run(None) on a finished thread
        return begun
    tracing = start_run(thread_id, begun.run_id, begun.resumed_trace)
    held = [begun]  # the loop lets the starting state go as the run moves on
    del begun
    if tracing is None:
        return await _loop(plan, thread_id, held, sink, None, stops)
    return await tracing.around(_loop(plan, thread_id, held, sink, tracing, stops))


async def _loop(
    plan: Plan,
    thread_id: str,
    held: list[Start],
    sink: Sink,
    tracing: RunTrace | None,
    stops: Breakpoints | None,
) -> RunResult[Any]:
    """The run loop (``held``: the call's start, taken out at once)."""
    start = held.pop()
    state = start.state
    node = start.node
    run_id = start.run_id
    step = start.step
    seq = start.seq
    parent_id = start.parent_id
    resume_value = start.resume_value
    # Resumed (from a pause or a node's Suspend): the next node runs without pausing.
    past_breakpoint = start.past_breakpoint or resume_value is not NO_VALUE
    path: list[str] = []
    fan: ParallelRun | None = None
    outcome: Continue | None = None

    def fan_out() -> ParallelRun:
        """A fan-out from where the run is now (its step, seq and parent checkpoint)."""
        return ParallelRun(
            plan,
            thread_id,
            run_id,
            sink,
            path,
            seq=seq,
            parent_id=parent_id,
            step=step,
            tracing=tracing,
            stops=stops,
        )

    if start.fanout is not None:  # an unfinished fan-out goes on first
        fan = fan_out()
        outcome = await fan.restart(start.fanout, state, start.resumed_branch)
    elif start.goto is not None:  # a pause resumed with Command(goto=...): saved first
        if isinstance(start.goto, Fork):
            fan = fan_out()
            await fan.begin(start.goto, state, start.changes, None, past_breakpoint=True)
            outcome = await fan.run()
        else:
            seq += 1
            parent_id = await save(
                plan.store,
                thread_id,
                run_id,
                step,
                seq,
                parent_id,
                "completed" if start.goto == END else "running",
                start.goto,
                state,
                last_node=None,
                changes=start.changes,
            )
            node = start.goto
    elif node is None:
        # A fresh start (new thread or next turn): checkpoint the input first, so a
        # crash or cancellation in the first node loses nothing and ``run(None)``
        # continues from there.
        first = await route(plan, START, state)
        if isinstance(first, Fork):
            fan = fan_out()
            await fan.begin(first, state, start.changes, None)
            outcome = await fan.run()
        else:
            seq += 1
            parent_id = await save(
                plan.store,
                thread_id,
                run_id,
                step,
                seq,
                parent_id,
                "completed" if first == END else "running",
                first,
                state,
                last_node=None,
                changes=start.changes,
            )
            node = first
    del start
    store = plan.store
    schema = plan.schema
    nodes = plan.nodes
    origins = plan.origins
    tracks = plan.tracks
    limit = plan.step_limit
    call = invoke if tracing is None else tracing.invoke
    pending_error: ErrorInfo | None = None
    goto: Any = None  # the last node's Command(goto=...), until routed
    while True:
        if fan is not None:  # a fan-out ended: go on where it left the run
            if outcome is None:
                return await _suspended_in_branches(fan, state)
            node = outcome.node
            state = outcome.state
            pending_error = outcome.error
            seq = fan.seq
            parent_id = fan.parent_id
            step = fan.step
            fan = None
            if sink is not None:
                sink(StepState(state=state))
        if node == END or node is None:
            return _completed(thread_id, state, path, parent_id, sink)
        if len(path) >= limit:
            raise StepLimitExceeded(limit, path)
        if stops is not None:
            if node in stops.before and not past_breakpoint:
                return await _pause(
                    plan,
                    thread_id,
                    run_id,
                    step,
                    seq,
                    parent_id,
                    "before",
                    node,
                    node,
                    state,
                    path,
                    sink,
                    tracing,
                )
            past_breakpoint = False
        spec = nodes[node]
        ctx = NodeContext(
            thread_id=thread_id,
            run_id=run_id,
            step=step,
            node=node,
            error=pending_error,
            _sink=sink,
        )
        pending_error = None
        resuming = resume_value is not NO_VALUE
        if resuming:
            ctx.resume_value = resume_value
            ctx.resuming = True
            resume_value = NO_VALUE
        started = _node_started(sink, node, step) if sink is not None else 0.0
        try:
            out = await call(spec, state, ctx, resuming)
            if type(out) is not dict:
                if isinstance(out, Suspend):
                    return await _suspend(
                        plan,
                        thread_id,
                        run_id,
                        step,
                        seq + 1,
                        parent_id,
                        spec,
                        state,
                        out,
                        path,
                        sink,
                        tracing,
                    )
                if type(out) is Command:
                    goto = out.goto
                    out = out.update
            origin = origins[node]
            changes: dict[str, int | None] | None = {} if tracks else None
            if type(out) is list:  # several updates, in order
                several = apply_several(schema, state, node, out, origin, changes)
                goto, new_state = several.goto, several.states[-1]
                update: dict[str, Any] | Applied = several
            else:
                changed = schema.as_changes(out, origin)
                new_state = schema.apply(state, changed, origin, changes)
                update = changed
        except (NodeError, InvalidUpdate) as failure:
            goto = None
            node, pending_error = await _failed(
                store,
                thread_id,
                run_id,
                step,
                seq + 1,
                parent_id,
                spec,
                state,
                failure,
                resuming,
                path,
            )
            continue
        try:
            if goto is None:
                target = await route(plan, node, new_state)
            else:
                target = command_target(plan, node, goto)
                goto = None
        except Exception as exc:
            await _route_failed(
                store, thread_id, run_id, step, seq + 1, parent_id, node, state, exc
            )
        state = new_state
        step += 1
        path.append(node)
        if isinstance(target, Fork):
            fan = fan_out()
            await fan.begin(target, state, changes, node)
            if sink is not None:
                _node_finished(sink, node, step - 1, update, started, state)
            outcome = await fan.run()
            continue
        if stops is not None and node in stops.after and target != END:
            if sink is not None:
                _node_finished(sink, node, step - 1, update, started, None)
            return await _pause(
                plan,
                thread_id,
                run_id,
                step,
                seq,
                parent_id,
                "after",
                node,
                target,
                state,
                path,
                sink,
                tracing,
                changes,
            )
        seq += 1
        parent_id = await save(
            store,
            thread_id,
            run_id,
            step,
            seq,
            parent_id,
            "completed" if target == END else "running",
            target,
            state,
            last_node=node,
            changes=changes,
        )
        if sink is not None:
            _node_finished(sink, node, step - 1, update, started, state)
        node = target


def _node_started(sink: Callable[[Any], None], node: str, step: int) -> float:
    """Send ``NodeStarted`` (when streaming); the time the node starts."""
    sink(NodeStarted(node=node, step=step))
    return time.perf_counter()


def _node_finished(
    sink: Callable[[Any], None],
    node: str,
    step: int,
    update: dict[str, Any] | Applied,
    started: float,
    state: BaseModel | None,
) -> None:
    """Send ``NodeFinished`` and (unless ``None``) the state after the step (when streaming)."""
    duration = time.perf_counter() - started
    if isinstance(update, Applied):  # a list of updates
        finished = NodeFinished(
            node=node, step=step, update=update.summary, duration=duration, updates=update.updates
        )
    else:
        finished = NodeFinished(node=node, step=step, update=update, duration=duration)
    sink(finished)
    if state is not None:
        sink(StepState(state=state))


async def _pause(
    plan: Plan,
    thread_id: str,
    run_id: str,
    step: int,
    seq: int,
    parent_id: str | None,
    where: Literal["before", "after"],
    node: str,
    next_node: str,
    state: BaseModel,
    path: list[str],
    sink: Sink,
    tracing: RunTrace | None,
    changes: dict[str, int | None] | None = None,
) -> RunResult[Any]:
    """Pause at a breakpoint ``where`` ``node``: save it and return the suspended result."""
    if changes is None and plan.tracks:
        changes = {}
    trace = None if tracing is None else tracing.traceparent()
    return await pause(
        plan,
        thread_id,
        run_id,
        step,
        seq + 1,
        parent_id,
        where,
        node,
        next_node,
        state,
        path,
        sink,
        trace,
        changes=changes,
    )


async def _failed(
    store: CheckpointStore,
    thread_id: str,
    run_id: str,
    step: int,
    seq: int,
    parent_id: str | None,
    spec: NodeSpec,
    state: BaseModel,
    failure: NodeError | InvalidUpdate,
    resuming: bool,
    path: list[str],
) -> tuple[str, ErrorInfo]:
    """A node failed: its ``on_error`` node and the error that node sees, or raise
    ``NodeFailed`` (saving the failure, unless the node was resuming: that keeps
    the suspension)."""
    cause = failure.cause if isinstance(failure, NodeError) else failure
    node = spec.name
    if spec.on_error is not None:
        _log.warning(
            "node failed; routing to its on_error node",
            thread_id=thread_id,
            node=node,
            on_error=spec.on_error,
            error=repr(cause),
        )
        path.append(node)  # executed (and failed): counts toward step_limit
        return spec.on_error, ErrorInfo(node, type(cause).__name__, str(cause))
    if not resuming:  # a failed resume keeps the suspension (and its token)
        await save_failure(store, thread_id, run_id, step, seq, parent_id, node, state, cause)
    raise NodeFailed(node, step, cause) from cause


async def _route_failed(
    store: CheckpointStore,
    thread_id: str,
    run_id: str,
    step: int,
    seq: int,
    parent_id: str | None,
    node: str,
    state: BaseModel,
    exc: Exception,
) -> NoReturn:
    """Routing after ``node`` raised ``exc``: save the failure and raise."""
    await save_failure(store, thread_id, run_id, step, seq, parent_id, node, state, exc)
    if isinstance(exc, EngineError):
        raise exc
    raise NodeFailed(node, step, exc) from exc


async def _suspend(
    plan: Plan,
    thread_id: str,
    run_id: str,
    step: int,
    seq: int,
    parent_id: str | None,
    spec: NodeSpec,
    state: BaseModel,
    out: Suspend,
    path: list[str],
    sink: Sink,
    tracing: RunTrace | None,
) -> RunResult[Any]:
    """The node returned ``Suspend``: apply its update, save the suspension, and
    return the suspended result with its token."""
    node = spec.name
    if not spec.takes_ctx:
        raise cannot_suspend(node)
    origin = f"node `{node}` (Suspend.update)"
    changes: dict[str, int | None] | None = {} if plan.tracks else None
    schema = plan.schema
    update = schema.as_changes(out.update, origin)
    state = schema.apply(state, update, origin, changes)
    path.append(node)
    saved = {"node": node, "payload": out.payload}
    child = None
    if isinstance(out, ChildSuspend):  # a subgraph's: which child suspension it is
        saved["child"] = out.child
        child = out.thread
    if tracing is not None:  # the resume links to (and continues) this run's trace
        saved["trace"] = tracing.traceparent()
    checkpoint_id = await save(
        plan.store,
        thread_id,
        run_id,
        step,
        seq,
        parent_id,
        "suspended",
        node,
        state,
        last_node=node,
        suspension=saved,
        changes=changes,
    )
    token = await sign(plan.store, thread_id, checkpoint_id)
    suspension = Suspension(node=node, payload=out.payload, token=token, child_thread_id=child)
    result: RunResult[Any] = RunResult(
        status="suspended",
        state=state,
        path=path,
        checkpoint_id=checkpoint_id,
        thread_id=thread_id,
        suspension=suspension,
        suspensions=(suspension,),
    )
    if sink is not None:
        if update:  # the state changed: the "values" stream shows it (once)
            sink(StepState(state=state))
        sink(Suspended(suspension=suspension, result=result))
    return result


async def _suspended_in_branches(fan: ParallelRun, state: BaseModel) -> RunResult[Any]:
    """The run's fan-out ended with branches suspended: the result listing them."""
    assert fan.parent_id is not None
    suspensions = await branch_suspensions(fan.plan.store, fan.thread_id, fan.records(), fan.run_id)
    result: RunResult[Any] = RunResult(
        status="suspended",
        state=state,
        path=fan.path,
        checkpoint_id=fan.parent_id,
        thread_id=fan.thread_id,
        suspension=suspensions[0],
        suspensions=tuple(suspensions),
    )
    if fan.sink is not None:
        fan.sink(Suspended(suspension=suspensions[0], result=result))
    return result


def _completed(
    thread_id: str, state: BaseModel, path: list[str], parent_id: str | None, sink: Sink
) -> RunResult[Any]:
    """The run reached END: its result (and the ``Completed`` event)."""
    assert parent_id is not None
    result: RunResult[Any] = RunResult(
        status="completed", state=state, path=path, checkpoint_id=parent_id, thread_id=thread_id
    )
    if sink is not None:
        sink(Completed(result=result))
    return result
