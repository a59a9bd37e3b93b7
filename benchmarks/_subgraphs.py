"""Figure 1's subgraph rows: a 3-node child graph run as one node of a parent, in both
engines, against the same five nodes in one flat graph.

The parent runs ``before -> research -> after``; ``research`` is the compiled child
``a -> b -> c``: five node executions per run (the subgraph node itself runs no code
of its own). Per node = batch wall time / (runs x 5). research_fsm keeps both graphs'
checkpoints in one ``MemoryCheckpointStore`` (the child's on a thread of its own, as
always); LangGraph runs without a checkpointer. The flat rows time the same five
nodes in one graph, so the difference is what running a child graph costs.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from pydantic import BaseModel

from research_fsm.engine import END, START, CompiledGraph, MemoryCheckpointStore, StateGraph

from ._common import Row, Sample, Sizes, alternate, at_least, fmt, md_table, median, timed

NODES = 5
"""Node executions per run: two of the parent, three of the child."""
GOAL_FACTOR = 10.0
"""research_fsm's time per node inside a subgraph at least this many times below LangGraph's."""


class SubState(BaseModel):
    topic: str = ""
    path: str = ""
    n: int = 0


class LGSubState(TypedDict):
    topic: str
    path: str
    n: int


def _update(name: str, state: Any) -> dict[str, Any]:
    return {"path": f"{state['path']}/{name}", "n": state["n"] + 1}


def _node(name: str) -> Any:
    async def node(state: SubState) -> dict[str, Any]:
        return _update(name, state.__dict__)

    return node


def _chain(graph: Any, names: tuple[str, ...], make: Any, start: Any, end: Any) -> Any:
    previous = start
    for name in names:
        graph.add_node(name, make(name))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, end)
    return graph


def build_rfsm(*, flat: bool = False) -> CompiledGraph[SubState]:
    """The parent with its child on one memory store, or (``flat``) the five nodes in one graph."""
    store = MemoryCheckpointStore()
    if flat:
        graph = _chain(StateGraph(SubState), ("before", "a", "b", "c", "after"), _node, START, END)
        return graph.compile(store=store)  # type: ignore[no-any-return]
    child = _chain(StateGraph(SubState), ("a", "b", "c"), _node, START, END).compile(store=store)
    parent = StateGraph(SubState)
    parent.add_node("before", _node("before")).add_node("research", child)
    parent.add_node("after", _node("after"))
    parent.add_edge(START, "before").add_edge("before", "research")
    parent.add_edge("research", "after").add_edge("after", END)
    return parent.compile(store=store)


def build_langgraph(*, flat: bool = False) -> Any:
    """LangGraph's same graphs (no checkpointer), async nodes."""
    from langgraph.graph import END as LG_END
    from langgraph.graph import START as LG_START
    from langgraph.graph import StateGraph as LGStateGraph

    def make(name: str) -> Any:
        async def node(state: LGSubState) -> dict[str, Any]:
            return _update(name, state)

        return node

    if flat:
        names = ("before", "a", "b", "c", "after")
        return _chain(LGStateGraph(LGSubState), names, make, LG_START, LG_END).compile()
    child = _chain(LGStateGraph(LGSubState), ("a", "b", "c"), make, LG_START, LG_END).compile()
    parent = LGStateGraph(LGSubState)
    parent.add_node("before", make("before"))
    parent.add_node("research", child)
    parent.add_node("after", make("after"))
    parent.add_edge(LG_START, "before")
    parent.add_edge("before", "research")
    parent.add_edge("research", "after")
    parent.add_edge("after", LG_END)
    return parent.compile()


EXPECTED = "/before/a/b/c/after"


async def _rfsm_batch(app: CompiledGraph[SubState], n: int) -> Sample:
    ids = [f"t{i}" for i in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.run({"topic": "x"}, thread_id=ids[i])
    return sample


async def _lg_batch(app: Any, n: int) -> Sample:
    with timed() as sample:
        for _ in range(n):
            await app.ainvoke({"topic": "x", "path": "", "n": 0})
    return sample


async def _verify(apps: dict[str, Any]) -> None:
    for variant, app in apps.items():
        if variant.startswith("rfsm"):
            result = await app.run({"topic": "x"}, thread_id="check")
            notes, n = result.state.path, result.state.n
        else:
            out = await app.ainvoke({"topic": "x", "path": "", "n": 0})
            notes, n = out["path"], out["n"]
        assert (notes, n) == (EXPECTED, NODES), (variant, notes, n)


def subgraph_rows(sizes: Sizes, peer: bool) -> tuple[list[Row], dict[str, Any], list[str]]:
    """Figure 1's subgraph rows, their detail and their detail table."""
    n = sizes.fig1_runs
    variants = ["rfsm", "rfsm_flat"] + (["lg", "lg_flat"] if peer else [])

    def build(variant: str) -> Any:
        flat = variant.endswith("_flat")
        return build_rfsm(flat=flat) if variant.startswith("rfsm") else build_langgraph(flat=flat)

    asyncio.run(_verify({v: build(v) for v in variants}))
    samples: dict[str, list[Sample]] = {v: [] for v in variants}

    def measure(variant: str) -> Sample:
        app = build(variant)  # new threads in a new store each batch
        if variant.startswith("rfsm"):
            return asyncio.run(_rfsm_batch(app, n))
        return asyncio.run(_lg_batch(app, n))

    for variant in variants:  # warm-up
        measure(variant)
    for rep in range(sizes.reps):
        for variant in alternate(rep, *variants):
            samples[variant].append(measure(variant))

    def per_node(variant: str) -> float | None:
        if variant not in samples:
            return None
        return median([s.wall for s in samples[variant]]) / (n * NODES) * 1e6

    ours, peer_us = per_node("rfsm"), per_node("lg")
    speedup = peer_us / ours if (peer_us and ours) else None
    holds, margin = at_least(speedup, GOAL_FACTOR)
    rows = [
        Row(
            metric="per node, a 3-node subgraph inside a parent (5 nodes), no store",
            unit="µs",
            research_fsm=ours,
            langgraph=peer_us,
            goal=f"≥ {GOAL_FACTOR:.0f}x faster",
            holds=holds,
            margin=margin,
        )
    ]
    flat, lg_flat = per_node("rfsm_flat"), per_node("lg_flat")

    def per_run_extra(nested: float | None, plain: float | None) -> float | None:
        return None if nested is None or plain is None else (nested - plain) * NODES

    rows.append(
        Row(
            metric="what running the 3 nodes as a subgraph adds per run, over one flat graph",
            unit="µs",
            research_fsm=per_run_extra(ours, flat),
            langgraph=per_run_extra(peer_us, lg_flat),
        )
    )
    labels = {
        "rfsm": "research_fsm, child as a node (MemoryCheckpointStore)",
        "rfsm_flat": "research_fsm, the 5 nodes in one graph",
        "lg": "LangGraph, child as a node (no checkpointer)",
        "lg_flat": "LangGraph, the 5 nodes in one graph",
    }
    detail = {v: {"us_per_node": per_node(v)} for v in variants}
    table = md_table(
        ["graph", "µs/node (median)", "µs/run"],
        [[labels[v], fmt(per_node(v)), fmt((per_node(v) or 0.0) * NODES)] for v in variants],
    )
    return rows, detail, table
