"""LangGraph programs that used to differ silently here (issue 41, item 1): branches
converging on a node, the first input and the reducers, two plain edges from one node,
``-> Command[Literal[...]]``, and the build errors that name the fix."""

from __future__ import annotations

import sys
import types
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    Command,
    GraphValidationError,
    NodeContext,
    Replace,
    Send,
    StateGraph,
    append,
)


class Work(BaseModel):
    items: list[int] = []
    results: Annotated[list[str], append] = []
    summaries: Annotated[list[str], append] = []


async def fan(state: Work) -> None:
    return None


async def work(state: Work, ctx: NodeContext) -> dict[str, Any]:
    return {"results": [f"r{ctx.item}"]}


async def reduce(state: Work) -> dict[str, Any]:
    return {"summaries": [f"summary of {len(state.results)} results"]}


def map_reduce(join: str | None = None) -> StateGraph[Work]:
    graph = StateGraph(Work)
    graph.add_node("fan", fan).add_node("work", work).add_node("reduce", reduce)
    graph.add_edge(START, "fan")
    graph.add_router("fan", lambda s: [Send("work", i) for i in s.items], ["work"], join=join)
    graph.add_edge("work", "reduce").add_edge("reduce", END)
    return graph


async def test_sent_branches_converging_on_a_node_run_it_once_after_all() -> None:
    """LangGraph's map-reduce (Send to `work`, an edge `work` -> `reduce`, no join
    declared) runs `reduce` once, seeing every branch's result."""
    app = map_reduce().compile()
    result = await app.run({"items": [1, 2, 3]}, thread_id="t")
    assert result.state.summaries == ["summary of 3 results"]
    assert result.path.count("reduce") == 1
    assert sorted(result.state.results) == ["r1", "r2", "r3"]


async def test_join_end_keeps_per_branch_chains() -> None:
    """`join=END` asks for each branch to run its own chain to the end: `reduce`
    then runs once per branch, each seeing its own branch's result."""
    app = map_reduce(join=END).compile()
    result = await app.run({"items": [1, 2, 3]}, thread_id="t")
    assert result.state.summaries == ["summary of 1 results"] * 3


class Letters(BaseModel):
    seen: Annotated[list[str], append] = []


def letter(name: str) -> Any:
    async def node(state: Letters) -> dict[str, Any]:
        return {"seen": [f"{name}:{len(state.seen)}"]}

    return node


