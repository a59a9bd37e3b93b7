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
from typing import Any, NoReturn

from pydantic import BaseModel

from ._branches import Continue
from ._command import Applied
from ._errors import EngineError, InvalidUpdate, NodeFailed, StepLimitExceeded
from ._events import Event, NodeFinished, NodeStarted, Sink, StepState
from ._logs import engine_logger
from ._parallel import ParallelRun
from ._plan import Breakpoints, Fork, NodeSpec, Plan
from ._restore import Start, begin
from ._run import RouteFailed, Run, Suspending
from ._steps import NO_VALUE, NodeError, route
from ._tracing import start_run
from ._types import END, START, ErrorInfo, RunResult, SuspendToken

__all__ = ["run"]


async def run(
    plan: Plan,
    thread_id: str,
    input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, object] | None,
    sink: Sink,
    stops: Breakpoints | None = None,
) -> RunResult[Any]:
    """Run one call on the thread (its lease held by the caller): from where ``begin``
    puts it, node after node, in a run span when tracing records (``_tracing``).
    ``stops``: the call's breakpoints (``None``: none)."""
    begun = await begin(plan, thread_id, input, resume)
    if isinstance(begun, RunResult):  # nothing to run: run(None) on a finished thread
        return begun
    if sink is not None:  # the "values" stream starts where the call starts, as LangGraph's
        sink(StepState(state=begun.state))
    tracing = start_run(thread_id, begun.run_id, begun.resumed_trace)
    current = Run(
        plan,
        thread_id,
        begun.run_id,
        begun.step,
        begun.seq,
        begun.parent_id,
        sink,
        stops,
        begun.parent_thread,
    )
    current.answers = begun.answers
    held = [begun]  # the loop lets the starting state go as the run moves on
    del begun
    if tracing is None:
        return await _loop(current, held)
    current.traced(tracing)
    return await tracing.around(_loop(current, held))


async def _start(
    run: Run, start: Start
) -> tuple[str, BaseModel, ErrorInfo | None] | RunResult[BaseModel]:
    """Where the call goes on from ``start``: its next node, or the end of the
    fan-out it finishes or begins first (the suspended result if that suspends)."""
    state = start.state
    if start.fanout is not None:  # an unfinished fan-out goes on first
        fan = ParallelRun(run)
        outcome = await fan.restart(start.fanout, state, start.resumed_branch)
        return await _fanned(run, fan, outcome, state)
    goto = start.goto
    if goto is not None:  # a pause resumed with Command(goto=...): saved first
        if isinstance(goto, Fork):
            fan = ParallelRun(run)
            await fan.begin(goto, state, start.changes, None, past_breakpoint=True)
            return await _fanned(run, fan, await fan.finish(), state)
        if goto == END:
            await run.save("completed", None, state, None, start.changes)
        else:
            await run.save("running", goto, state, None, start.changes)
        return goto, state, None
    if start.node is not None:
        return start.node, state, None
    # A fresh start (new thread or next turn): checkpoint the input first, so a
    # crash or cancellation in the first node loses nothing and ``run(None)``
    # continues from there.
    first = await route(run.plan, START, state)
    if isinstance(first, Fork):
        fan = ParallelRun(run)
        await fan.begin(first, state, start.changes, None)
        return await _fanned(run, fan, await fan.finish(), state)
    if first == END:
        await run.save("completed", None, state, None, start.changes)
    else:
        await run.save("running", first, state, None, start.changes)
    return first, state, None


async def _fanned(
    run: Run, fan: ParallelRun, outcome: Continue | None, state: BaseModel
) -> Continue | RunResult[BaseModel]:
    """A fan-out ended: where the run goes on, or (branches suspended) its result."""
    if outcome is None:
        return await run.suspended_in_branches(state, fan.records())
    if run.sink is not None:
        run.sink(StepState(state=outcome.state))
    return outcome


