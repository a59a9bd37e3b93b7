"""Command(goto=..., update=...): a node's update and its route together, declared
destinations checked when the graph is built, drawn, and enforced at run time."""

from __future__ import annotations

from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Command,
    GraphValidationError,
    InvalidCommand,
    NodeContext,
    RoutingError,
    Send,
    StateGraph,
    Suspend,
)

from .helpers import Counter, recorder


def logger(name: str) -> Any:
    """A node that only logs its name (branches may run it side by side)."""

    async def node(state: Counter) -> dict[str, Any]:
        return {"log": [name]}

    return node


def graph_with(decide: Any, destinations: list[str] | None = None) -> StateGraph[Counter]:
    """START -> decide -> (a | b | END); a and b join at `after`."""
    graph = StateGraph(Counter)
    graph.add_node("decide", decide, destinations=destinations or ["a", "b", END])
    graph.add_node("a", logger("a")).add_node("b", logger("b"))
    graph.add_node("after", logger("after"))
    graph.add_edge(START, "decide").add_edge(["a", "b"], "after").add_edge("after", END)
    return graph


async def test_goto_a_node_applies_the_update_and_goes_there(store: CheckpointStore) -> None:
    async def decide(state: Counter) -> Command:
        return Command(update={"log": ["decide"]}, goto="b")

    app = graph_with(decide).compile(store=store)
    result = await app.run({}, thread_id="t")
    assert result.status == "completed"
    assert result.path == ["decide", "b", "after"]
    assert result.state.log == ["decide", "b", "after"]
    saved = await app.get_state("t")
    assert saved is not None and saved.state.log == ["decide", "b", "after"]


async def test_goto_end_finishes_the_run(store: CheckpointStore) -> None:
    async def decide(state: Counter) -> Command:
        return Command(update={"n": 7}, goto=END)

    app = graph_with(decide).compile(store=store)
    result = await app.run({}, thread_id="t")
    assert (result.status, result.path, result.state.n) == ("completed", ["decide"], 7)


async def test_goto_a_list_fans_out_and_the_branches_meet_at_the_join(
    store: CheckpointStore,
) -> None:
    async def decide(state: Counter) -> Command:
        return Command(update={"log": ["decide"]}, goto=["b", "a"])

    app = graph_with(decide).compile(store=store)
    result = await app.run({}, thread_id="t")
    assert result.status == "completed"
    # Merged in the order goto lists them, then the join once.
    assert result.state.log == ["decide", "b", "a", "after"]
    assert result.path.count("after") == 1


async def test_goto_sends_run_one_branch_per_item(store: CheckpointStore) -> None:
    seen: list[Any] = []

    async def decide(state: Counter) -> Command:
        return Command(goto=[Send("work", {"k": 1}), Send("work", {"k": 2})])

    async def work(state: Counter, ctx: NodeContext) -> dict[str, Any]:
        seen.append(ctx.item)
        return {"log": [f"work{ctx.item['k']}"]}

    graph = StateGraph(Counter)
    graph.add_node("decide", decide, destinations=["work"]).add_node("work", work)
    graph.add_node("after", logger("after"))
    graph.add_edge(START, "decide").add_edge(["work"], "after").add_edge("after", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert result.state.log == ["work1", "work2", "after"]
    assert sorted(item["k"] for item in seen) == [1, 2]


async def test_a_single_send_is_one_branch(store: CheckpointStore) -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto=Send("a", "x"))

    result = await graph_with(decide).compile(store=store).run({}, thread_id="t")
    assert result.state.log == ["a", "after"]


