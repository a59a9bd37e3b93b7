"""``Run``: one call's cursor on its thread, and the only writer of its checkpoints.

The run loop (``_runloop``) makes a ``Run`` from where ``_restore.begin`` put the call;
the parallel runner (``_parallel``) shares it while a fan-out is in flight. The run
holds where the call is (its step, the thread's ``seq`` and the checkpoint the next
save follows, the nodes executed), saves every checkpoint the call writes (a step,
a failure, a suspension, a pause at a breakpoint) and builds each node's context.
``seq`` and the parent checkpoint move in one place: ``save``, once the store took
the checkpoint. ``take_step`` calls one node and applies its update, for the loop and for
a branch alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypedDict, Unpack

from pydantic import BaseModel

from ._branches import Branch
from ._command import Applied, Command, apply_several, command_target
from ._context import NodeContext, parent_thread_of
from ._events import Completed, Sink, StepState, Suspended
from ._interrupt import Interruption
from ._plan import NO_ITEM, Breakpoints, Fork, NodeSpec, Plan
from ._records import BranchRecord, OriginRecord, SuspensionRecord, Where
from ._steps import NO_VALUE, ChildSuspend, cannot_suspend, invoke, now, route, route_now
from ._tokens import branch_suspensions, sign
from ._tracing import RunTrace
from ._types import Checkpoint, CheckpointStatus, ErrorInfo, RunResult, Suspend, Suspension
from .store import new_checkpoint_id

__all__ = ["Extra", "RouteFailed", "Run", "Stepped", "Suspending"]

Stepped = tuple["dict[str, Any] | Applied", BaseModel, "str | Fork"]
"""A node's step (``Run.take_step``): its update (``Applied``: a list of them), the
state after it, and where the run goes next."""


class Suspending(Exception):
    """The node returned ``Suspend`` (``Run.take_step``): its update, applied."""

    def __init__(self, out: Suspend, update: dict[str, object], state: BaseModel) -> None:
        self.out = out
        self.update = update
        """The suspension's update (``Suspend.update``)."""
        self.state = state
        """The state with the update applied."""


class RouteFailed(Exception):
    """Routing after a node raised ``cause`` (``Run.take_step``)."""

    def __init__(self, cause: Exception) -> None:
        self.cause = cause


class Extra(TypedDict, total=False):
    """What a checkpoint saves besides a step's (``Run.save``): its suspension, its
    error, the in-flight branch records (with the ids changed since the last save;
    ``None``: all), and how a checkpoint not made by a step came about."""

    suspension: SuspensionRecord | None
    error: dict[str, str] | None
    branches: dict[str, BranchRecord] | None
    changed_branches: tuple[str, ...] | None
    origin: OriginRecord | None