async def _loop(run: Run, held: list[Start]) -> RunResult[BaseModel]:
    """The run loop (``held``: the call's start, taken out at once)."""
    start = held.pop()
    resume_value = start.resume_value
    # Resumed (from a pause or a node's Suspend): the next node runs without pausing.
    past_breakpoint = start.past_breakpoint or resume_value is not NO_VALUE
    at = await _start(run, start)
    del start
    if not isinstance(at, tuple):
        return at
    node, state, pending_error = at
    plan = run.plan
    nodes = plan.nodes
    tracks = plan.tracks
    limit = plan.step_limit
    sink = run.sink
    stops = run.stops
    path = run.path
    while True:
        if node == END:
            return run.complete(state)
        if len(path) >= limit:
            raise StepLimitExceeded(limit, path)
        if stops is not None:
            if node in stops.before and not past_breakpoint:
                return await run.pause("before", node, node, state)
            past_breakpoint = False
        spec = nodes[node]
        ctx = run.context(node, pending_error, resume_value)
        pending_error = None
        resume_value = NO_VALUE
        started = _node_started(sink, node, run.step) if sink is not None else 0.0
        changes: dict[str, int | None] | None = {} if tracks else None
        try:
            update, state, target = await run.take_step(spec, state, ctx, changes)
        except (NodeError, InvalidUpdate) as failure:
            node, pending_error = await _failed(run, spec, state, failure, ctx.resuming)
            continue
        except Suspending as suspending:
            return await run.suspend(node, suspending, changes)
        except RouteFailed as failed:
            await _route_failed(run, node, state, failed.cause)
        run.step += 1
        path.append(node)
        if isinstance(target, Fork):
            fan = ParallelRun(run)
            await fan.begin(target, state, changes, node)
            if sink is not None:
                _node_finished(sink, node, run.step - 1, update, started, state)
            at = await _fanned(run, fan, await fan.finish(), state)
            if not isinstance(at, Continue):
                return at
            node, state, pending_error = at
            continue
        if stops is not None and node in stops.after and target != END:
            if sink is not None:
                _node_finished(sink, node, run.step - 1, update, started, None)
            return await run.pause("after", node, target, state, changes)
        if target == END:
            await run.save("completed", None, state, node, changes)
        else:
            await run.save("running", target, state, node, changes)
        if sink is not None:
            _node_finished(sink, node, run.step - 1, update, started, state)
        node = target


def _node_started(sink: Callable[[Event | StepState], None], node: str, step: int) -> float:
    """Send ``NodeStarted`` (when streaming); the time the node starts."""
    sink(NodeStarted(node=node, step=step))
    return time.perf_counter()


def _node_finished(
    sink: Callable[[Event | StepState], None],
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


async def _failed(
    run: Run,
    spec: NodeSpec,
    state: BaseModel,
    failure: NodeError | InvalidUpdate,
    resuming: bool,
) -> tuple[str, ErrorInfo]:
    """A node failed: its ``on_error`` node and the error that node sees, or raise
    ``NodeFailed`` (saving the failure, unless the node was resuming: that keeps
    the suspension)."""
    cause = failure.cause if isinstance(failure, NodeError) else failure
    node = spec.name
    if spec.on_error is not None:
        engine_logger().warning(
            "node failed; routing to its on_error node",
            thread_id=run.thread_id,
            node=node,
            on_error=spec.on_error,
            error=repr(cause),
        )
        run.path.append(node)  # executed (and failed): counts toward step_limit
        return spec.on_error, ErrorInfo(node, type(cause).__name__, str(cause))
    if not resuming:  # a failed resume keeps the suspension (and its token)
        await run.fail(node, state, cause)
    raise NodeFailed(node, run.step, cause) from cause


async def _route_failed(run: Run, node: str, state: BaseModel, exc: Exception) -> NoReturn:
    """Routing after ``node`` raised ``exc``: save the failure and raise."""
    await run.fail(node, state, exc)
    if isinstance(exc, EngineError):
        raise exc
    raise NodeFailed(node, run.step, exc) from exc
