"""``CompiledGraph``: the run loop, suspend/resume, streaming and thread queries."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from ._branches import Continue, NodeError, cannot_suspend, find_suspended
from ._context import NodeContext
from ._errors import (
    EngineError,
    IncompatibleCheckpoint,
    InvalidResumeToken,
    InvalidUpdate,
    NodeFailed,
    NodeTimeout,
    RoutingError,
    StaleResumeToken,
    StepLimitExceeded,
    ThreadBusy,
    ThreadNotFound,
    ThreadSuspended,
)
from ._events import Completed, Event, NodeFinished, NodeStarted, Suspended
from ._mermaid import to_mermaid
from ._parallel import ParallelRun
from ._store import CheckpointStore, Lease, validate_thread_id
from ._stream import RunStream
from ._topology import NO_ITEM, Fork, Topology
from ._types import (
    END,
    START,
    BranchInfo,
    Checkpoint,
    CheckpointStatus,
    ErrorInfo,
    RunResult,
    Send,
    StateSnapshot,
    Suspend,
    SuspendToken,
    Suspension,
    _b64,
)

if TYPE_CHECKING:
    from ._graph import NodeSpec, StateGraph

__all__ = ["CompiledGraph"]

StateT = TypeVar("StateT", bound=BaseModel)
Sink = Callable[[Event], None] | None
_log = structlog.get_logger("research_fsm.engine")
_NO_VALUE: Any = object()


_clock: tuple[int, str] = (-1, "")  # the last millisecond formatted, and its text


def _now() -> str:
    """ISO-8601 UTC time to the millisecond (formatted once per millisecond)."""
    global _clock
    ms = int(time.time() * 1000)
    cached_ms, text = _clock
    if ms != cached_ms:
        text = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
        _clock = (ms, text)
    return text


def _in_order(records: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Branch records in declared order, each fan-out's branches after their owner."""

    def key(branch_id: str) -> list[int]:
        chain = []
        for _ in range(len(records)):  # bounded: a damaged record cannot loop
            if branch_id not in records:
                break
            chain.append(records[branch_id]["i"])
            branch_id = records[branch_id]["p"]
        return chain[::-1]

    return sorted(records.items(), key=lambda pair: key(pair[0]))


_Start = tuple[
    BaseModel, str | None, str, int, int, str | None, dict[str, int | None] | None, Any,
    dict[str, dict[str, Any]] | None, tuple[str, Any] | None,
]  # fmt: skip
"""Where a call starts (``CompiledGraph._begin``): state, node (None: from START),
run_id, step, seq, parent_id, changes so far, resume value, an unfinished fan-out's
records and the branch a token resumes. A tuple: built once per call, on the hot path."""


