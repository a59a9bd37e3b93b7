"""Subgraphs: a compiled graph run as one node of another (``add_node(name, child)``).

The child runs on a thread of its own, in the parent's store, whose id the parent
step derives (``child_thread``): the same step of the same run always finds the same
child thread, so after a crash, a failure or a suspension the child goes on from its
own latest checkpoint and no finished child step runs again. What the node does
depends on where that child thread is:

* none yet: run the child from START on the parent's shared fields (or ``input``);
* running or failed (the parent stopped while the child ran): ``run(None)`` on it;
* suspended: suspend the parent with the child's first suspension (saved with the
  parent's, ``_steps.ChildSuspend``); the parent's token resumes this node, which
  resumes that suspension of the child with the value (when the child has moved on
  to another one, it passes that on instead: the value is never given twice);
* completed (the parent stopped after the child finished): take its final state.

Its final state becomes the parent's update: the shared fields it changed, through
the parent's reducers (``StateSchema.passed_back``), or what ``output`` returns.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ._compiled import CompiledGraph
from ._context import CHILD_OF, NodeContext
from ._errors import ChildThreadMissing
from ._events import Completed, Event, Suspended
from ._family import child_thread
from ._records import BranchRecord, SuspensionRecord
from ._state import StateSchema
from ._steps import ChildSuspend
from ._tokens import first_token
from ._types import Checkpoint, RunResult, SuspendToken
from .store import CheckpointStore

__all__ = ["Subgraph", "child_thread"]

InputFn = Callable[..., Any]
"""``input(parent_state)`` or ``input(parent_state, item)`` (``item``: the ``Send``
item of the branch, else ``None``): the child's input (a dict or a child state model)."""
OutputFn = Callable[[Any], Any]
"""``output(child_state)``: the parent's update (a dict or a partial parent model)."""


def _annotation(model: type[BaseModel], name: str) -> tuple[object, tuple[str, ...]]:
    """A field's type and constraints; not its reducer, which is its own graph's."""
    info = model.model_fields[name]
    kept = (m for m in info.metadata if not callable(m) or isinstance(m, type))
    return (info.annotation, tuple(repr(m) for m in kept))