async def test_two_plain_edges_from_one_node_are_a_fan_out_meeting_once() -> None:
    """`add_edge("a", "b"); add_edge("a", "c")` with `b` and `c` both going to `d`
    runs `b` and `c` in parallel (each sees the state after `a`) and `d` once."""
    graph = StateGraph(Letters)
    for name in "abcd":
        graph.add_node(name, letter(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    graph.add_edge("b", "d").add_edge("c", "d").add_edge("d", END)
    result = await graph.compile().run({}, thread_id="t")
    assert result.state.seen == ["a:0", "b:1", "c:1", "d:3"]


async def test_a_static_fan_out_converging_runs_the_meeting_node_once() -> None:
    """`add_edge("a", ["b", "c"])` with plain edges `b` -> `d`, `c` -> `d` runs `d` once."""
    graph = StateGraph(Letters)
    for name in "abcd":
        graph.add_node(name, letter(name))
    graph.add_edge(START, "a").add_edge("a", ["b", "c"])
    graph.add_edge("b", "d").add_edge("c", "d").add_edge("d", END)
    result = await graph.compile().run({}, thread_id="t")
    assert result.state.seen == ["a:0", "b:1", "c:1", "d:3"]


def tagged(old: list[str], new: list[str]) -> list[str]:
    return old + [f"{item}!" for item in new]


class Tagged(BaseModel):
    log: Annotated[list[str], tagged] = []


async def add_b(state: Tagged) -> dict[str, Any]:
    return {"log": ["b"]}


def tagged_app() -> Any:
    graph = StateGraph(Tagged).add_node("b", add_b)
    graph.add_edge(START, "b").add_edge("b", END)
    return graph.compile()


async def test_the_first_input_goes_through_the_reducers() -> None:
    """With a reducer of its own, the first input is merged as every later update is:
    `['a!', 'b!']`, as LangGraph gives."""
    result = await tagged_app().run({"log": ["a"]}, thread_id="t")
    assert result.state.log == ["a!", "b!"]


async def test_replace_in_the_first_input_skips_the_reducer() -> None:
    """`Replace(value)` in the first input sets the field as given."""
    result = await tagged_app().run({"log": Replace(["a"])}, thread_id="t")
    assert result.state.log == ["a", "b!"]


async def test_a_model_as_first_input_goes_through_the_reducers_too() -> None:
    """A state model given as input merges the fields it sets through their reducers."""
    result = await tagged_app().run(Tagged(log=["a"]), thread_id="t")
    assert result.state.log == ["a!", "b!"]


class Route(BaseModel):
    path: Annotated[list[str], append] = []


async def pick(state: Route) -> Command[Literal["left", "right"]]:
    return Command(goto="right", update={"path": ["pick"]})


async def left(state: Route) -> dict[str, Any]:
    return {"path": ["left"]}


async def right(state: Route) -> dict[str, Any]:
    return {"path": ["right"]}


async def test_a_command_literal_return_annotation_gives_the_destinations() -> None:
    """`-> Command[Literal["left", "right"]]` declares the destinations, as in
    LangGraph: the graph builds, routes by the Command and draws both edges."""
    graph = StateGraph(Route)
    graph.add_node("pick", pick).add_node("left", left).add_node("right", right)
    graph.add_edge(START, "pick").add_edge("left", END).add_edge("right", END)
    app = graph.compile()
    result = await app.run({}, thread_id="t")
    assert result.state.path == ["pick", "right"]
    drawing = app.to_mermaid()
    assert "pick -.-> left" in drawing and "pick -.-> right" in drawing


async def test_a_node_without_destinations_is_told_how_to_declare_them() -> None:
    """A node that routes by `Command` but declares nothing gets a build error that
    names `destinations=` (not only that its target is unreachable)."""

    async def hop(state: Route) -> Command:
        return Command(goto="left")

    graph = StateGraph(Route).add_node("hop", hop).add_node("left", left)
    graph.add_edge(START, "hop").add_edge("left", END)
    with pytest.raises(GraphValidationError) as refused:
        graph.compile()
    assert refused.value.problems == [
        "node `hop` has no outgoing edge or router (if it returns Command(goto=...), list "
        "where it may go: add_node('hop', ..., destinations=[...]), or annotate it "
        '`-> Command[Literal["a", "b"]]`)',
        "node `left` is unreachable from START (no edge, router or destinations= leads to it)",
    ]


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(source, module.__dict__)
    return module


async def test_a_field_clash_between_same_named_types_shows_their_modules() -> None:
    """Two `Log` classes from two modules clash by field; the message names each type
    with its module, so the two read apart."""
    source = (
        "from pydantic import BaseModel\n"
        "class Log(BaseModel):\n    {field}: str = ''\n"
        "class {state}(BaseModel):\n    processed_logs: list[Log] = []\n"
    )
    one = _module("clash_one", source.format(field="id", state="A"))
    two = _module("clash_two", source.format(field="text", state="B"))
    try:

        async def noop(state: Any) -> None:
            return None

        child = StateGraph(two.B).add_node("n", noop)
        child.add_edge(START, "n").add_edge("n", END)
        graph = StateGraph(one.A).add_node("sub", child.compile())
        graph.add_edge(START, "sub").add_edge("sub", END)
        with pytest.raises(GraphValidationError) as refused:
            graph.compile()
    finally:
        del sys.modules["clash_one"], sys.modules["clash_two"]
    assert refused.value.problems == [
        "node `sub`: fields shared by name differ in type: `processed_logs` "
        "(list[clash_one.Log] in `A`, list[clash_two.Log] in `B`); pass `input=` and "
        "`output=` to map the states"
    ]


async def test_branches_of_different_lengths_meet_once_at_their_first_common_node() -> None:
    """`a -> [b, c]`, `b -> b2 -> d`, `c -> d`: `d` runs once after both branches
    (LangGraph would run it per super-step; docs/langgraph.md names the difference)."""
    graph = StateGraph(Letters)
    for name in ("a", "b", "b2", "c", "d"):
        graph.add_node(name, letter(name))
    graph.add_edge(START, "a").add_edge("a", ["b", "c"])
    graph.add_edge("b", "b2").add_edge("b2", "d").add_edge("c", "d").add_edge("d", END)
    result = await graph.compile().run({}, thread_id="t")
    assert result.path.count("d") == 1
    assert result.state.seen[-1] == "d:4"
