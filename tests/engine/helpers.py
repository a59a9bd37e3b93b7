"""State models, nodes and graph builders shared by the engine tests."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    NodeContext,
    StateGraph,
    Suspend,
    append,
)


class Counter(BaseModel):
    """The state most tests use: a counter and an append-only log."""

    n: int = 0
    log: Annotated[list[str], append] = []


def recorder(name: str, calls: list[str] | None = None) -> Any:
    """A node that bumps ``n`` and logs its name (and records each call in ``calls``)."""

    async def node(state: Counter) -> dict[str, Any]:
        if calls is not None:
            calls.append(name)
        return {"n": state.n + 1, "log": [name]}

    node.__name__ = f"node_{name}"
    return node


def chain(
    *names: str,
    store: CheckpointStore | None = None,
    calls: list[str] | None = None,
    step_limit: int = 50,
) -> CompiledGraph[Counter]:
    """START -> names[0] -> ... -> names[-1] -> END, every node a ``recorder``."""
    graph = StateGraph(Counter)
    previous = START
    for name in names:
        graph.add_node(name, recorder(name, calls))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(store=store, step_limit=step_limit)


class Gate:
    """An async callable node that signals ``entered`` then waits for ``release``.

    Only its first ``block`` calls wait; later calls return at once.
    """

    def __init__(self, block: int = 1) -> None:
        self.block = block
        self.calls = 0
        self.cancelled = 0
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, state: Counter) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.block:
            self.entered.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return {"n": state.n + 1, "log": ["gate"]}


class Ask:
    """A class node that suspends in ``run`` and answers in ``resume``; counts calls."""

    def __init__(self, *, again: int = 0) -> None:
        self.again = again
        self.run_calls = 0
        self.resume_calls = 0
        self.fail_resume = False

    async def run(self, state: Counter, ctx: NodeContext) -> Suspend:
        self.run_calls += 1
        return Suspend({"question": "name?"}, update={"n": state.n + 1})

    async def resume(self, state: Counter, value: Any, ctx: NodeContext) -> Any:
        self.resume_calls += 1
        if self.fail_resume:
            raise RuntimeError("resume broke")
        if self.resume_calls <= self.again:
            return Suspend({"question": f"again {self.resume_calls}"})
        return {"log": [f"answer:{value}"]}


def ask_graph(ask: Ask, store: CheckpointStore | None = None) -> CompiledGraph[Counter]:
    """START -> first -> ask -> after -> END."""
    graph = StateGraph(Counter)
    graph.add_node("first", recorder("first"))
    graph.add_node("ask", ask)
    graph.add_node("after", recorder("after"))
    graph.add_edge(START, "first")
    graph.add_edge("first", "ask")
    graph.add_edge("ask", "after")
    graph.add_edge("after", END)
    return graph.compile(store=store)


def one_node(model: type[BaseModel], update: dict[str, Any], store: Any) -> CompiledGraph[Any]:
    """START -> node -> END on state ``model``, the node returning ``update``."""
    graph = StateGraph(model)

    async def node(state: Any) -> dict[str, Any]:
        return update

    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    return graph.compile(store=store)