class CompiledGraph(Generic[StateT]):
    """A validated graph bound to a checkpoint store; safe to share across tasks."""

    def __init__(
        self, graph: StateGraph[StateT], store: CheckpointStore, step_limit: int,
        topology: Topology, max_concurrency: int | None = None,
    ) -> None:  # fmt: skip
        self.state_model: type[StateT] = graph.state_model
        self.store = store
        self.step_limit = step_limit
        self.max_concurrency = max_concurrency
        self._schema = graph.schema
        self._nodes = dict(graph.nodes)
        self._edges: dict[str, str | Fork] = topology.exits()
        self._routers = dict(graph.routers)
        self._router_joins = {source: topology.router_join(source) for source in self._routers}
        self._joins = list(graph.joins)
        self._origins = {name: f"node `{name}`" for name in self._nodes}  # for error messages
        self._holders: dict[str, asyncio.Task[Any]] = {}
        # Only stores that save a step's changes alone need them worked out.
        self._tracks = store.saves_changes

    def __repr__(self) -> str:
        return (
            f"CompiledGraph({self.state_model.__name__}, nodes={list(self._nodes)}, "
            f"store={self.store!r})"
        )

    # -- public API ------------------------------------------------------------

    async def run(
        self, input: dict[str, Any] | BaseModel | None, *, thread_id: str
    ) -> RunResult[StateT]:
        """Run the thread from START with ``input`` merged into its state.

        ``input=None`` continues a run that stopped midway (crash, cancellation,
        failure). On a finished thread, new input starts the next turn.
        """
        return await self._execute(validate_thread_id(thread_id), input, None, None)

    async def resume(self, token: SuspendToken | str, value: Any) -> RunResult[StateT]:
        """Answer a suspension: the suspended node's ``resume`` gets ``value``."""
        token = self._parse_token(token)
        return await self._execute(token.thread_id, None, (token, value), None)

    def stream(
        self, input: dict[str, Any] | BaseModel | None, *, thread_id: str
    ) -> RunStream[StateT]:
        """Like ``run`` but yields events as they happen (use ``async with``)."""
        thread_id = validate_thread_id(thread_id)
        return RunStream(self, thread_id, lambda sink: self._execute(thread_id, input, None, sink))

    def stream_resume(self, token: SuspendToken | str, value: Any) -> RunStream[StateT]:
        """Like ``resume`` but yields events as they happen (use ``async with``)."""
        parsed = self._parse_token(token)
        return RunStream(
            self,
            parsed.thread_id,
            lambda sink: self._execute(parsed.thread_id, None, (parsed, value), sink),
        )

    async def get_state(self, thread_id: str) -> StateSnapshot[StateT] | None:
        """The thread's latest snapshot, or ``None`` if the thread does not exist."""
        latest = await self.store.load_latest(validate_thread_id(thread_id))
        return None if latest is None else await self._snapshot(latest)

    async def history(self, thread_id: str) -> AsyncIterator[StateSnapshot[StateT]]:
        """Every saved snapshot of the thread, newest first."""
        async for checkpoint in self.store.history(validate_thread_id(thread_id)):
            yield await self._snapshot(checkpoint)

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread; its resume tokens become stale."""
        await self.store.delete(validate_thread_id(thread_id))

    def to_mermaid(self) -> str:
        """A Mermaid flowchart of the nodes, edges and router branches."""
        return to_mermaid(self._nodes, self._edges, self._routers, self._router_joins)

    # -- tokens ----------------------------------------------------------------

    def _parse_token(self, token: SuspendToken | str) -> SuspendToken:
        parsed = token if isinstance(token, SuspendToken) else SuspendToken.parse(token)
        try:
            validate_thread_id(parsed.thread_id)
        except ValueError:
            raise InvalidResumeToken("resume token names an invalid thread") from None
        return parsed

    async def _sign(self, thread_id: str, checkpoint_id: str) -> SuspendToken:
        return SuspendToken(
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            signature=await self._signature(thread_id, checkpoint_id),
        )

    async def _signature(self, thread_id: str, checkpoint_id: str) -> str:
        key = await self.store.secret()
        message = f"{thread_id}\n{checkpoint_id}".encode()
        return _b64(hmac.new(key, message, hashlib.sha256).digest()[:18])

    async def _verify(self, token: SuspendToken) -> None:
        expected = await self._signature(token.thread_id, token.checkpoint_id)
        given = (
            token.signature.encode("utf-8", "replace") if isinstance(token.signature, str) else b""
        )
        if not hmac.compare_digest(expected.encode(), given):
            raise InvalidResumeToken(
                "resume token signature does not match: it was edited, or issued by another store"
            )

    # -- snapshots ---------------------------------------------------------------

    async def _snapshot(self, cp: Checkpoint) -> StateSnapshot[StateT]:
        suspensions: list[Suspension] = []
        branches: tuple[BranchInfo, ...] = ()
        if cp.status == "suspended" and cp.suspension is not None:
            suspensions.append(Suspension(
                node=cp.suspension["node"], payload=cp.suspension["payload"],
                token=await self._sign(cp.thread_id, cp.checkpoint_id),
            ))  # fmt: skip
        if cp.branches:
            branches = tuple(
                BranchInfo(
                    id=branch_id,
                    node=record["node"],
                    status=record["status"],
                    join=None if record["join"] == END else record["join"],
                )
                for branch_id, record in _in_order(cp.branches)
            )
            suspensions += await self._branch_suspensions(cp.thread_id, cp.branches)
        state = self._restore(cp, nodes=False)  # a snapshot needs no node of the graph
        if isinstance(state, IncompatibleCheckpoint):
            raise state
        return StateSnapshot(
            state=state,  # type: ignore[arg-type]
            status=cp.status,
            next=cp.next,
            suspension=suspensions[0] if suspensions else None,
            checkpoint_id=cp.checkpoint_id,
            created_at=cp.created_at,
            error=ErrorInfo(**cp.error) if cp.error else None,
            suspensions=tuple(suspensions),
            branches=branches,
        )

    async def _branch_suspensions(
        self, thread_id: str, records: dict[str, dict[str, Any]]
    ) -> list[Suspension]:
        found = []
        for branch_id, record in _in_order(records):
            if record["status"] == "suspended":
                found.append(Suspension(
                    node=record["node"], payload=record.get("payload"), branch=branch_id,
                    token=await self._sign(thread_id, record["at"]),
                ))  # fmt: skip
        return found

    # -- the run loop ------------------------------------------------------------

    async def _acquire(self, thread_id: str) -> Lease:
        try:
            return await self.store.acquire(thread_id)
        except ThreadBusy:
            task = self._holders.get(thread_id)
            if task is asyncio.current_task():
                raise
            if task is not None and not (task.done() or task.cancelling()):
                raise
        # A cancelled run (e.g. a stream its consumer closed or dropped) is
        # unwinding in this process: let it release the lease, then take it. With
        # no run of ours registered, the lease may have been let go while the store
        # was asked: ask once more.
        if task is not None:
            await asyncio.wait({task})
        return await self.store.acquire(thread_id)

    async def _execute(
        self,
        thread_id: str,
        input: dict[str, Any] | BaseModel | None,
        resume: tuple[SuspendToken, Any] | None,
        sink: Sink,
    ) -> RunResult[StateT]:
        if resume is not None:
            await self._verify(resume[0])
        lease = await self._acquire(thread_id)
        task = asyncio.current_task()
        if task is not None:
            self._holders[thread_id] = task
        try:
            return await self._run_locked(thread_id, input, resume, sink)
        finally:
            if self._holders.get(thread_id) is task:
                del self._holders[thread_id]
            await lease.release()

    async def _begin(
        self,
        thread_id: str,
        input: dict[str, Any] | BaseModel | None,
        resume: tuple[SuspendToken, Any] | None,
    ) -> _Start | RunResult[StateT]:
        """Where a call starts: from the thread's latest checkpoint and what was given."""
        schema = self._schema
        latest = await self.store.load_latest(thread_id)
        # What changed since the latest checkpoint, for stores that save just that.
        delta: dict[str, int | None] | None = {} if self._tracks else None
        if latest is None:
            return self._fresh_start(thread_id, None, None, input, resume)
        restored = self._restore(latest)
        if isinstance(restored, IncompatibleCheckpoint):
            return self._fresh_start(thread_id, latest, restored, input, resume)
        state = restored
        node, run_id, step, fanout = latest.next, latest.run_id, latest.step, latest.branches
        resume_value: Any = _NO_VALUE
        resumed_branch: tuple[str, Any] | None = None
        if resume is not None:
            token, value = resume
            branch_id = (
                find_suspended(latest.branches, token.checkpoint_id) if latest.branches else None
            )
            if branch_id is not None:
                resumed_branch = (branch_id, value)
            elif (
                latest.checkpoint_id != token.checkpoint_id
                or latest.status != "suspended"
                or latest.branches
            ):
                raise StaleResumeToken(
                    thread_id,
                    token.checkpoint_id,
                    "it was already used, or the thread has moved on since it was issued",
                )
            else:
                resume_value = value
        elif latest.status == "suspended":
            raise ThreadSuspended(thread_id, await self._first_token(latest))
        elif input is None:
            if latest.status == "completed":
                return RunResult(
                    status="completed", state=state, path=[],  # type: ignore[arg-type]
                    checkpoint_id=latest.checkpoint_id, thread_id=thread_id,
                )  # fmt: skip
        else:
            if latest.status != "completed":
                _log.warning(
                    "new input abandons an unfinished run", thread_id=thread_id,
                    run_id=latest.run_id, next_node=latest.next,
                )  # fmt: skip
            state = schema.apply(state, schema.as_changes(input, "input"), "input", delta)
            node, run_id, step, fanout = None, secrets.token_hex(8), 0, None
        return (
            state, node, run_id, step, latest.seq, latest.checkpoint_id, delta, resume_value,
            fanout, resumed_branch,
        )  # fmt: skip

    def _fresh_start(
        self, thread_id: str, latest: Checkpoint | None, misfit: IncompatibleCheckpoint | None,
        input: dict[str, Any] | BaseModel | None, resume: tuple[SuspendToken, Any] | None,
    ) -> _Start:  # fmt: skip
        """A run from START on ``input`` alone: on a new thread, or on one whose
        latest checkpoint this graph cannot continue (``misfit``)."""
        if misfit is not None and (input is None or resume is not None):
            raise misfit
        if resume is not None:
            raise StaleResumeToken(
                thread_id, resume[0].checkpoint_id, "the thread no longer exists"
            )
        if input is None:
            raise ThreadNotFound(thread_id, "; pass input to start it")
        if misfit is not None:
            _log.warning("new input starts a fresh run", thread_id=thread_id, reason=str(misfit))
        # the first checkpoint of such a run holds the whole state
        seq, parent = (0, None) if latest is None else (latest.seq, latest.checkpoint_id)
        state = self._schema.initial(input)
        return (state, None, secrets.token_hex(8), 0, seq, parent, None, _NO_VALUE, None, None)

    def _restore(
        self, latest: Checkpoint, *, nodes: bool = True
    ) -> BaseModel | IncompatibleCheckpoint:
        """``latest``'s state as a model, or why this graph cannot continue it
        (its state does not validate, or, with ``nodes``, its next node is gone)."""
        thread_id = latest.thread_id
        saved_nodes = [latest.next, (latest.suspension or {}).get("node")]
        saved_nodes += [record.get("node") for record in (latest.branches or {}).values()]
        for node in saved_nodes if nodes else ():
            if isinstance(node, str) and node not in self._nodes:
                return IncompatibleCheckpoint(
                    thread_id, f"its saved run is at node `{node}`, which this graph has no more",
                    node=node,
                )  # fmt: skip
        try:
            return self._schema.coerce(latest.state)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "state"
            return IncompatibleCheckpoint(
                thread_id,
                f"its saved state no longer fits `{self.state_model.__name__}`: field "
                f"`{field}`: {error['msg']}",
                field=field,
            )

    async def _run_locked(
        self,
        thread_id: str,
        input: dict[str, Any] | BaseModel | None,
        resume: tuple[SuspendToken, Any] | None,
        sink: Sink,
    ) -> RunResult[StateT]:
        begun = await self._begin(thread_id, input, resume)
        if isinstance(begun, RunResult):
            return begun
        state, node, run_id, step, seq, parent_id, delta, resume_value, fanout, resumed = begun
        del begun  # holds the starting state: let it go as the run moves on
        schema, tracks = self._schema, self._tracks
        path: list[str] = []
        pending_error: ErrorInfo | None = None
        outcome: Continue | None = None  # how a fan-out ended (None: suspended)
        fan: ParallelRun | None = None  # a fan-out that just ended
        if fanout is not None:
            fan = ParallelRun(
                self, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id, step=step
            )
            outcome = await fan.restart(fanout, state, resumed)
        elif node is None:
            # A fresh start (new thread or next turn): checkpoint the input first,
            # so a crash or cancellation in the first node loses nothing and
            # ``run(None)`` continues from there.
            first: str | Fork = await self._route(START, state)
            if isinstance(first, Fork):
                fan = ParallelRun(
                    self, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id, step=step
                )
                await fan.begin(first, state, delta, None)
                outcome = await fan.run()
            else:
                node = first
                seq += 1
                parent_id = await self._save(
                    thread_id, run_id, step, seq, parent_id,
                    "completed" if node == END else "running", node, state, last_node=None,
                    changes=delta,
                )  # fmt: skip
        nodes = self._nodes
        limit = self.step_limit

        while True:
            if fan is not None:
                if outcome is None:
                    return await self._suspended_in_branches(fan, state)
                node, state, pending_error = outcome.node, outcome.state, outcome.error
                seq, parent_id, step = fan.seq, fan.parent_id, fan.step
                fan = None
            if node == END or node is None:
                break
            if len(path) >= limit:
                raise StepLimitExceeded(limit, path)
            spec = nodes[node]
            ctx = NodeContext(
                thread_id=thread_id, run_id=run_id, step=step, node=node,
                error=pending_error, _sink=sink,
            )  # fmt: skip
            pending_error = None
            resuming = resume_value is not _NO_VALUE
            if resuming:
                ctx.resume_value, ctx.resuming = resume_value, True
                resume_value = _NO_VALUE
            if sink is not None:
                sink(NodeStarted(node=node, step=step))
            started = time.perf_counter() if sink is not None else 0.0
            try:
                out = await self._invoke(spec, state, ctx, resuming)
                if isinstance(out, Suspend):
                    if not spec.takes_ctx:
                        raise cannot_suspend(node)
                    origin = f"node `{node}` (Suspend.update)"
                    delta = {} if tracks else None
                    state = schema.apply(
                        state, schema.as_changes(out.update, origin), origin, delta
                    )
                    path.append(node)
                    return await self._suspend(
                        thread_id, run_id, step, seq + 1, parent_id, node, state, out, path,
                        sink, delta,
                    )  # fmt: skip
                origin = self._origins[node]
                changes = schema.as_changes(out, origin)
                delta = {} if tracks else None
                new_state = schema.apply(state, changes, origin, delta)
            except (NodeError, InvalidUpdate) as failure:
                cause = failure.cause if isinstance(failure, NodeError) else failure
                if spec.on_error is not None:
                    _log.warning(
                        "node failed; routing to its on_error node", thread_id=thread_id,
                        node=node, on_error=spec.on_error, error=repr(cause),
                    )  # fmt: skip
                    pending_error = ErrorInfo(node, type(cause).__name__, str(cause))
                    path.append(node)  # executed (and failed): counts toward step_limit
                    node = spec.on_error
                    continue
                if not resuming:  # a failed resume keeps the suspension (and its token)
                    await self._save_failure(
                        thread_id, run_id, step, seq + 1, parent_id, node, state, cause
                    )
                raise NodeFailed(node, step, cause) from cause
            try:
                target = await self._route(node, new_state)
            except Exception as exc:
                await self._save_failure(
                    thread_id, run_id, step, seq + 1, parent_id, node, state, exc
                )
                if isinstance(exc, EngineError):
                    raise
                raise NodeFailed(node, step, exc) from exc
            state = new_state
            step += 1
            path.append(node)
            if isinstance(target, Fork):
                fan = ParallelRun(
                    self, thread_id, run_id, sink, path, seq=seq, parent_id=parent_id, step=step
                )
                await fan.begin(target, state, delta, node)
                if sink is not None:
                    sink(NodeFinished(
                        node=node, step=step - 1, update=changes,
                        duration=time.perf_counter() - started,
                    ))  # fmt: skip
                outcome = await fan.run()
                continue
            seq += 1
            parent_id = await self._save(
                thread_id, run_id, step, seq, parent_id,
                "completed" if target == END else "running", target, state, last_node=node,
                changes=delta,
            )  # fmt: skip
            if sink is not None:
                sink(NodeFinished(
                    node=node, step=step - 1, update=changes,
                    duration=time.perf_counter() - started,
                ))  # fmt: skip
            node = target

        assert parent_id is not None
        result: RunResult[StateT] = RunResult(
            status="completed", state=state, path=path,  # type: ignore[arg-type]
            checkpoint_id=parent_id, thread_id=thread_id,
        )  # fmt: skip
        if sink is not None:
            sink(Completed(result=result))
        return result

    async def _first_token(self, latest: Checkpoint) -> SuspendToken:
        if latest.branches:
            found = await self._branch_suspensions(latest.thread_id, latest.branches)
            if found:
                return found[0].token
        return await self._sign(latest.thread_id, latest.checkpoint_id)

    async def _suspended_in_branches(self, fan: ParallelRun, state: BaseModel) -> RunResult[StateT]:
        assert fan.parent_id is not None
        suspensions = await self._branch_suspensions(fan.thread_id, fan.records())
        result: RunResult[StateT] = RunResult(
            status="suspended", state=state, path=fan.path,  # type: ignore[arg-type]
            checkpoint_id=fan.parent_id, thread_id=fan.thread_id,
            suspension=suspensions[0], suspensions=tuple(suspensions),
        )  # fmt: skip
        if fan.sink is not None:
            fan.sink(Suspended(suspension=suspensions[0], result=result))
        return result

    async def _invoke(
        self, spec: NodeSpec, state: BaseModel, ctx: NodeContext, resuming: bool
    ) -> Any:
        attempt = 1
        while True:
            if resuming and spec.resume is not None:
                coro = spec.resume(state, ctx.resume_value, ctx)
            else:
                coro = spec.call(state, ctx)
            try:
                if spec.timeout is None:
                    return await coro
                async with asyncio.timeout(spec.timeout) as scope:
                    return await coro
            except Exception as raised:
                exc: Exception = raised
                if spec.timeout is not None and scope.expired():
                    exc = NodeTimeout(spec.name, spec.timeout)
                policy = spec.retry
                if policy is None or not policy.should_retry(exc, attempt):
                    raise NodeError(exc) from raised
                ctx.log.warning("node failed; retrying", attempt=attempt, error=repr(exc))
                await asyncio.sleep(policy.delay(attempt))
                attempt += 1

    async def _route(self, source: str, state: BaseModel) -> str | Fork:
        target = self._edges.get(source)
        if target is not None:
            return target
        router = self._routers[source]
        key = router.fn(state)
        if router.is_async:
            key = await key
        if isinstance(key, (list, tuple)):
            return self._fork(source, key)
        try:
            return router.targets[key]
        except (KeyError, TypeError):
            raise RoutingError(source, key, list(router.targets)) from None

    def _fork(self, source: str, keys: list[Any] | tuple[Any, ...]) -> str | Fork:
        """A router's list: the branches to start (an empty list goes to the join)."""
        router = self._routers[source]
        join = self._router_joins[source] or END
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

    async def _save(
        self, thread_id: str, run_id: str, step: int, seq: int, parent_id: str | None,
        status: CheckpointStatus, next_node: str | None, state: BaseModel, *,
        last_node: str | None, suspension: dict[str, Any] | None = None,
        error: dict[str, str] | None = None, changes: dict[str, int | None] | None = None,
        branches: dict[str, dict[str, Any]] | None = None,
        changed_branches: tuple[str, ...] | None = None,
    ) -> str:  # fmt: skip
        checkpoint_id = os.urandom(12).hex()
        await self.store.save(
            Checkpoint(
                thread_id=thread_id, checkpoint_id=checkpoint_id, parent_id=parent_id,
                seq=seq, run_id=run_id, step=step, status=status,
                next=None if next_node == END else next_node, state=state,
                created_at=_now(), suspension=suspension, error=error, last_node=last_node,
                changes=changes, branches=branches, changed_branches=changed_branches,
            )
        )  # fmt: skip
        return checkpoint_id

    async def _save_failure(
        self, thread_id: str, run_id: str, step: int, seq: int, parent_id: str | None,
        node: str, state: BaseModel, cause: BaseException,
    ) -> None:  # fmt: skip
        error = {"node": node, "exc_type": type(cause).__name__, "message": str(cause)}
        await self._save(
            thread_id, run_id, step, seq, parent_id, "failed", node, state,
            last_node=node, error=error, changes={},
        )  # fmt: skip

    async def _suspend(
        self, thread_id: str, run_id: str, step: int, seq: int, parent_id: str | None,
        node: str, state: BaseModel, out: Suspend, path: list[str], sink: Sink,
        changes: dict[str, int | None] | None,
    ) -> RunResult[StateT]:  # fmt: skip
        checkpoint_id = await self._save(
            thread_id, run_id, step, seq, parent_id, "suspended", node, state,
            last_node=node, suspension={"node": node, "payload": out.payload},
            changes=changes,
        )  # fmt: skip
        suspension = Suspension(
            node=node, payload=out.payload, token=await self._sign(thread_id, checkpoint_id)
        )
        result: RunResult[StateT] = RunResult(
            status="suspended", state=state, path=path,  # type: ignore[arg-type]
            checkpoint_id=checkpoint_id, thread_id=thread_id, suspension=suspension,
            suspensions=(suspension,),
        )  # fmt: skip
        if sink is not None:
            sink(Suspended(suspension=suspension, result=result))
        return result
