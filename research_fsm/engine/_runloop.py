"""The run loop: run a call node after node from where ``begin`` put it, saving a
checkpoint after each step, until the run completes, suspends or fails.

This is the engine's hot path. The loop keeps the run's position in local
variables, and a step that goes on to the next node calls nothing but the node
(``invoke``), its route and the save (``_steps``): the helpers here run once per
call, when a step fails, suspends or forks, or (sending events) when streaming.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import structlog
from pydantic import BaseModel

from ._branches import NO_VALUE, Continue, NodeError, cannot_suspend
from ._context import NodeContext
from ._errors import EngineError, InvalidUpdate, NodeFailed, StepLimitExceeded
from ._events import Completed, Event, NodeFinished, NodeStarted, Suspended
from ._parallel import ParallelRun
from ._restore import Start
from ._steps import invoke, route, save, save_failure
from ._tokens import branch_suspensions, sign
from ._topology import Fork
from ._tracing import RunTrace, start_run
from ._types import END, START, ErrorInfo, RunResult, Suspend, Suspension
from .store import CheckpointStore

if TYPE_CHECKING:
    from ._compiled import CompiledGraph, Sink
    from ._graph import NodeSpec

__all__ = ["run"]

_log = structlog.get_logger("research_fsm.engine")


async def run(
    graph: CompiledGraph[Any], thread_id: str, begun: Start | RunResult[Any], sink: Sink
) -> RunResult[Any]:
    """Run the call ``begun`` describes, node after node (a ``RunResult``: nothing to run),
    in a run span when tracing records (``_tracing``)."""
    if isinstance(begun, RunResult):
        return begun
    tracing = start_run(thread_id, begun[2], begun[10])
    held = [begun]  # the loop lets the starting state go as the run moves on
    del begun
    if tracing is None:
        return await _loop(graph, thread_id, held, sink, None)
    return await tracing.around(_loop(graph, thread_id, held, sink, tracing))


async def _loop(
    graph: CompiledGraph[Any], thread_id: str, held: list[Start], sink: Sink,
    tracing: RunTrace | None,
) -> RunResult[Any]:  # fmt: skip
    """The run loop (``held``: the call's start, taken out at once)."""
    state, node, run_id, step, seq, parent_id, resume_value, path, fan, outcome = (
        await _start(graph, thread_id, held.pop(), sink, tracing))  # fmt: skip
    store, schema, tracks, nodes, origins, limit, pending_error = (graph.store, graph._schema,
        graph._tracks, graph._nodes, graph._origins, graph.step_limit, None)  # fmt: skip
    call = invoke if tracing is None else tracing.invoke
    while True:
        if fan is not None:  # a fan-out ended: go on where it left the run
            if outcome is None:
                return await _suspended_in_branches(fan, state)
            node, state, pending_error = outcome.node, outcome.state, outcome.error
            seq, parent_id, step, fan = fan.seq, fan.parent_id, fan.step, None
        if node == END or node is None:
            return _completed(thread_id, state, path, parent_id, sink)
        if len(path) >= limit:
            raise StepLimitExceeded(limit, path)
        spec = nodes[node]
        ctx = NodeContext(thread_id=thread_id, run_id=run_id, step=step, node=node,
                          error=pending_error, _sink=sink)  # fmt: skip
        resuming, pending_error = resume_value is not NO_VALUE, None
        if resuming:
            ctx.resume_value, ctx.resuming, resume_value = resume_value, True, NO_VALUE
        started = _node_started(sink, node, step) if sink is not None else 0.0
        try:
            out = await call(spec, state, ctx, resuming)
            if isinstance(out, Suspend):
                return await _suspend(graph, thread_id, run_id, step, seq + 1, parent_id,
                                      spec, state, out, path, sink, tracing)  # fmt: skip
            origin = origins[node]
            update = schema.as_changes(out, origin)
            changes: dict[str, int | None] | None = {} if tracks else None
            new_state = schema.apply(state, update, origin, changes)
        except (NodeError, InvalidUpdate) as failure:
            node, pending_error = await _failed(store, thread_id, run_id, step, seq + 1,
                                                parent_id, spec, state, failure, resuming, path)  # fmt: skip
            continue
        try:
            target = await route(graph, node, new_state)
        except Exception as exc:
            await _route_failed(store, thread_id, run_id, step, seq + 1, parent_id, node, state,
                                exc)  # fmt: skip
        state, step = new_state, step + 1
        path.append(node)
        if isinstance(target, Fork):
            fan, outcome = await _fan_out(graph, thread_id, run_id, sink, path, seq, parent_id,
                                          step, target, state, changes, node, update, started,
                                          tracing)  # fmt: skip
            continue
        seq += 1
        parent_id = await save(store, thread_id, run_id, step, seq, parent_id,
                               "completed" if target == END else "running", target, state,
                               last_node=node, changes=changes)  # fmt: skip
        if sink is not None:
            _node_finished(sink, node, step - 1, update, started)
        node = target


async def _start(
    graph: CompiledGraph[Any], thread_id: str, begun: Start, sink: Sink,
    tracing: RunTrace | None,
) -> tuple[
    BaseModel, str | None, str, int, int, str | None, Any, list[str], ParallelRun | None,
    Continue | None,
]:  # fmt: skip
    """Where the run loop starts: state, node, run_id, step, seq, parent_id, resume
    value, path, and a fan-out that ran first with how it ended. Continues a saved
    fan-out, or, on a run from START, saves the first checkpoint (or runs the
    fan-out START routes to)."""
    state, node, run_id, step, seq, parent_id, changes, resume_value, fanout, resumed, _ = begun
    path: list[str] = []
    if fanout is not None:
        fan = ParallelRun(graph, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id,
                          step=step, tracing=tracing)  # fmt: skip
        outcome = await fan.restart(fanout, state, resumed)
        return state, node, run_id, step, seq, parent_id, resume_value, path, fan, outcome
    if node is not None:  # a run that stopped midway, or a resumed suspension
        return state, node, run_id, step, seq, parent_id, resume_value, path, None, None
    # A fresh start (new thread or next turn): checkpoint the input first, so a
    # crash or cancellation in the first node loses nothing and ``run(None)``
    # continues from there.
    first = await route(graph, START, state)
    if isinstance(first, Fork):
        fan = ParallelRun(graph, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id,
                          step=step, tracing=tracing)  # fmt: skip
        await fan.begin(first, state, changes, None)
        outcome = await fan.run()
        return state, None, run_id, step, seq, parent_id, resume_value, path, fan, outcome
    parent_id = await save(
        graph.store, thread_id, run_id, step, seq + 1, parent_id,
        "completed" if first == END else "running", first, state, last_node=None,
        changes=changes,
    )  # fmt: skip
    return state, first, run_id, step, seq + 1, parent_id, resume_value, path, None, None


async def _fan_out(
    graph: CompiledGraph[Any], thread_id: str, run_id: str, sink: Sink, path: list[str],
    seq: int, parent_id: str | None, step: int, fork: Fork, state: BaseModel,
    changes: dict[str, int | None] | None, node: str, update: dict[str, Any], started: float,
    tracing: RunTrace | None,
) -> tuple[ParallelRun, Continue | None]:  # fmt: skip
    """Run the fan-out ``node`` routed to; how it ended (``None``: suspended)."""
    fan = ParallelRun(graph, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id,
                      step=step, tracing=tracing)  # fmt: skip
    await fan.begin(fork, state, changes, node)
    if sink is not None:
        _node_finished(sink, node, step - 1, update, started)
    return fan, await fan.run()


def _node_started(sink: Callable[[Event], None], node: str, step: int) -> float:
    """Send ``NodeStarted`` (when streaming); the time the node starts."""
    sink(NodeStarted(node=node, step=step))
    return time.perf_counter()


def _node_finished(
    sink: Callable[[Event], None], node: str, step: int, update: dict[str, Any], started: float
) -> None:
    """Send ``NodeFinished`` (when streaming)."""
    sink(NodeFinished(node=node, step=step, update=update, duration=time.perf_counter() - started))


async def _failed(
    store: CheckpointStore, thread_id: str, run_id: str, step: int, seq: int,
    parent_id: str | None, spec: NodeSpec, state: BaseModel,
    failure: NodeError | InvalidUpdate, resuming: bool, path: list[str],
) -> tuple[str, ErrorInfo]:  # fmt: skip
    """A node failed: its ``on_error`` node and the error that node sees, or raise
    ``NodeFailed`` (saving the failure, unless the node was resuming: that keeps
    the suspension)."""
    cause = failure.cause if isinstance(failure, NodeError) else failure
    node = spec.name
    if spec.on_error is not None:
        _log.warning(
            "node failed; routing to its on_error node", thread_id=thread_id,
            node=node, on_error=spec.on_error, error=repr(cause),
        )  # fmt: skip
        path.append(node)  # executed (and failed): counts toward step_limit
        return spec.on_error, ErrorInfo(node, type(cause).__name__, str(cause))
    if not resuming:  # a failed resume keeps the suspension (and its token)
        await save_failure(store, thread_id, run_id, step, seq, parent_id, node, state, cause)
    raise NodeFailed(node, step, cause) from cause


async def _route_failed(
    store: CheckpointStore, thread_id: str, run_id: str, step: int, seq: int,
    parent_id: str | None, node: str, state: BaseModel, exc: Exception,
) -> NoReturn:  # fmt: skip
    """Routing after ``node`` raised ``exc``: save the failure and raise."""
    await save_failure(store, thread_id, run_id, step, seq, parent_id, node, state, exc)
    if isinstance(exc, EngineError):
        raise exc
    raise NodeFailed(node, step, exc) from exc


async def _suspend(
    graph: CompiledGraph[Any], thread_id: str, run_id: str, step: int, seq: int,
    parent_id: str | None, spec: NodeSpec, state: BaseModel, out: Suspend, path: list[str],
    sink: Sink, tracing: RunTrace | None,
) -> RunResult[Any]:  # fmt: skip
    """The node returned ``Suspend``: apply its update, save the suspension, and
    return the suspended result with its token."""
    node = spec.name
    if not spec.takes_ctx:
        raise cannot_suspend(node)
    origin = f"node `{node}` (Suspend.update)"
    changes: dict[str, int | None] | None = {} if graph._tracks else None
    schema = graph._schema
    state = schema.apply(state, schema.as_changes(out.update, origin), origin, changes)
    path.append(node)
    saved = {"node": node, "payload": out.payload}
    if tracing is not None:  # the resume links to (and continues) this run's trace
        saved["trace"] = tracing.traceparent()
    checkpoint_id = await save(
        graph.store, thread_id, run_id, step, seq, parent_id, "suspended", node, state,
        last_node=node, suspension=saved, changes=changes,
    )  # fmt: skip
    token = await sign(graph.store, thread_id, checkpoint_id)
    suspension = Suspension(node=node, payload=out.payload, token=token)
    result: RunResult[Any] = RunResult(
        status="suspended", state=state, path=path, checkpoint_id=checkpoint_id,
        thread_id=thread_id, suspension=suspension, suspensions=(suspension,),
    )  # fmt: skip
    if sink is not None:
        sink(Suspended(suspension=suspension, result=result))
    return result


async def _suspended_in_branches(fan: ParallelRun, state: BaseModel) -> RunResult[Any]:
    """The run's fan-out ended with branches suspended: the result listing them."""
    assert fan.parent_id is not None
    suspensions = await branch_suspensions(fan.graph.store, fan.thread_id, fan.records())
    result: RunResult[Any] = RunResult(
        status="suspended", state=state, path=fan.path,
        checkpoint_id=fan.parent_id, thread_id=fan.thread_id,
        suspension=suspensions[0], suspensions=tuple(suspensions),
    )  # fmt: skip
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