async def test_command_in_a_parallel_branch_routes_that_branch(store: CheckpointStore) -> None:
    async def left(state: Counter) -> Command:
        return Command(update={"log": ["left"]}, goto="left2")

    graph = StateGraph(Counter)
    graph.add_node("left", left, destinations=["left2", "join"])
    for name in ("start", "left2", "right", "join"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "start").add_edge("start", ["left", "right"])
    graph.add_edge(["left2", "right"], "join").add_edge("join", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert result.state.log == ["start", "left", "left2", "right", "join"]


async def test_command_without_goto_is_an_update_and_the_edges_decide(
    store: CheckpointStore,
) -> None:
    async def plain(state: Counter) -> Command:
        return Command(update={"n": 5})

    graph = StateGraph(Counter)
    graph.add_node("plain", plain).add_node("next", recorder("next"))
    graph.add_edge(START, "plain").add_edge("plain", "next").add_edge("next", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert (result.path, result.state.n) == (["plain", "next"], 6)


async def test_command_whose_update_is_the_nodes_own_state(store: CheckpointStore) -> None:
    async def decide(state: Counter) -> Command:
        state.log.append("decide")
        state.n = 3
        return Command(update=state, goto="a")

    result = await graph_with(decide).compile(store=store).run({"log": ["in"]}, thread_id="t")
    # The in-place append counts once (not the whole list again).
    assert result.state.log == ["in", "decide", "a", "after"]
    assert result.state.n == 3


async def test_resume_may_return_a_command(store: CheckpointStore) -> None:
    class Ask:
        async def run(self, state: Counter, ctx: NodeContext) -> Suspend:
            return Suspend("where?")

        async def resume(self, state: Counter, value: Any, ctx: NodeContext) -> Command:
            return Command(update={"log": [f"chose {value}"]}, goto=value)

    app = graph_with(Ask()).compile(store=store)
    first = await app.run({}, thread_id="t")
    assert first.suspension is not None
    done = await app.resume(first.suspension.token, "a")
    assert done.state.log == ["chose a", "a", "after"]


async def test_goto_to_an_undeclared_destination_names_node_goto_and_allowed(
    store: CheckpointStore,
) -> None:
    async def decide(state: Counter) -> Command:
        return Command(update={"n": 1}, goto="after")

    app = graph_with(decide).compile(store=store)
    with pytest.raises(InvalidCommand) as raised:
        await app.run({}, thread_id="t")
    message = str(raised.value)
    assert "`decide`" in message and "'after'" in message
    assert "`a`, `b`, END" in message
    assert isinstance(raised.value, RoutingError)
    assert raised.value.allowed == ["a", "b", END]
    failed = await app.get_state("t")
    assert failed is not None and failed.status == "failed"
    assert failed.error is not None and failed.error.exc_type == "InvalidCommand"


@pytest.mark.parametrize(
    ("goto", "culprit"),
    [(["a", "after"], "'after'"), ([END], "'__end__'"), ([Send("nope", 1)], "'nope'")],
)
async def test_a_branch_to_an_undeclared_destination_is_refused(goto: Any, culprit: str) -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto=goto)

    with pytest.raises(InvalidCommand, match=culprit) as raised:
        await graph_with(decide).compile().run({}, thread_id="t")
    assert "`a`, `b`" in str(raised.value)


async def test_goto_of_the_wrong_type_is_refused() -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto=42)  # type: ignore[arg-type]

    with pytest.raises(InvalidCommand, match="goto takes a node name"):
        await graph_with(decide).compile().run({}, thread_id="t")


async def test_a_node_without_destinations_cannot_goto() -> None:
    async def plain(state: Counter) -> Command:
        return Command(goto="next")

    graph = StateGraph(Counter)
    graph.add_node("plain", plain).add_node("next", recorder("next"))
    graph.add_edge(START, "plain").add_edge("plain", "next").add_edge("next", END)
    with pytest.raises(InvalidCommand, match=r"`plain`.*declares no destinations"):
        await graph.compile().run({}, thread_id="t")


async def test_a_node_with_destinations_must_say_where_to_go() -> None:
    async def decide(state: Counter) -> dict[str, Any]:
        return {"n": 1}

    with pytest.raises(InvalidCommand, match=r"`decide` declares destinations.*`a`, `b`, END"):
        await graph_with(decide).compile().run({}, thread_id="t")


def test_destinations_are_validated_when_the_graph_is_built() -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto="a")

    graph = graph_with(decide, ["a", "ghost"])
    with pytest.raises(GraphValidationError, match="`decide` lists unknown node `ghost`"):
        graph.compile()


def test_destinations_and_an_edge_or_router_are_refused() -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto="a")

    graph = graph_with(decide)
    graph.add_edge("decide", "a")
    with pytest.raises(GraphValidationError, match="`decide` has both an edge and destinations"):
        graph.compile()
    graph = graph_with(decide)
    graph.add_router("decide", lambda s: "a", ["a"])
    with pytest.raises(GraphValidationError, match="`decide` has both destinations and a router"):
        graph.compile()


@pytest.mark.parametrize(
    ("destinations", "message"),
    [
        ("a", "must be a list of node names"),
        ([], "lists no nodes"),
        ([1], "must be a list of node names"),
    ],
)
def test_bad_destinations_name_the_node(destinations: Any, message: str) -> None:
    graph = StateGraph(Counter)
    with pytest.raises(GraphValidationError, match=f"node `x`: destinations {message}"):
        graph.add_node("x", recorder("x"), destinations=destinations)


def test_destinations_make_their_nodes_reachable_and_are_drawn_dashed() -> None:
    async def decide(state: Counter) -> Command:
        return Command(goto="a")

    # Without destinations, `a` and `b` would be unreachable and `decide` exitless.
    app = graph_with(decide).compile()
    chart = app.to_mermaid()
    assert "decide -.-> a" in chart
    assert "decide -.-> b" in chart
    assert "decide -.-> __end__" in chart
    assert 'decide -.->|"join"| after' in chart
