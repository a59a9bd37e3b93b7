"""LangGraph's own subgraph tests, ported: a child graph with its own breakpoints or
interrupts inside a parent, in parallel branches, behind ``Send``, nested twice; the
paused child read and edited from the parent's snapshot; a suspended thread finished
by hand. Each test names the LangGraph test it follows (``libs/langgraph/tests``);
the facts (graphs, inputs, expected values) are LangGraph's, the code is this
engine's. Where the engine deliberately differs, the test asserts the documented
behaviour and says why.

The children are compiled without a store, as LangGraph's examples write them: they
run on the parent's store.
"""

from __future__ import annotations

from collections import Counter as Tally
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    EngineError,
    MemoryCheckpointStore,
    NodeContext,
    RetryPolicy,
    Send,
    StaleResumeToken,
    StateGraph,
    Suspend,
    UnknownSubgraph,
    add,
    append,
)

# -- test_nested_graph_interrupts_parallel (test_pregel.py) -------------------


class Keyed(BaseModel):
    my_key: Annotated[str, add] = ""


class InnerKeyed(BaseModel):
    my_key: Annotated[str, add] = ""
    my_other_key: str = ""


def parallel_parent(
    store: CheckpointStore, calls: Tally[str], **breakpoints: Any
) -> CompiledGraph[Keyed]:
    """START -> [inner (a child pausing before inner_2), outer_1] -> outer_2 -> END."""

    async def inner_1(state: InnerKeyed) -> dict[str, Any]:
        calls["inner_1"] += 1
        return {"my_key": "got here", "my_other_key": state.my_key}

    async def inner_2(state: InnerKeyed) -> dict[str, Any]:
        calls["inner_2"] += 1
        return {"my_key": " and there", "my_other_key": state.my_key}

    inner = StateGraph(InnerKeyed)
    inner.add_node("inner_1", inner_1).add_node("inner_2", inner_2)
    inner.add_edge(START, "inner_1").add_edge("inner_1", "inner_2").add_edge("inner_2", END)

    async def outer_1(state: Keyed) -> dict[str, Any]:
        calls["outer_1"] += 1
        return {"my_key": " and parallel"}

    async def outer_2(state: Keyed) -> dict[str, Any]:
        calls["outer_2"] += 1
        return {"my_key": " and back again"}

    graph = StateGraph(Keyed)
    graph.add_node("inner", inner.compile(interrupt_before=["inner_2"]))
    graph.add_node("outer_1", outer_1).add_node("outer_2", outer_2)
    graph.add_edge(START, ["inner", "outer_1"]).add_edge(["inner", "outer_1"], "outer_2")
    graph.add_edge("outer_2", END)
    return graph.compile(store=store, **breakpoints)


