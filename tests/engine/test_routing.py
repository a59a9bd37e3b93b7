"""Routing: edges, routers (list, mapping, async), loops and RoutingError."""

from __future__ import annotations

from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    NodeFailed,
    RoutingError,
    StateGraph,
)

from .helpers import Counter, chain, recorder


async def test_edges_run_nodes_in_order(store: CheckpointStore) -> None:
    """START -> a -> b -> c -> END runs each node once, in order, and merges updates."""
    calls: list[str] = []
    result = await chain("a", "b", "c", store=store, calls=calls).run({}, thread_id="t")
    assert (result.status, result.path) == ("completed", ["a", "b", "c"])
    assert calls == ["a", "b", "c"]
    assert Counter(n=3, log=["a", "b", "c"]) == result.state
    assert result.thread_id == "t"


async def test_router_with_list_targets_uses_node_names_as_keys(store: CheckpointStore) -> None:
    """A list of targets means the router returns the name of the next node."""
    graph = StateGraph(Counter)
    for name in ("pick", "small", "big"):
        graph.add_node(name, recorder(name))
    graph.add_edge(START, "pick")
    graph.add_router("pick", lambda s: "big" if s.n > 5 else "small", ["small", "big"])
    graph.add_edge("small", END)
    graph.add_edge("big", END)
    compiled = graph.compile(store=store)
    assert (await compiled.run({"n": 0}, thread_id="t1")).path == ["pick", "small"]
    assert (await compiled.run({"n": 10}, thread_id="t2")).path == ["pick", "big"]


async def test_router_with_mapping_targets(store: CheckpointStore) -> None:
    """A mapping of targets maps any hashable key (here bools) to a node or END."""
    graph = StateGraph(Counter)
    graph.add_node("check", recorder("check"))
    graph.add_node("fix", recorder("fix"))
    graph.add_edge(START, "check")
    graph.add_router("check", lambda s: s.n % 2 == 0, {True: END, False: "fix"})
    graph.add_edge("fix", END)
    compiled = graph.compile(store=store)
    assert (await compiled.run({"n": 1}, thread_id="odd")).path == ["check"]
    assert (await compiled.run({"n": 0}, thread_id="even")).path == ["check", "fix"]


async def test_async_router_is_awaited(store: CheckpointStore) -> None:
    """An ``async def`` router is awaited and sees the state after its node's update."""
    seen: list[int] = []

    async def router(state: Counter) -> str:
        seen.append(state.n)
        return "done"

    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_edge(START, "a")
    graph.add_router("a", router, {"done": END})
    result = await graph.compile(store=store).run({"n": 41}, thread_id="t")
    assert (seen, result.path) == ([42], ["a"])


@pytest.mark.parametrize("times", [1, 7])
async def test_loop_runs_exactly_n_times(store: CheckpointStore, times: int) -> None:
    """A router that loops back until a counter reaches N runs the body N times."""
    graph = StateGraph(Counter)
    graph.add_node("body", recorder("body"))
    graph.add_edge(START, "body")
    graph.add_router(
        "body", lambda s: "again" if s.n < times else "stop", {"again": "body", "stop": END}
    )
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert ["body"] * times == result.path
    assert times == result.state.n


async def test_router_on_start_picks_the_entry_node(store: CheckpointStore) -> None:
    """A router on START chooses the first node from the input."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_node("b", recorder("b"))
    graph.add_router(START, lambda s: "b" if s.n else "a", ["a", "b"])
    graph.add_edge("a", END)
    graph.add_edge("b", END)
    compiled = graph.compile(store=store)
    assert (await compiled.run({"n": 1}, thread_id="t")).path == ["b"]


async def test_start_router_straight_to_end_completes_and_saves(store: CheckpointStore) -> None:
    """START routed directly to END completes with an empty path and keeps the input."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_router(START, lambda s: "skip" if s.n > 5 else "go", {"skip": END, "go": "a"})
    graph.add_edge("a", END)
    compiled = graph.compile(store=store)
    result = await compiled.run({"n": 10}, thread_id="t")
    assert ("completed", [], Counter(n=10)) == (result.status, result.path, result.state)
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("completed", Counter(n=10), result.checkpoint_id) == (
        snapshot.status,
        snapshot.state,
        snapshot.checkpoint_id,
    )


async def test_undeclared_router_key_raises_routing_error(store: CheckpointStore) -> None:
    """A router key outside its targets raises RoutingError naming source, key and allowed keys."""
    graph = StateGraph(Counter)
    graph.add_node("decide", recorder("decide"))
    graph.add_node("yes_node", recorder("yes_node"))
    graph.add_edge(START, "decide")
    graph.add_router("decide", lambda s: "maybe", {"yes": "yes_node", "no": END})
    graph.add_edge("yes_node", END)
    compiled = graph.compile(store=store)
    with pytest.raises(RoutingError) as info:
        await compiled.run({}, thread_id="t")
    error = info.value
    assert (error.source, error.key, error.allowed) == ("decide", "maybe", ["yes", "no"])
    assert str(error) == (
        "router of node `decide` returned 'maybe', which is not one of its declared keys: "
        "'yes', 'no'"
    )
    assert isinstance(error, LookupError)
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert (snapshot.status, snapshot.next) == ("failed", "decide")


async def test_unhashable_router_key_raises_routing_error(store: CheckpointStore) -> None:
    """An unhashable router result is a RoutingError too, not a raw TypeError."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_edge(START, "a")
    graph.add_router("a", lambda s: {"x": 1}, {"x": END})
    with pytest.raises(RoutingError, match=r"returned \{'x': 1\}"):
        await graph.compile(store=store).run({}, thread_id="t")


async def test_router_that_raises_fails_its_node(store: CheckpointStore) -> None:
    """An exception inside a router surfaces as NodeFailed of the router's node."""

    def router(state: Counter) -> Any:
        raise KeyError("boom")

    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_edge(START, "a")
    graph.add_router("a", router, {"x": END})
    with pytest.raises(NodeFailed) as info:
        await graph.compile(store=store).run({}, thread_id="t")
    assert ("a", 0, KeyError) == (info.value.node, info.value.step, type(info.value.cause))