class Run:
    """One call's position on its thread (``step``, ``seq``, ``parent_id``, ``path``)
    and what it runs with (plan, sink, tracing, breakpoints)."""

    tracing: RunTrace | None = None
    """The run's trace, when it is recorded (``traced``)."""
    call: Callable[[NodeSpec, BaseModel, NodeContext, bool], Awaitable[object]] = staticmethod(
        invoke
    )
    """How a node is called: ``_steps.invoke``, or in a node span when traced."""

    def __init__(
        self,
        plan: Plan,
        thread_id: str,
        run_id: str,
        step: int,
        seq: int,
        parent_id: str | None,
        sink: Sink = None,
        stops: Breakpoints | None = None,
        parent_thread: str | None = None,
    ) -> None:
        self.plan = plan
        self.store = plan.store
        self.origins = plan.origins
        self.thread_id = thread_id
        self.run_id = run_id
        self.step = step
        """The step number of the next node."""
        self.seq = seq
        """The ``seq`` of the thread's latest checkpoint (the next save's is one more)."""
        self.parent_id = parent_id
        """The thread's latest checkpoint: the next save's parent."""
        self.path: list[str] = []
        """The nodes this call executed, in order."""
        self.sink = sink
        self.stops = stops
        self.parent_thread = parent_thread_of(thread_id) or parent_thread
        """The thread whose subgraph node runs this one (``None``: a top-level thread)."""
        self.answers: tuple[object, ...] = ()
        """The answers the resumed node's earlier ``interrupt()`` calls were given
        (``_restore``), handed to it with the resume value."""

    def traced(self, tracing: RunTrace) -> None:
        """Record the run in ``tracing``: each node in a span of its own."""
        self.tracing = tracing
        self.call = tracing.invoke

    # -- one node --------------------------------------------------------------

    def context(self, node: str, error: ErrorInfo | None, resume_value: object) -> NodeContext:
        """The context of ``node``'s execution as the run's next step (resumed with
        ``resume_value`` unless it is ``NO_VALUE``)."""
        ctx = NodeContext(
            thread_id=self.thread_id,
            run_id=self.run_id,
            step=self.step,
            node=node,
            error=error,
            _sink=self.sink,
        )
        if resume_value is not NO_VALUE:
            ctx.resume_value = resume_value
            ctx.resuming = True
            ctx.answers = (*self.answers, resume_value)
        return ctx

    def branch_context(self, node: str, step: int, branch: Branch) -> NodeContext:
        """The context of ``node``'s execution at ``step`` in ``branch`` (taking the
        error and resume value the branch holds for it)."""
        ctx = NodeContext(
            thread_id=self.thread_id,
            run_id=self.run_id,
            step=step,
            node=node,
            error=branch.pending_error,
            _sink=self.sink,
            branch=branch.id,
            item=None if branch.item is NO_ITEM else branch.item,
            scope=branch.key,
        )
        branch.pending_error = None
        if branch.resume_value is not NO_VALUE:
            ctx.resume_value = branch.resume_value
            ctx.resuming = True
            ctx.answers = (*branch.answers, branch.resume_value)
            branch.resume_value = NO_VALUE
        return ctx

    async def take_step(
        self,
        spec: NodeSpec,
        state: BaseModel,
        ctx: NodeContext,
        changes: dict[str, int | None] | None,
    ) -> Stepped:
        """Call ``spec``'s node on ``state``, apply its update and route: the update,
        the state after it and where the run goes (``changes``: the fields the update
        changed, filled in when tracked). Raises ``NodeError`` or ``InvalidUpdate``
        (the node failed), ``Suspending`` (it suspended) or ``RouteFailed`` (its
        route failed)."""
        out = await self.call(spec, state, ctx, ctx.resuming)
        if type(out) is not dict:
            if isinstance(out, Suspend):
                raise self._suspending(spec, state, out, changes)
            if type(out) is Command:
                return await self._commanded(spec, state, out, changes)
            if type(out) is list:
                return await self._several(spec, state, out, changes)
        node = spec.name
        origin = self.origins[node]
        schema = spec.schema
        update = schema.as_changes(out, origin)
        after = schema.apply(state, update, origin, changes)
        try:
            target = route_now(self.plan, node, after)  # no await unless the router is async
            if target is None:
                target = await route(self.plan, node, after)
            return update, after, target
        except Exception as exc:
            raise RouteFailed(exc) from exc

    async def _commanded(
        self,
        spec: NodeSpec,
        state: BaseModel,
        out: Command,
        changes: dict[str, int | None] | None,
    ) -> Stepped:
        """The node returned a ``Command``: its update applied, and where it goes."""
        node = spec.name
        origin = self.origins[node]
        schema = spec.schema
        update = schema.as_changes(out.update, origin)
        after = schema.apply(state, update, origin, changes)
        try:
            if out.goto is None:  # an update alone: the graph routes
                return update, after, await route(self.plan, node, after)
            return update, after, command_target(self.plan, node, out.goto)
        except Exception as exc:
            raise RouteFailed(exc) from exc

    async def _several(
        self,
        spec: NodeSpec,
        state: BaseModel,
        out: list[object],
        changes: dict[str, int | None] | None,
    ) -> Stepped:
        """The node returned a list of updates and ``Command``s: each applied in order,
        and where its one ``goto`` (else the graph) leads."""
        node = spec.name
        applied = apply_several(spec.schema, state, node, out, self.origins[node], changes)
        after = applied.states[-1]
        try:
            if applied.goto is None:
                return applied, after, await route(self.plan, node, after)
            return applied, after, command_target(self.plan, node, applied.goto)
        except Exception as exc:
            raise RouteFailed(exc) from exc

    def _suspending(
        self,
        spec: NodeSpec,
        state: BaseModel,
        out: Suspend,
        changes: dict[str, int | None] | None,
    ) -> Suspending:
        """The node returned ``Suspend``: its update applied to ``state``."""
        node = spec.name
        if not spec.takes_ctx and type(out) is not Interruption:  # interrupt() needs no ctx
            raise cannot_suspend(node)
        origin = f"node `{node}` (Suspend.update)"
        schema = spec.schema
        update = schema.as_changes(out.update, origin)
        return Suspending(out, update, schema.apply(state, update, origin, changes))

    # -- saving ----------------------------------------------------------------

    async def save(
        self,
        status: CheckpointStatus,
        next_node: str | None,
        state: BaseModel,
        last_node: str | None,
        changes: dict[str, int | None] | None,
        **extra: Unpack[Extra],
    ) -> str:
        """Save a checkpoint after the latest; returns its id. ``next_node``: where
        the run goes on (``None``: it ended); ``changes``: the fields changed since,
        for stores that save just those."""
        seq = self.seq + 1
        checkpoint_id = new_checkpoint_id(seq)
        await self.store.save(
            Checkpoint(
                thread_id=self.thread_id,
                checkpoint_id=checkpoint_id,
                parent_id=self.parent_id,
                seq=seq,
                run_id=self.run_id,
                step=self.step,
                status=status,
                next=next_node,
                state=state,
                created_at=now(),
                last_node=last_node,
                changes=changes,
                parent_thread_id=self.parent_thread,
                **extra,
            )
        )
        self.seq = seq  # the one place the run's position in its thread moves
        self.parent_id = checkpoint_id
        return checkpoint_id

    async def fail(self, node: str, state: BaseModel, cause: BaseException) -> None:
        """Save that ``node`` failed with ``cause`` (the state is the one it was given)."""
        error = {"node": node, "exc_type": type(cause).__name__, "message": str(cause)}
        await self.save("failed", node, state, node, {}, error=error)

    async def suspend(
        self, node: str, suspending: Suspending, changes: dict[str, int | None] | None
    ) -> RunResult[BaseModel]:
        """``node`` suspended (``take_step``): save the suspension, and return the
        suspended result with its token."""
        out = suspending.out
        state = suspending.state
        self.path.append(node)
        # A subgraph's: which child suspension it is, and on which child thread.
        passed = out if isinstance(out, ChildSuspend) else None
        saved = SuspensionRecord(
            node,
            out.payload,
            child=None if passed is None else passed.child,
            trace=self._traceparent(),  # the resume links to (and continues) this trace
            answers=out.answers if type(out) is Interruption else (),
        )
        child = None if passed is None else passed.thread
        checkpoint_id = await self.save("suspended", node, state, node, changes, suspension=saved)
        token = await sign(self.store, self.thread_id, checkpoint_id)
        suspension = Suspension(
            node=node,
            payload=out.payload,
            token=token,
            child_thread_id=child,
            answers=saved.answers,
        )
        # The "values" stream shows the state once: again only if the Suspend changed it.
        return self._suspended(state, suspension, state if suspending.update else None)

    async def pause(
        self,
        where: Where,
        node: str,
        next_node: str,
        state: BaseModel,
        changes: dict[str, int | None] | None = None,
    ) -> RunResult[BaseModel]:
        """Save a pause at a breakpoint ``where`` ``node`` (the run goes on at
        ``next_node``) and return the suspended result with its token."""
        if changes is None and self.plan.tracks:
            changes = {}
        # The resume links to (and continues) this run's trace.
        saved = SuspensionRecord(node, None, where, trace=self._traceparent())
        path = self.path
        last_node = path[-1] if path else None
        checkpoint_id = await self.save(
            "suspended", next_node, state, last_node, changes, suspension=saved
        )
        token = await sign(self.store, self.thread_id, checkpoint_id)
        suspension = Suspension(node=node, payload=None, token=token, breakpoint=where)
        return self._suspended(state, suspension, state if where == "after" else None)

    def _traceparent(self) -> str | None:
        """The run's trace context, saved with a suspension (``None``: not traced)."""
        return None if self.tracing is None else self.tracing.traceparent()

    async def suspended_in_branches(
        self, state: BaseModel, records: dict[str, BranchRecord]
    ) -> RunResult[BaseModel]:
        """The run's fan-out ended with branches suspended (its ``records``, saved):
        the result listing them."""
        found = await branch_suspensions(self.store, self.thread_id, records, self.run_id)
        return self._suspended(state, found[0], None, tuple(found))

    def _suspended(
        self,
        state: BaseModel,
        suspension: Suspension,
        sent: BaseModel | None,
        suspensions: tuple[Suspension, ...] | None = None,
    ) -> RunResult[BaseModel]:
        """The suspended result (and its events: ``sent``, unless ``None``, as the
        state after the step first)."""
        assert self.parent_id is not None
        result: RunResult[BaseModel] = RunResult(
            status="suspended",
            state=state,
            path=self.path,
            checkpoint_id=self.parent_id,
            thread_id=self.thread_id,
            suspension=suspension,
            suspensions=(suspension,) if suspensions is None else suspensions,
        )
        sink = self.sink
        if sink is not None:
            if sent is not None:
                sink(StepState(state=sent))
            sink(Suspended(suspension=suspension, result=result))
        return result

    def complete(self, state: BaseModel) -> RunResult[BaseModel]:
        """The run reached END: its result (and the ``Completed`` event)."""
        assert self.parent_id is not None
        result: RunResult[BaseModel] = RunResult(
            status="completed",
            state=state,
            path=self.path,
            checkpoint_id=self.parent_id,
            thread_id=self.thread_id,
        )
        if self.sink is not None:
            self.sink(Completed(result=result))
        return result