async def test_nested_graph_interrupts_parallel(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_nested_graph_interrupts_parallel``: a child that
    pauses at its own breakpoint beside a parallel node; both write ``my_key``
    (``add`` in parent and child). The child's change comes back through the parent's
    reducer and merges with the sibling's: ``"got here and there and parallel and back
    again"``, LangGraph's value. ``outer_1`` runs once. Deliberate difference: the
    suspended result's state is the fan-out's start (``""``, LangGraph shows
    ``" and parallel"``): branches are isolated until the join (docs/langgraph.md)."""
    calls: Tally[str] = Tally()
    app = parallel_parent(store, calls)
    first = await app.run({"my_key": ""}, thread_id="1")
    assert first.status == "suspended" and first.state.my_key == ""
    assert [(s.node, s.breakpoint) for s in first.suspensions] == [("inner", None)]
    assert calls == Tally({"inner_1": 1, "outer_1": 1})
    done = await app.resume(first.suspensions[0].token, None)
    assert done.status == "completed"
    assert done.state.my_key == "got here and there and parallel and back again"
    assert calls == Tally({"inner_1": 1, "inner_2": 1, "outer_1": 1, "outer_2": 1})


async def test_nested_graph_interrupts_parallel_values_stream(store: CheckpointStore) -> None:
    """Follows the ``stream_mode="values"`` part of LangGraph's
    ``test_nested_graph_interrupts_parallel``: the resumed call yields the merged state
    after the join, then after ``outer_2``. Deliberate difference: no state before the
    first node (the input) is yielded, and a fan-out's branches yield none of their own
    (docs/engine.md, Stream modes)."""
    app = parallel_parent(store, Tally())
    async with app.stream({"my_key": ""}, thread_id="3", mode="values") as stream:
        first = [state.my_key async for state in stream]
    assert first == []
    assert stream.result is not None and stream.result.status == "suspended"
    token = stream.result.suspensions[0].token
    async with app.stream_resume(token, None, mode="values") as resumed:
        second = [state.my_key async for state in resumed]
    assert second == [
        "got here and there and parallel",
        "got here and there and parallel and back again",
    ]


async def test_nested_graph_interrupts_parallel_with_breakpoints_on_the_sibling(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_before=["outer_1"]`` and ``interrupt_after=["outer_1"]``
    parts of LangGraph's ``test_nested_graph_interrupts_parallel``: the sibling pauses
    before (resp. after) its node while the child pauses inside; once every pause is
    resumed the result is LangGraph's. Deliberate difference: each paused branch has a
    token of its own and is resumed by it, not one ``invoke(None)`` for all of them."""
    for where, option in (("before", "interrupt_before"), ("after", "interrupt_after")):
        calls: Tally[str] = Tally()
        app = parallel_parent(store, calls, **{option: ["outer_1"]})
        first = await app.run({"my_key": ""}, thread_id=f"t-{where}")
        paused = {(s.node, s.breakpoint) for s in first.suspensions}
        assert paused == {("inner", None), ("outer_1", where)}, where
        result = first
        for suspension in first.suspensions:
            result = await app.resume(suspension.token, None)
        assert result.status == "completed", where
        assert result.state.my_key == "got here and there and parallel and back again"
        assert calls["outer_1"] == 1 and calls["inner_1"] == 1, where


# -- test_doubly_nested_graph_interrupts (test_pregel.py) ---------------------


class Plain(BaseModel):
    my_key: str = ""


def doubly_nested(store: CheckpointStore, order: list[str]) -> CompiledGraph[Plain]:
    """parent_1 -> child (child_1: a grandchild pausing before grandchild_2) -> parent_2."""

    def node(name: str, suffix: str = "", prefix: str = "") -> Any:
        async def run(state: Plain) -> dict[str, Any]:
            order.append(name)
            return {"my_key": f"{prefix}{state.my_key}{suffix}"}

        return run

    grandchild = StateGraph(Plain)
    grandchild.add_node("grandchild_1", node("grandchild_1", " here"))
    grandchild.add_node("grandchild_2", node("grandchild_2", " and there"))
    grandchild.add_edge(START, "grandchild_1").add_edge("grandchild_1", "grandchild_2")
    grandchild.add_edge("grandchild_2", END)
    child = StateGraph(Plain)
    child.add_node("child_1", grandchild.compile(interrupt_before=["grandchild_2"]))
    child.add_edge(START, "child_1").add_edge("child_1", END)
    parent = StateGraph(Plain)
    parent.add_node("parent_1", node("parent_1", prefix="hi "))
    parent.add_node("child", child.compile())
    parent.add_node("parent_2", node("parent_2", " and back again"))
    parent.add_edge(START, "parent_1").add_edge("parent_1", "child")
    parent.add_edge("child", "parent_2").add_edge("parent_2", END)
    return parent.compile(store=store)


async def test_doubly_nested_graph_interrupts(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_doubly_nested_graph_interrupts``: a breakpoint two
    levels down pauses the parent; one resume finishes every level, in LangGraph's
    order, with LangGraph's values. Deliberate difference: the pause is resumed with
    its token (``resume(token, None)``), not ``invoke(None)``."""
    order: list[str] = []
    app = doubly_nested(store, order)
    first = await app.run({"my_key": "my value"}, thread_id="1")
    assert (first.status, first.state.my_key) == ("suspended", "hi my value")
    assert order == ["parent_1", "grandchild_1"]
    assert first.suspension is not None and first.suspension.node == "child"
    done = await app.resume(first.suspension.token, None)
    assert done.state.my_key == "hi my value here and there and back again"
    assert order == ["parent_1", "grandchild_1", "grandchild_2", "parent_2"]
    assert done.path == ["child", "parent_2"]


async def test_doubly_nested_graph_interrupts_values_stream(store: CheckpointStore) -> None:
    """Follows the ``stream_mode="values"`` part of LangGraph's
    ``test_doubly_nested_graph_interrupts``: the first call yields the state after
    ``parent_1`` once (the nested pause changes nothing, so it yields nothing more),
    the resumed call the state after the child and after ``parent_2``. Deliberate
    difference: neither call yields the state it starts from (docs/engine.md)."""
    app = doubly_nested(store, [])
    async with app.stream({"my_key": "my value"}, thread_id="3", mode="values") as stream:
        first = [state.my_key async for state in stream]
    assert first == ["hi my value"]
    assert stream.result is not None and stream.result.suspension is not None
    async with app.stream_resume(stream.result.suspension.token, None, mode="values") as again:
        second = [state.my_key async for state in again]
    assert second == ["hi my value here and there", "hi my value here and there and back again"]


# -- test_send_to_nested_graphs (test_large_cases.py) -------------------------


class Overall(BaseModel):
    subjects: list[str] = []
    jokes: Annotated[list[str], append] = []


class Joke(BaseModel):
    subject: str = ""
    jokes: Annotated[list[str], append] = []


def jokes_graph(store: CheckpointStore) -> CompiledGraph[Overall]:
    """A ``Send`` per subject to a child that edits the subject, pauses before
    ``generate``, then writes a joke."""

    async def edit(state: Joke) -> dict[str, Any]:
        return {"subject": f"{state.subject} - hohoho"}

    async def generate(state: Joke) -> dict[str, Any]:
        return {"jokes": [f"Joke about {state.subject}"]}

    child = StateGraph(Joke)
    child.add_node("edit", edit).add_node("generate", generate)
    child.add_edge(START, "edit").add_edge("edit", "generate").add_edge("generate", END)
    parent = StateGraph(Overall)
    parent.add_node("generate_joke", child.compile(interrupt_before=["generate"]))
    parent.add_router(
        START,
        lambda state: [Send("generate_joke", {"subject": s}) for s in state.subjects],
        ["generate_joke"],
    )
    parent.add_edge("generate_joke", END)
    return parent.compile(store=store)


async def test_send_to_nested_graphs(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_send_to_nested_graphs``: each ``Send`` runs the child
    on a thread of its own, each pauses; the parent's snapshot lists both child threads
    with their states, the "dogs" one is edited through ``app.subgraph(node)``, and
    continuing the parent writes LangGraph's two jokes without pausing again.
    Deliberate difference: each paused branch is resumed with its own token."""
    app = jokes_graph(store)
    first = await app.run({"subjects": ["cats", "dogs"]}, thread_id="1")
    assert (first.status, first.state.jokes) == ("suspended", [])
    assert [s.node for s in first.suspensions] == ["generate_joke", "generate_joke"]
    snapshot = await app.get_state("1", subgraphs=True)
    assert snapshot is not None
    children = snapshot.children
    assert [(c.node, c.status) for c in children] == [("generate_joke", "suspended")] * 2
    assert [s.child_thread_id for s in snapshot.suspensions] == [c.thread_id for c in children]
    assert [s.child_thread_id for s in first.suspensions] == [c.thread_id for c in children]
    shown = [c.snapshot.state.subject for c in children if c.snapshot is not None]
    assert shown == ["cats - hohoho", "dogs - hohoho"]
    assert children[1].snapshot is not None and children[1].snapshot.next == "generate"

    await app.subgraph("generate_joke").update_state(
        children[1].thread_id, {"subject": "turtles - hohoho"}
    )
    once = await app.resume(first.suspensions[0].token, None)
    assert once.status == "suspended"
    done = await app.resume(first.suspensions[1].token, None)
    assert done.status == "completed"
    assert done.state.jokes == ["Joke about cats - hohoho", "Joke about turtles - hohoho"]


# -- test_weather_subgraph (test_large_cases.py) ------------------------------


class RouterState(BaseModel):
    messages: Annotated[list[str], append] = []
    route: str = ""


class WeatherState(BaseModel):
    messages: Annotated[list[str], append] = []
    city: str = ""


def weather_app(store: CheckpointStore) -> CompiledGraph[RouterState]:
    """router_node -> weather_graph (a child pausing before weather_node) | normal."""

    async def model_node(state: WeatherState, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", " very")
        return {"city": "San Francisco"}

    async def weather_node(state: WeatherState, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", " good")
        return {"messages": [f"It's sunny in {state.city}!"]}

    child = StateGraph(WeatherState)
    child.add_node("model_node", model_node).add_node("weather_node", weather_node)
    child.add_edge(START, "model_node").add_edge("model_node", "weather_node")
    child.add_edge("weather_node", END)

    async def router_node(state: RouterState, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "I'm")
        return {"route": "weather"}

    async def normal_llm_node(state: RouterState) -> dict[str, Any]:
        return {"messages": ["Hello!"]}

    graph = StateGraph(RouterState)
    graph.add_node("router_node", router_node).add_node("normal_llm_node", normal_llm_node)
    graph.add_node("weather_graph", child.compile(interrupt_before=["weather_node"]))
    graph.add_edge(START, "router_node")
    graph.add_router(
        "router_node",
        lambda s: "weather_graph" if s.route == "weather" else "normal_llm_node",
        ["weather_graph", "normal_llm_node"],
    )
    graph.add_edge("normal_llm_node", END).add_edge("weather_graph", END)
    return graph.compile(store=store)


ASKED = {"messages": ["what's the weather in sf"]}


async def test_weather_subgraph_custom_stream(store: CheckpointStore) -> None:
    """Follows the ``stream_mode="custom"`` part of LangGraph's ``test_weather_subgraph``:
    the parent's and the child's emitted chunks, the child's pause, then the rest."""
    app = weather_app(store)
    async with app.stream(ASKED, thread_id="2", mode="custom") as stream:
        first = [(e.node, e.data) async for e in stream]
    assert first == [("router_node", "I'm"), ("weather_graph/model_node", " very")]
    assert stream.result is not None and stream.result.suspension is not None
    token = stream.result.suspension.token
    async with app.stream_resume(token, None, mode="custom") as resumed:
        second = [(e.node, e.data) async for e in resumed]
    assert second == [("weather_graph/weather_node", " good")]


async def test_weather_subgraph_edit_the_paused_child(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_weather_subgraph``: the parent's snapshot names the
    paused child thread (``get_state(..., subgraphs=True)``); an edit of the child's
    ``city`` is what its next node sees, and one resume of the parent finishes both
    (no second pause). Deliberate difference: the edit goes through
    ``app.subgraph("weather_graph").update_state(child_thread_id, ...)``, not the
    child's config."""
    app = weather_app(store)
    first = await app.run(ASKED, thread_id="1")
    assert first.status == "suspended" and first.suspension is not None
    snapshot = await app.get_state("1", subgraphs=True)
    assert snapshot is not None
    assert (snapshot.next, snapshot.state.route) == ("weather_graph", "weather")
    [child] = snapshot.children
    assert (child.node, child.status) == ("weather_graph", "suspended")
    assert child.thread_id == first.suspension.child_thread_id
    assert child.snapshot is not None
    assert (child.snapshot.state.city, child.snapshot.next) == ("San Francisco", "weather_node")
    assert child.snapshot.state.messages == ["what's the weather in sf"]

    await app.subgraph("weather_graph").update_state(child.thread_id, {"city": "la"})
    async with app.stream_resume(first.suspension.token, None, mode="updates") as stream:
        updates = [u async for u in stream]
    assert stream.result is not None and stream.result.status == "completed"
    assert updates == [
        {"weather_graph/weather_node": {"messages": ["It's sunny in la!"]}},
        {"weather_graph": {"messages": ["It's sunny in la!"]}},
    ]
    assert stream.result.state.messages == ["what's the weather in sf", "It's sunny in la!"]


async def test_weather_subgraph_update_the_child_as_its_node(store: CheckpointStore) -> None:
    """Follows the ``as_node="weather_node"`` part of LangGraph's ``test_weather_subgraph``:
    answering the child's pause by hand, as ``weather_node``, completes the child (its
    snapshot has no next node); the parent then takes the child's state without running
    ``weather_node``."""
    app = weather_app(store)
    first = await app.run(ASKED, thread_id="14")
    assert first.suspension is not None and first.suspension.child_thread_id is not None
    child = app.subgraph("weather_graph")
    edited = await child.update_state(
        first.suspension.child_thread_id, {"messages": ["rainy"]}, as_node="weather_node"
    )
    assert (edited.status, edited.next) == ("completed", None)
    snapshot = await app.get_state("14", subgraphs=True)
    assert snapshot is not None
    [seen] = snapshot.children
    assert seen.status == "completed" and seen.snapshot is not None
    assert seen.snapshot.state.messages == ["what's the weather in sf", "rainy"]
    async with app.stream_resume(first.suspension.token, None, mode="updates") as stream:
        updates = [u async for u in stream]
    assert updates == [{"weather_graph": {"messages": ["rainy"]}}]
    assert stream.result is not None
    assert stream.result.state.messages == ["what's the weather in sf", "rainy"]


def test_subgraph_of_an_unknown_node_names_the_subgraph_nodes() -> None:
    """``app.subgraph(name)`` of a node that runs no child graph is an ``UnknownSubgraph``
    (an ``EngineError`` and a ``ValueError``) naming the ones that do, at every level."""
    app = weather_app(MemoryCheckpointStore())
    with pytest.raises(UnknownSubgraph, match="subgraph nodes are: `weather_graph`") as info:
        app.subgraph("router_node")
    assert isinstance(info.value, EngineError) and isinstance(info.value, ValueError)
    assert ("router_node", ["weather_graph"]) == (info.value.node, info.value.allowed)
    with pytest.raises(UnknownSubgraph, match=r"of the graph at `weather_graph`.*: none"):
        app.subgraph("weather_graph/model_node")


# -- test_dynamic_interrupt_subgraph (test_large_cases.py) --------------------


class Market(BaseModel):
    my_key: str = ""
    market: str = ""


class MarketTotal(BaseModel):
    my_key: Annotated[str, add] = ""
    market: str = ""


def market_app(store: CheckpointStore | None, calls: Tally[str]) -> CompiledGraph[MarketTotal]:
    """tool_two: a child whose node asks in the DE market, else answers at once."""

    async def tool_two_node(state: Market, ctx: NodeContext) -> Any:
        calls["tool_two_node"] += 1
        if ctx.resuming:
            return {"my_key": ctx.resume_value}
        if state.market == "DE":
            return Suspend("Just because...")
        return {"my_key": " all good"}

    child = StateGraph(Market)
    child.add_node("do", tool_two_node, retry=RetryPolicy())
    child.add_edge(START, "do").add_edge("do", END)
    parent = StateGraph(MarketTotal)
    parent.add_node("tool_two", child.compile())
    parent.add_edge(START, "tool_two").add_edge("tool_two", END)
    return parent.compile(store=store)


async def test_dynamic_interrupt_subgraph(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_dynamic_interrupt_subgraph``: the child (``my_key: str``)
    asks in a parent whose ``my_key`` adds up; the answer comes back through the
    parent's reducer: ``"value ⛰️ my answer"``, as in LangGraph. Without a question the
    child's value is added likewise. Deliberate difference: the question is a node's
    ``Suspend``, and the node is called again with ``ctx.resume_value`` (a function
    node; LangGraph re-runs it from the top too)."""
    calls: Tally[str] = Tally()
    app = market_app(store, calls)
    first = await app.run({"my_key": "value ⛰️", "market": "DE"}, thread_id="2")
    assert first.suspension is not None and first.suspension.payload == "Just because..."
    assert calls["tool_two_node"] == 1, "a Suspend is not retried"
    async with app.stream_resume(first.suspension.token, " my answer", mode="updates") as s:
        updates = [u async for u in s]
    assert updates == [
        {"tool_two/do": {"my_key": " my answer"}},
        {"tool_two": {"my_key": " my answer"}},
    ]
    assert s.result is not None and s.result.state.my_key == "value ⛰️ my answer"
    us = await app.run({"my_key": "value", "market": "US"}, thread_id="us")
    assert (us.status, us.state.my_key) == ("completed", "value all good")


async def test_dynamic_interrupt_subgraph_finished_by_hand(store: CheckpointStore) -> None:
    """Follows the "clear the interrupt" part of LangGraph's
    ``test_dynamic_interrupt_subgraph``: ``update_state(thread, None, as_node=END)``
    finishes the suspended thread: no next node, no suspension, its token stale, the
    state unchanged; before it, the snapshot names the child the question came from."""
    app = market_app(store, Tally())
    first = await app.run({"my_key": "value ⛰️", "market": "DE"}, thread_id="1")
    assert first.suspension is not None
    before = await app.get_state("1")
    assert before is not None and before.next == "tool_two"
    [child] = before.children
    assert (child.node, child.status) == ("tool_two", "suspended")
    assert before.suspension is not None
    assert before.suspension.child_thread_id == child.thread_id
    assert first.suspension.child_thread_id == child.thread_id

    cleared = await app.update_state("1", None, as_node=END)
    assert (cleared.status, cleared.next, cleared.suspension) == ("completed", None, None)
    assert (cleared.origin, cleared.state.my_key) == ("update", "value ⛰️")
    assert cleared.parent_id == before.checkpoint_id
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspension.token, "late")
    again = await app.run({"my_key": "!", "market": "US"}, thread_id="1")
    assert (again.status, again.state.my_key) == ("completed", "value ⛰️! all good")


# -- a child compiled without a store ----------------------------------------


async def test_a_child_compiled_without_a_store_checkpoints_in_the_parents(
    store: CheckpointStore,
) -> None:
    """A child compiled with ``compile()`` (no store), as every LangGraph example writes
    it, keeps its checkpoints in the parent's store under the derived child thread;
    the child graph object itself stays on its own private store."""
    calls: Tally[str] = Tally()
    app = market_app(store, calls)
    first = await app.run({"my_key": "v", "market": "DE"}, thread_id="p")
    assert first.suspension is not None and first.suspension.child_thread_id is not None
    saved = await store.load_latest(first.suspension.child_thread_id)
    assert saved is not None and saved.status == "suspended"
    assert app.subgraph("tool_two").store is store


# -- replaying or forking where the parent waited on its child ----------------


class AskOnce:
    """A child node that asks once and records every call."""

    def __init__(self, calls: Tally[str]) -> None:
        self.calls = calls

    async def run(self, state: Plain, ctx: NodeContext) -> Suspend:
        self.calls["ask.run"] += 1
        return Suspend("which value?")

    async def resume(self, state: Plain, value: Any, ctx: NodeContext) -> dict[str, Any]:
        self.calls["ask.resume"] += 1
        return {"my_key": f"{state.my_key}={value}"}


def asking_parent(store: CheckpointStore, calls: Tally[str]) -> CompiledGraph[Plain]:
    """START -> child (START -> ask -> END) -> END."""
    child = StateGraph(Plain)
    child.add_node("ask", AskOnce(calls)).add_edge(START, "ask").add_edge("ask", END)
    parent = StateGraph(Plain)
    parent.add_node("child", child.compile()).add_edge(START, "child").add_edge("child", END)
    return parent.compile(store=store)


async def test_replaying_where_the_parent_waited_on_its_child_asks_once(
    store: CheckpointStore,
) -> None:
    """Continuing from the checkpoint where the parent waited on its child (a new line
    of history) answers the child's question with the value given to the copy's
    token: the question is not asked again (issue 36, bug 5; LangGraph's replay of a
    subgraph checkpoint resumes the subgraph's interrupt likewise)."""
    calls: Tally[str] = Tally()
    app = asking_parent(store, calls)
    first = await app.run({"my_key": "k"}, thread_id="t")
    assert first.suspension is not None
    done = await app.resume(first.suspension.token, "one")
    assert done.state.my_key == "k=one"
    again = await app.run(None, thread_id="t", checkpoint_id=first.checkpoint_id)
    assert again.status == "suspended" and again.suspension is not None
    assert again.suspension.child_thread_id not in (None, first.suspension.child_thread_id)
    replayed = await app.resume(again.suspension.token, "two")
    assert (replayed.status, replayed.state.my_key) == ("completed", "k=two")
    assert calls == Tally({"ask.run": 1, "ask.resume": 2})


async def test_a_fork_where_the_parent_waited_on_its_child_asks_once(
    store: CheckpointStore,
) -> None:
    """A fork of the checkpoint where the parent waited on its child carries the
    child's question to the fork's own child thread: the fork's token answers it,
    asked once; the source thread's question is still open for its own token."""
    calls: Tally[str] = Tally()
    app = asking_parent(store, calls)
    first = await app.run({"my_key": "k"}, thread_id="t")
    assert first.suspension is not None
    forked = await app.fork("t", first.checkpoint_id, "t2")
    assert forked.suspension is not None and forked.children[0].status == "suspended"
    done = await app.resume(forked.suspension.token, "fork")
    assert (done.status, done.state.my_key) == ("completed", "k=fork")
    source = await app.resume(first.suspension.token, "source")
    assert source.state.my_key == "k=source"
    assert calls == Tally({"ask.run": 1, "ask.resume": 2})


# -- what a subgraph's change adds, through the parent's reducers ------------


class Tallies(BaseModel):
    total: Annotated[int, add] = 0
    words: Annotated[str, add] = ""
    counts: Annotated[dict[str, int], add] = {}
    notes: Annotated[list[str], append] = []


async def test_a_subgraph_adds_what_it_gained_once(store: CheckpointStore) -> None:
    """Beyond LangGraph: the child starts from the parent's values and comes back with
    what it gained, added once through the parent's ``add`` (a number's difference, a
    string's tail, a dict's per key) and ``append`` (its new items). LangGraph passes the
    child's whole value to the reducer, so a parent's 5 plus a child's +2 would be 12;
    here it is 7 (docs/langgraph.md, "A subgraph's update to the parent")."""

    async def work(state: Tallies) -> dict[str, Any]:
        return {"total": 2, "words": " more", "counts": {"a": 1, "b": 1}, "notes": ["child"]}

    child = StateGraph(Tallies)
    child.add_node("work", work).add_edge(START, "work").add_edge("work", END)
    parent = StateGraph(Tallies)
    parent.add_node("sub", child.compile()).add_edge(START, "sub").add_edge("sub", END)
    app = parent.compile(store=store)
    start = {"total": 5, "words": "some", "counts": {"a": 1}, "notes": ["parent"]}
    done = await app.run(start, thread_id="t")
    assert done.state.model_dump() == {
        "total": 7,
        "words": "some more",
        "counts": {"a": 2, "b": 1},
        "notes": ["parent", "child"],
    }