class Subgraph:
    """The node that runs a compiled child graph (built by ``StateGraph.add_node``)."""

    def __init__(
        self,
        name: str,
        child: CompiledGraph[Any],
        parent: type[BaseModel],
        input: InputFn | None,
        output: OutputFn | None,
    ) -> None:
        self.name = name
        self.child = child
        self.input = input
        self.output = output
        self.parent_schema = StateSchema(parent)
        child_fields = child.state_model.model_fields
        self.child_fields = frozenset(child_fields)
        self.shared = tuple(f for f in parent.model_fields if f in child_fields)
        self.input_takes_item = input is not None and _takes_two(input)

    def on(self, store: CheckpointStore) -> Subgraph:
        """This node in a graph compiled on ``store``: a child compiled without a store
        is compiled again on it (``CompiledGraph.on_store``)."""
        child = self.child.on_store(store)
        if child is self.child:
            return self
        return Subgraph(self.name, child, self.parent_schema.model, self.input, self.output)

    # -- compile-time checks ----------------------------------------------------

    def problems(self, store: CheckpointStore | None, parent: type[BaseModel]) -> list[str]:
        """What stops this child from running inside ``parent`` on ``store`` (``None``:
        the store is not known yet)."""
        found: list[str] = []
        name = self.name
        child = self.child.state_model
        if store is not None and self.child.store is not store:
            found.append(
                f"node `{name}`: its child graph keeps checkpoints in {self.child.store!r:.80}, "
                f"the parent in {store!r:.80}: compile the child without a store (it then "
                "uses the parent's) or with the parent's, so its checkpoints live under the "
                "parent's thread"
            )
        clashing = [f for f in self.shared if _annotation(parent, f) != _annotation(child, f)]
        if clashing and (self.input is None or self.output is None):
            missing = " and ".join(
                f"`{w}=`"
                for w, fn in (("input", self.input), ("output", self.output))
                if fn is None
            )
            details = ", ".join(
                f"`{f}` ({_shown(parent, f)} in `{parent.__name__}`, {_shown(child, f)} in "
                f"`{child.__name__}`)"
                for f in clashing
            )
            found.append(
                f"node `{name}`: fields shared by name differ in type: {details}; "
                f"pass {missing} to map the states"
            )
        if self.input is None:
            required = [
                f
                for f, info in child.model_fields.items()
                if info.is_required() and f not in parent.model_fields
            ]
            if required:
                found.append(
                    f"node `{name}`: the child's required field(s) "
                    f"{', '.join(f'`{f}`' for f in required)} are not in `{parent.__name__}`: "
                    "pass `input=` (parent state -> the child's input)"
                )
        if not self.shared and (self.input is None or self.output is None):
            found.append(
                f"node `{name}`: `{child.__name__}` shares no field with `{parent.__name__}`: "
                "pass `input=` and `output=` to map the states"
            )
        return found

    # -- the node ------------------------------------------------------------

    async def run(self, state: BaseModel, ctx: NodeContext) -> object:
        """Run (or go on with) the child of this step; its result as this node's."""
        thread = self._thread(ctx)
        latest = await self.child.store.load_latest(thread)
        if latest is not None and latest.status == "suspended":
            # The parent stopped after the child suspended: suspend it again.
            return await self._suspended(thread)
        return await self._go_on(state, thread, latest, None, ctx)

    async def resume(self, state: BaseModel, value: object, ctx: NodeContext) -> object:
        """The parent's token was resumed: resume the child's suspension it passed on
        with ``value``."""
        thread = self._thread(ctx)
        latest = await self.child.store.load_latest(thread)
        waiting = latest is None or latest.status == "suspended"
        passed = await self._passed_on(ctx) if waiting else None
        if latest is None and passed is not None:
            # The parent passed on a suspension of this child, which is gone (a
            # delete_thread stopped midway): never run it afresh, never drop the value.
            raise ChildThreadMissing(ctx.thread_id, self.name, thread)
        resume = None
        if latest is not None and latest.status == "suspended":
            token = await first_token(self.child.store, latest)
            if (
                passed is not None
                and token.checkpoint_id != passed
                and not await self._edited(latest, passed)
            ):
                # The child took the value and suspended again before the parent saved
                # that: pass the new suspension on; the value is not given twice.
                return await self._suspended(thread)
            resume = (token, value)
        # Else the child took the value and stopped (or finished) before the parent saved.
        return await self._go_on(state, thread, latest, resume, ctx)

    async def _edited(self, latest: Checkpoint, passed: str) -> bool:
        """Whether the child's ``latest`` suspension is the one passed on (``passed``)
        as edited by hand since: only ``update_state`` checkpoints (a pause's edit keeps
        the pause) lead back to it, or to its fork (the parent's line was rewound or
        forked, ``_edit``). Then the parent's value answers it; else the child took the
        value and asked again."""
        store = self.child.store
        here: Checkpoint | None = latest
        while here is not None:
            origin = here.origin
            if origin is not None and origin.by == "fork":  # a fork or new line carried it
                return origin.checkpoint_id == passed
            if origin is None or origin.by != "update" or here.parent_id is None:
                return False
            if here.parent_id == passed:
                return True
            here = await store.load(here.thread_id, here.parent_id)
        return False

    async def _suspended(self, thread: str) -> ChildSuspend:
        """The child's (first) pending suspension, passed on to the parent."""
        snapshot = await self.child.get_state(thread)
        assert snapshot is not None and snapshot.suspension is not None
        suspension = snapshot.suspension
        return ChildSuspend(suspension.payload, child=suspension.token.checkpoint_id, thread=thread)

    async def _passed_on(self, ctx: NodeContext) -> str | None:
        """The child suspension the parent's suspension passed on (saved with it)."""
        parent = await self.child.store.load_latest(ctx.thread_id)
        if parent is None:
            return None
        if ctx.branch is None:
            saved: SuspensionRecord | BranchRecord | None = parent.suspension
        else:
            saved = (parent.branches or {}).get(ctx.branch)
        return None if saved is None else saved.child

    async def _go_on(
        self,
        state: BaseModel,
        thread: str,
        latest: Checkpoint | None,
        resume: tuple[SuspendToken, object] | None,
        ctx: NodeContext,
    ) -> object:
        """Start, continue or resume the child (``latest``: its thread's latest
        checkpoint); its final state as this node's update (a ``Suspend`` when it
        suspended). A finished child is not run again."""
        given = self._input(state, ctx.item)
        if resume is None and latest is not None and latest.status == "completed":
            snapshot = await self.child.get_state(thread)
            assert snapshot is not None
            return self._update(state, given, snapshot.state)
        result = await self._call(thread, given if latest is None else None, resume, ctx)
        if result.status == "suspended":
            assert result.suspension is not None
            suspension = result.suspension
            return ChildSuspend(
                suspension.payload, child=suspension.token.checkpoint_id, thread=thread
            )
        return self._update(state, given, result.state)

    def _thread(self, ctx: NodeContext) -> str:
        if ctx.branch is None:
            position = f"s{ctx.step}"
        elif ctx.scope is not None:
            position = f"k{ctx.scope}"
        else:  # a branch saved before the graph had subgraphs
            position = f"b{ctx.branch}.{ctx.step}"
        return child_thread(ctx.thread_id, self.name, ctx.run_id, position)

    # -- running the child -----------------------------------------------------

    async def _call(
        self,
        thread: str,
        given: dict[str, object] | BaseModel | None,
        resume: tuple[SuspendToken, object] | None,
        ctx: NodeContext,
    ) -> RunResult[Any]:
        # The child's checkpoints name this thread as their parent (thread listings).
        running = CHILD_OF.set((thread, ctx.thread_id))
        try:
            return await self._call_child(thread, given, resume, ctx)
        finally:
            CHILD_OF.reset(running)

    async def _call_child(
        self,
        thread: str,
        given: Any,
        resume: tuple[SuspendToken, Any] | None,
        ctx: NodeContext,
    ) -> RunResult[Any]:
        child = self.child
        sink = ctx.sink
        if sink is None:
            if resume is not None:
                return await child.resume(resume[0], resume[1])
            return await child.run(given, thread_id=thread)
        relay = _relay(sink, self.name, ctx.branch)
        stream = (
            child.stream(given, thread_id=thread)
            if resume is None
            else child.stream_resume(resume[0], resume[1])
        )
        async with stream:
            async for event in stream:
                relay(event)
        assert stream.result is not None
        return stream.result

    def _input(self, state: BaseModel, item: object) -> dict[str, object] | BaseModel | None:
        """The child's input: ``input(state)`` (``input(state, item)`` in a ``Send``
        branch when it takes two arguments), else the shared fields, with a ``Send``
        item's keys that are child fields (a dict item, as LangGraph's ``Send`` arg)
        over them."""
        if self.input is not None:  # what it returns, the child's run checks
            mapped: dict[str, object] | BaseModel | None = (
                self.input(state, item) if self.input_takes_item else self.input(state)
            )
            return mapped
        given = {f: getattr(state, f) for f in self.shared}
        if isinstance(item, dict):
            given.update((k, v) for k, v in item.items() if k in self.child_fields)
        return given

    def _update(self, state: BaseModel, given: object, final: BaseModel) -> object:
        """The parent's update: ``output(final)``, else what the child changed in the
        shared fields from what it was given, through the parent's reducers (an
        ``append`` list's new items, an ``add`` field's gain: see ``passed_back``)."""
        if self.output is not None:
            return self.output(final)
        before = dict(given) if isinstance(given, dict) else {}
        start = state.model_copy(update={f: before[f] for f in self.shared if f in before})
        after = state.model_copy(update={f: getattr(final, f) for f in self.shared})
        return self.parent_schema.passed_back(start, after, self.shared)


def _takes_two(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn).bind(None, None)
    except (TypeError, ValueError):
        return False
    return True


def _shown(model: type[BaseModel], name: str) -> str:
    annotation = model.model_fields[name].annotation
    return getattr(annotation, "__name__", None) or repr(annotation)


def _relay(sink: Callable[[Event], None], node: str, branch: str | None) -> Callable[[Event], None]:
    """A sink for the child's events: each passed on with its node as ``node/child``
    (and its branch after the parent's), the child's end events left out."""

    def relay(event: Event) -> None:
        if isinstance(event, (Suspended, Completed)):
            return
        inner = event.branch
        joined = inner if branch is None else (branch if inner is None else f"{branch}/{inner}")
        sink(dataclasses.replace(event, node=f"{node}/{event.node}", branch=joined))

    return relay
