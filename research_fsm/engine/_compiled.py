"""``CompiledGraph``: the public face of a compiled graph (run, resume, stream,
thread queries) and the per-thread lease around each call.

A call goes down in a straight line: ``_execute`` takes the thread's lease and
calls ``_runloop.run``, which starts where ``_restore.begin`` says and runs node
after node (one step's pieces in ``_steps``; fan-outs in ``_parallel``). Everything
the run loop reads of the graph is its ``Plan`` (``_plan``); resume tokens are in
``_tokens``; a thread's history edited by hand (``update_state``, a run from a past
checkpoint, ``fork``) in ``_edit``."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from ._breakpoints import breakpoints
from ._children import children_at
from ._command import Command
from ._edit import check_as_node, check_checkpoint_id, fork, rewind, update
from ._errors import (
    CheckpointNotFound,
    IncompatibleCheckpoint,
    InvalidUpdate,
    ThreadBusy,
    UnknownSubgraph,
)
from ._events import Sink, Suspended
from ._family import child_threads
from ._langgraph import langgraph_call, missing
from ._mermaid import to_mermaid
from ._modes import StreamMode, parse_modes
from ._plan import Breakpoints, Plan
from ._restore import restore
from ._runloop import run
from ._stream import RunStream
from ._tokens import branch_suspensions, in_order, parse_token, sign, verify
from ._types import (
    END,
    BranchInfo,
    Checkpoint,
    ChildThread,
    ErrorInfo,
    LazyState,
    Origin,
    RunResult,
    StateSnapshot,
    SuspendToken,
    Suspension,
    ThreadPage,
)
from .store import (
    CheckpointStore,
    Lease,
    ThreadListing,
    thread_query,
    validate_limit,
    validate_thread_id,
)

__all__ = ["CompiledGraph"]


def _takes_lease(store: CheckpointStore) -> bool:
    """Whether ``store.delete`` takes the caller's ``lease`` (stores written for an
    older protocol do not)."""
    try:
        parameters = inspect.signature(store.delete).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "lease" or p.kind is p.VAR_KEYWORD for p in parameters)


StateT = TypeVar("StateT", bound=BaseModel)


class CompiledGraph(Generic[StateT]):
    """A validated graph bound to a checkpoint store; safe to share across tasks."""

    def __init__(
        self,
        plan: Plan,
        state_model: type[StateT],
        rebind: Callable[[CheckpointStore], CompiledGraph[StateT]] | None = None,
    ) -> None:
        self.state_model = state_model
        self.store = plan.store
        self.step_limit = plan.step_limit
        self.max_concurrency = plan.max_concurrency
        self._plan = plan
        self._holders: dict[str, asyncio.Task[Any]] = {}
        self._rebind = rebind

    def __repr__(self) -> str:
        return (
            f"CompiledGraph({self.state_model.__name__}, nodes={list(self._plan.nodes)}, "
            f"store={self.store!r})"
        )

    if not TYPE_CHECKING:  # LangGraph's names, to the type checker unknown as they are

        def __getattr__(self, name: str) -> Any:
            raise missing("CompiledGraph", name)

    @property
    def plan(self) -> Plan:
        """What the engine reads of this graph (internal to the engine: a parent graph
        reads its subgraphs' plans through it)."""
        return self._plan

    def on_store(self, store: CheckpointStore) -> CompiledGraph[StateT]:
        """This graph as a subgraph node of a graph on ``store`` runs it: compiled
        without a store, the same graph compiled again on ``store`` (so its child
        threads live in the parent's store); else itself."""
        if self._rebind is None or store is self.store:
            return self
        return self._rebind(store)

    # -- public API ------------------------------------------------------------

    @langgraph_call
    async def run(
        self,
        input: dict[str, Any] | BaseModel | Command[Any] | None,
        *,
        thread_id: str,
        checkpoint_id: str | None = None,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> RunResult[StateT]:
        """Run the thread from START with ``input`` merged into its state.

        ``input=None`` continues a run that stopped midway (crash, cancellation,
        failure). On a finished thread, new input starts the next turn.

        ``checkpoint_id``: continue from that past checkpoint of the thread instead of
        its latest, starting a new line of history (the latest line's resume tokens
        become stale); with ``input=None`` on a suspended checkpoint, returns the
        suspension again with a new token.

        ``input=Command(update=values)``: edit the thread where it stands (with
        ``checkpoint_id``, that past checkpoint, on a new line of history; the old
        line stays as it was) as ``update_state`` does, and go on from there in the
        same call; a pause at a breakpoint goes on past it.

        ``interrupt_before``/``interrupt_after``: this call's breakpoints, in place
        of the compiled ones (``[]``: none).
        """
        thread_id = validate_thread_id(thread_id)
        checkpoint_id = check_checkpoint_id(checkpoint_id)
        stops = (
            self._plan.breakpoints
            if interrupt_before is None and interrupt_after is None
            else self._stops(interrupt_before, interrupt_after)
        )
        return await self._execute(thread_id, input, None, None, stops, checkpoint_id)

    @langgraph_call
    async def resume(
        self,
        token: SuspendToken | str,
        value: Any,
        *,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> RunResult[StateT]:
        """Answer a suspension: the suspended node's ``resume`` gets ``value``
        (a pause at a breakpoint takes ``None`` and goes on)."""
        stops = self._stops(interrupt_before, interrupt_after)
        token = parse_token(token)
        return await self._execute(token.thread_id, None, (token, value), None, stops)

    @langgraph_call
    def stream(
        self,
        input: dict[str, Any] | BaseModel | Command[Any] | None,
        *,
        thread_id: str,
        checkpoint_id: str | None = None,
        mode: StreamMode | Sequence[StreamMode] = "events",
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> RunStream[StateT]:
        """Like ``run`` but yields events as they happen (use ``async with``).

        ``mode``: ``"events"`` (the events), ``"updates"`` (``{node: update}``; on a
        suspension ``{"__interrupt__": result.suspensions}``, as LangGraph's),
        ``"values"`` (the state after each step), ``"custom"`` (``ctx.emit``'s
        ``Emitted`` events), or a list of them (``(mode, chunk)`` pairs)."""
        thread_id = validate_thread_id(thread_id)
        checkpoint_id = check_checkpoint_id(checkpoint_id)
        modes = parse_modes(mode)
        stops = self._stops(interrupt_before, interrupt_after)
        return RunStream(
            lambda sink: self._execute(thread_id, input, None, sink, stops, checkpoint_id), modes
        )

    @langgraph_call
    def stream_resume(
        self,
        token: SuspendToken | str,
        value: Any,
        *,
        mode: StreamMode | Sequence[StreamMode] = "events",
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> RunStream[StateT]:
        """Like ``resume`` but yields events as they happen (use ``async with``);
        ``mode`` as for ``stream``."""
        parsed = parse_token(token)
        modes = parse_modes(mode)
        stops = self._stops(interrupt_before, interrupt_after)
        return RunStream(
            lambda sink: self._execute(parsed.thread_id, None, (parsed, value), sink, stops),
            modes,
        )

    async def get_state(
        self, thread_id: str, *, checkpoint_id: str | None = None, subgraphs: bool = False
    ) -> StateSnapshot[StateT] | None:
        """The thread's latest snapshot, or ``None`` if the thread does not exist;
        with ``checkpoint_id``, that past snapshot (``CheckpointNotFound`` if the
        thread has no such checkpoint). ``subgraphs``: each of ``snapshot.children``
        carries the child thread's latest snapshot (theirs in turn)."""
        thread_id = validate_thread_id(thread_id)
        checkpoint_id = check_checkpoint_id(checkpoint_id)
        if checkpoint_id is not None:
            found = await self.store.load(thread_id, checkpoint_id)
            if found is None:
                raise CheckpointNotFound(thread_id, checkpoint_id)
            return await self._snapshot(found, subgraphs)
        latest = await self.store.load_latest(thread_id)
        return None if latest is None else await self._snapshot(latest, subgraphs)

    def subgraph(self, node: str) -> CompiledGraph[Any]:
        """The child graph of subgraph node ``node`` as this graph runs it (on this
        graph's store); ``"outer/inner"`` reaches a subgraph's own subgraph. Use it to
        read or edit a child thread (``StateSnapshot.children``): ``get_state``,
        ``update_state``, ``history``. ``UnknownSubgraph`` (a ``ValueError``) naming the
        subgraph nodes if ``node`` is none of them."""
        graph: CompiledGraph[Any] = self
        walked: list[str] = []
        for part in node.split("/"):
            children = graph.plan.children or {}
            walked.append(part)
            if part not in children:
                raise UnknownSubgraph(part, "/".join(walked[:-1]) or part, list(children))
            graph = children[part]
        return graph

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[StateSnapshot[StateT]]:
        """The thread's saved snapshots, newest first: every line of its history
        (each snapshot's ``parent_id`` tells the lines apart). ``limit``: at most
        that many; ``before``: only those saved before that checkpoint (the last
        ``checkpoint_id`` of the previous page). A page reads no more of the thread
        than it needs. ``CheckpointNotFound`` when ``before`` is not the thread's."""
        thread_id = validate_thread_id(thread_id)
        limit = validate_limit(limit)
        before = check_checkpoint_id(before, "before")
        async for checkpoint in self.store.history(thread_id, limit=limit, before=before):
            yield await self._snapshot(checkpoint, lazy=True)

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str = "",
        status: str | Collection[str] | None = None,
        children: bool = True,
    ) -> ThreadPage:
        """A page of the threads in this graph's store, most recently updated first
        (``ThreadInfo``: status, the node it stands at, last update, checkpoint count,
        parent thread of a subgraph's child), read without loading whole threads.

        ``limit``: at most that many (1-1000); ``cursor``: the previous page's
        ``next_cursor``; ``prefix``: thread ids starting with it; ``status``: one of
        ``"completed"``, ``"suspended"``, ``"failed"``, ``"running"`` (or a list of
        them), as the latest checkpoint says; ``children=False``: top-level threads
        only. ``InvalidThreadQuery`` names a bad argument and the allowed values.
        The store's threads, of every graph that uses it."""
        thread_query(limit=limit, cursor=cursor, prefix=prefix, status=status, children=children)
        store = self.store
        if not isinstance(store, ThreadListing):
            raise TypeError(
                f"{type(store).__name__} cannot list its threads: it has no "
                "threads(...) method (see research_fsm.engine.store.ThreadListing)"
            )
        return await store.threads(
            limit=limit, cursor=cursor, prefix=prefix, status=status, children=children
        )

    async def update_state(
        self,
        thread_id: str,
        values: dict[str, Any] | BaseModel | None,
        *,
        as_node: str | None = None,
    ) -> StateSnapshot[StateT]:
        """Save a new checkpoint with ``values`` merged into the thread's state through
        the reducers; returns its snapshot.

        With ``as_node``, as if that node had just returned ``values``: the run goes on
        (``run(None, thread_id=...)``) where its edge or router leads. Without, where the
        run goes is unchanged. Takes the thread's lease: ``ThreadBusy`` while a run holds
        it. A suspended thread is refused (``UpdateRefused``) unless ``as_node`` is the
        suspended node: the update then answers the suspension, whose tokens become stale.
        """
        thread_id = validate_thread_id(thread_id)
        as_node = check_as_node(self._plan, as_node)
        lease = await self._acquire(thread_id)
        try:
            saved = await update(self._plan, thread_id, values, as_node)
            if saved is None:  # as_node started a fan-out: its saved start
                saved = await self.store.load_latest(thread_id)
                assert saved is not None
            return await self._snapshot(saved)
        finally:
            await lease.release()

    async def fork(
        self, thread_id: str, checkpoint_id: str | None, new_thread_id: str
    ) -> StateSnapshot[StateT]:
        """Copy the thread's checkpoint ``checkpoint_id`` (``None``: its latest) to the
        new thread ``new_thread_id``, which goes on from there on its own (``run``,
        ``resume`` with its own tokens). A fan-out in flight is copied whole: finished
        branches are not run again. ``ThreadExists`` if ``new_thread_id`` has
        checkpoints; ``CheckpointNotFound`` if ``thread_id`` has no such checkpoint."""
        thread_id = validate_thread_id(thread_id)
        checkpoint_id = check_checkpoint_id(checkpoint_id)
        new_thread_id = validate_thread_id(new_thread_id)
        lease = await self._acquire(new_thread_id)
        try:
            copy = await fork(self._plan, thread_id, checkpoint_id, new_thread_id)
            return await self._snapshot(copy)
        finally:
            await lease.release()

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread; its resume tokens become stale. Takes the thread's lease
        first and holds it to the end: ``ThreadBusy`` (nothing deleted) while a run
        holds it.

        With subgraphs, the child threads its subgraph nodes started go too (theirs
        in turn), each before the thread that names them: a crash midway leaves the
        parent (or a child) that names what is left, and calling this again finishes
        the job (meanwhile a call that needs a deleted child raises
        ``ChildThreadMissing`` and runs nothing)."""
        thread_id = validate_thread_id(thread_id)
        lease = await self._acquire(thread_id)
        try:
            children = self._plan.children
            if children:
                for node, child in await child_threads(self.store, thread_id, children):
                    await children[node].delete_thread(child)
            if _takes_lease(self.store):
                await self.store.delete(thread_id, lease=lease)
                return
        finally:
            await lease.release()
        await self.store.delete(thread_id)  # a store of an older protocol: its own lease

    def to_mermaid(self) -> str:
        """A Mermaid flowchart of the nodes, edges and router branches."""
        return to_mermaid(self._plan)

    def _stops(self, before: object, after: object) -> Breakpoints | None:
        """A call's breakpoints: the compiled ones unless the call names its own."""
        if before is None and after is None:
            return self._plan.breakpoints
        compiled = self._plan.breakpoints
        if compiled is not None:
            before = compiled.before if before is None else before
            after = compiled.after if after is None else after
        return breakpoints(self._plan.nodes, before, after)

    # -- snapshots ---------------------------------------------------------------

    async def _snapshot(
        self, cp: Checkpoint, subgraphs: bool = False, *, lazy: bool = False
    ) -> StateSnapshot[StateT]:
        """``cp`` as a snapshot; ``lazy``: its state validated when first read."""
        suspensions: list[Suspension] = []
        branches: tuple[BranchInfo, ...] = ()
        if cp.status == "suspended" and cp.suspension is not None:
            token = await sign(self.store, cp.thread_id, cp.checkpoint_id)
            suspension = cp.suspension
            suspensions.append(
                Suspension(
                    node=suspension.node,
                    payload=suspension.payload,
                    token=token,
                    breakpoint=suspension.breakpoint,
                    answers=suspension.answers,
                )
            )
        if cp.branches:
            branches = tuple(
                BranchInfo(
                    id=branch_id,
                    node=record.node,
                    status=record.status,
                    join=None if record.join == END else record.join,
                )
                for branch_id, record in in_order(cp.branches)
            )
            suspensions += await branch_suspensions(self.store, cp.thread_id, cp.branches)
        state: BaseModel | LazyState
        if lazy and type(cp.state) is not self._plan.schema.model:  # else nothing to do
            state = LazyState(partial(_state_of, self._plan, cp))
        else:
            state = _state_of(self._plan, cp)
        children: tuple[ChildThread, ...] = ()
        if self._plan.children:
            children, suspensions = await self._children(cp, suspensions, subgraphs)
        written = cp.origin
        by: Origin = "run" if written is None else written.by
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
            parent_id=_parent_of(cp),
            origin=by,
            forked_from=_forked_from(cp),
            children=children,
        )

    async def _children(
        self, cp: Checkpoint, suspensions: list[Suspension], subgraphs: bool
    ) -> tuple[tuple[ChildThread, ...], list[Suspension]]:
        """The child threads ``cp`` names (with their snapshots when ``subgraphs``), and
        ``suspensions`` with the child thread each passed-on one came from."""
        graphs = self._plan.children or {}
        children = []
        passed: dict[str | None, str] = {}
        for at in children_at(cp, graphs):
            child = graphs[at.node]
            latest = await child.store.load_latest(at.thread_id)
            snapshot = None
            if subgraphs and latest is not None:
                snapshot = await child.get_state(at.thread_id, subgraphs=True)
            children.append(
                ChildThread(
                    node=at.node,
                    thread_id=at.thread_id,
                    status=None if latest is None else latest.status,
                    branch=at.branch,
                    snapshot=snapshot,
                )
            )
            if at.passed_on:
                passed[at.branch] = at.thread_id
        if passed:
            suspensions = [
                dataclasses.replace(s, child_thread_id=passed[s.branch])
                if s.branch in passed
                else s
                for s in suspensions
            ]
        return tuple(children), suspensions

    async def _suspended_again(self, copy: Checkpoint, sink: Sink) -> RunResult[StateT]:
        """``run(None, checkpoint_id=...)`` on a suspended checkpoint: its suspension,
        with the new line's token."""
        snapshot = await self._snapshot(copy)
        assert snapshot.suspension is not None
        result: RunResult[StateT] = RunResult(
            status="suspended",
            state=snapshot.state,
            path=[],
            checkpoint_id=copy.checkpoint_id,
            thread_id=copy.thread_id,
            suspension=snapshot.suspension,
            suspensions=snapshot.suspensions,
        )
        if sink is not None:
            sink(Suspended(suspension=snapshot.suspension, result=result))
        return result

    # -- a call: the thread's lease around the run ------------------------------

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

    async def _edited(
        self, thread_id: str, command: Command[Any]
    ) -> tuple[SuspendToken, Any] | None:
        """``run(Command(update=...))``: the update saved as ``update_state`` saves it;
        at a breakpoint's pause, the resume past it (``None``: run on)."""
        if command.goto is not None:
            raise InvalidUpdate(
                f"run(Command(goto={command.goto!r}, ...)): a run's input Command takes "
                "update= only; to go on elsewhere, update_state(thread_id, values, "
                "as_node=...) and run(None, ...), or resume a pause with Command(goto=...)"
            )
        edited = await update(self._plan, thread_id, command.update, None)
        assert edited is not None  # without as_node the update starts no fan-out
        if (
            edited.status == "suspended"
            and edited.suspension is not None
            and edited.suspension.breakpoint
        ):
            return await sign(self.store, thread_id, edited.checkpoint_id), None
        return None

    async def _execute(
        self,
        thread_id: str,
        input: dict[str, Any] | BaseModel | Command[Any] | None,
        resume: tuple[SuspendToken, Any] | None,
        sink: Sink,
        stops: Breakpoints | None = None,
        checkpoint_id: str | None = None,
    ) -> RunResult[StateT]:
        if resume is not None:
            await verify(self.store, resume[0])
        lease = await self._acquire(thread_id)
        task = asyncio.current_task()
        if task is not None:
            self._holders[thread_id] = task
        try:
            if checkpoint_id is not None:
                copy = await rewind(self._plan, thread_id, checkpoint_id)
                if copy is not None and input is None and copy.status == "suspended":
                    return await self._suspended_again(copy, sink)
            if isinstance(input, Command):  # edit where the thread stands, then go on
                resume = await self._edited(thread_id, input)
                return await run(self._plan, thread_id, None, resume, sink, stops)
            return await run(self._plan, thread_id, input, resume, sink, stops)
        finally:
            if self._holders.get(thread_id) is task:
                del self._holders[thread_id]
            await lease.release()


def _state_of(plan: Plan, cp: Checkpoint) -> BaseModel:
    """``cp``'s state as a model (``IncompatibleCheckpoint`` if it no longer fits)."""
    state = restore(plan, cp, nodes=False)  # a snapshot needs no node of the graph
    if isinstance(state, IncompatibleCheckpoint):
        raise state
    return state


def _parent_of(cp: Checkpoint) -> str | None:
    """The checkpoint ``cp`` follows in its line: a rewind's past checkpoint, else its
    parent."""
    written = cp.origin
    if written is not None and written.by == "rewind" and written.checkpoint_id is not None:
        return written.checkpoint_id
    return cp.parent_id


def _forked_from(cp: Checkpoint) -> tuple[str, str] | None:
    """A fork's first checkpoint: the thread and checkpoint it was copied from."""
    written = cp.origin
    if written is None or written.by != "fork":
        return None
    if written.thread_id is None or written.checkpoint_id is None:
        return None
    return written.thread_id, written.checkpoint_id
