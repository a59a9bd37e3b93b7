"""LangGraph's own ``Command`` tests, ported: a node returning several updates at once,
and ``destinations`` given as a mapping of labels. Each test names the LangGraph
test it follows (``libs/langgraph/tests/test_pregel.py``); the facts are LangGraph's,
the code this engine's.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Command,
    GraphValidationError,
    InvalidCommand,
    StateGraph,
    add,
)


class Foo(BaseModel):
    foo: Annotated[str, add] = ""


def sequence(store: CheckpointStore, node_a: Any) -> Any:
    async def node_b(state: Foo) -> dict[str, Any]:
        return {"foo": "b"}

    graph = StateGraph(Foo)
    graph.add_node("node_a", node_a).add_node("node_b", node_b)
    graph.add_edge(START, "node_a").add_edge("node_a", "node_b").add_edge("node_b", END)
    return graph.compile(store=store)


async def test_multiple_updates(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_multiple_updates``: a node returns a list of updates
    (``Command``s and dicts), applied in order through the reducers: ``"a1a2b"``; the
    "updates" stream shows the list as the node returned it."""

    async def node_a(state: Foo) -> list[Any]:
        return [Command(update={"foo": "a1"}), {"foo": "a2"}]

    app = sequence(store, node_a)
    done = await app.run({"foo": ""}, thread_id="t")
    assert (done.state.foo, done.path) == ("a1a2b", ["node_a", "node_b"])
    async with app.stream({"foo": ""}, thread_id="s", mode="updates") as stream:
        updates = [u async for u in stream]
    assert updates == [{"node_a": [{"foo": "a1"}, {"foo": "a2"}]}, {"node_b": {"foo": "b"}}]
    saved = await app.get_state("t")
    assert saved is not None and saved.state.foo == "a1a2b"


async def test_multiple_updates_with_one_goto(store: CheckpointStore) -> None:
    """A list of updates may carry one ``goto`` (in any of its ``Command``s): the node
    goes there; two are an ``InvalidCommand`` naming the node."""

    async def decide(state: Foo) -> list[Any]:
        return [{"foo": "x"}, Command(update={"foo": "y"}, goto="c"), {"foo": "z"}]

    async def twice(state: Foo) -> list[Any]:
        return [Command(goto="b"), Command(goto="c")]

    async def leaf(state: Foo) -> dict[str, Any]:
        return {"foo": "!"}

    for node, expected in ((decide, "xyz!"), (twice, None)):
        graph = StateGraph(Foo)
        graph.add_node("a", node, destinations=["b", "c"])
        graph.add_node("b", leaf).add_node("c", leaf)
        graph.add_edge(START, "a").add_edge("b", END).add_edge("c", END)
        app = graph.compile(store=store)
        if expected is None:
            with pytest.raises(InvalidCommand, match="`a`"):
                await app.run({}, thread_id=node.__name__)
        else:
            done = await app.run({}, thread_id=node.__name__)
            assert (done.path, done.state.foo) == (["a", "c"], expected)


async def test_node_destinations(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_node_destinations``: ``destinations`` as a tuple and as
    a mapping of labels; the ``Command``'s goto picks ``node_c``: ``"c"``, and the
    drawing labels the mapping's edges. Deliberate difference: the deciding node is a
    plain node, not a subgraph returning ``Command(graph=Command.PARENT)``, which is
    not supported (a child graph returns its state to its node: docs/langgraph.md)."""

    async def child(state: Foo) -> Command:
        return Command(update={"foo": state.foo}, goto="node_b" if state.foo == "a" else "node_c")

    async def node_b(state: Foo) -> dict[str, Any]:
        return {"foo": "b"}

    async def node_c(state: Foo) -> dict[str, Any]:
        return {"foo": "c"}

    for destinations in (("node_b", "node_c"), {"node_b": "foo", "node_c": "bar"}):
        graph = StateGraph(Foo)
        graph.add_edge(START, "child")
        graph.add_node("child", child, destinations=destinations)
        graph.add_node("node_b", node_b).add_node("node_c", node_c)
        graph.add_edge("node_b", END).add_edge("node_c", END)
        app = graph.compile(store=store)
        done = await app.run({"foo": ""}, thread_id=f"t{len(str(destinations))}")
        assert (done.state.foo, done.path) == ("c", ["child", "node_c"])
        chart = app.to_mermaid()
        if isinstance(destinations, dict):
            assert 'child -.->|"foo"| node_b' in chart
            assert 'child -.->|"bar"| node_c' in chart
        else:
            assert "child -.-> node_b" in chart and "child -.-> node_c" in chart


def test_destinations_mapping_must_map_names_to_labels() -> None:
    """A mapping whose labels are not strings is refused, naming the node."""
    graph = StateGraph(Foo)
    with pytest.raises(GraphValidationError, match="node `x`: destinations as a mapping"):
        graph.add_node("x", lambda s: s, destinations={"a": 1})


async def test_multiple_updates_in_a_parallel_branch(store: CheckpointStore) -> None:
    """A branch node's list of updates is applied in order and merged at the join in
    the branch's place, through the reducers; the "updates" stream shows the list."""

    async def first(state: Foo) -> list[Any]:
        return [{"foo": "1"}, Command(update={"foo": "2"})]

    async def second(state: Foo) -> dict[str, Any]:
        return {"foo": "3"}

    async def join(state: Foo) -> dict[str, Any]:
        return {"foo": "|"}

    graph = StateGraph(Foo)
    graph.add_node("first", first).add_node("second", second).add_node("join", join)
    graph.add_edge(START, ["first", "second"]).add_edge(["first", "second"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=store)
    async with app.stream({}, thread_id="b", mode="updates") as stream:
        updates = [u async for u in stream]
    assert {"first": [{"foo": "1"}, {"foo": "2"}]} in updates
    assert stream.result is not None and stream.result.state.foo == "123|"
