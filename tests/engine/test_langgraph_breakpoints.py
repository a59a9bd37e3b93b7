"""LangGraph's own breakpoint tests, ported: ``interrupt_before``/``interrupt_after``
on a fan-out's branch, on every node (``"*"``), an edit at a pause (as the node
before it, the "approve or edit the tool call" flow), and a pause continued
somewhere else with ``Command(goto=...)``. Each test names the LangGraph test it
follows (``libs/langgraph/tests``); the facts are LangGraph's, the code this
engine's. Where the engine deliberately differs, the test asserts the documented
behaviour and says why.
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
    CompiledGraph,
    InvalidCommand,
    Replace,
    Send,
    StaleResumeToken,
    StateGraph,
    UpdateRefused,
    add,
    append,
)

# -- test_in_one_fan_out_state_graph_waiting_edge (test_pregel.py) -----------


def sorted_add(old: list[str], new: list[str]) -> list[str]:
    return sorted(old + new)


class Retrieval(BaseModel):
    query: str = ""
    answer: str = ""
    docs: Annotated[list[str], sorted_add] = []


def retrieval(
    store: CheckpointStore, *, via_router: bool = False, **breakpoints: Any
) -> CompiledGraph[Retrieval]:
    """rewrite_query -> [analyzer_one -> retriever_one, retriever_two] -> qa (the
    fan-out a list edge, or ``via_router`` a router returning both keys)."""

    async def rewrite_query(state: Retrieval) -> dict[str, Any]:
        return {"query": f"query: {state.query}"}

    async def analyzer_one(state: Retrieval) -> dict[str, Any]:
        return {"query": f"analyzed: {state.query}"}

    async def retriever_one(state: Retrieval) -> dict[str, Any]:
        return {"docs": ["doc1", "doc2"]}

    async def retriever_two(state: Retrieval) -> dict[str, Any]:
        return {"docs": ["doc3", "doc4"]}

    async def qa(state: Retrieval) -> dict[str, Any]:
        return {"answer": ",".join(state.docs)}

    graph = StateGraph(Retrieval)
    for node in (rewrite_query, analyzer_one, retriever_one, retriever_two, qa):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "rewrite_query")
    if via_router:
        graph.add_router(
            "rewrite_query",
            lambda s: ["analyzer_one", "retriever_two"],
            ["analyzer_one", "retriever_two"],
        )
    else:
        graph.add_edge("rewrite_query", ["analyzer_one", "retriever_two"])
    graph.add_edge("analyzer_one", "retriever_one")
    graph.add_edge(["retriever_one", "retriever_two"], "qa").add_edge("qa", END)
    return graph.compile(store=store, **breakpoints)


ASKED = {"query": "what is weather in sf"}
ANSWERED = {
    "query": "analyzed: query: what is weather in sf",
    "docs": ["doc1", "doc2", "doc3", "doc4"],
    "answer": "doc1,doc2,doc3,doc4",
}


async def test_in_one_fan_out_state_graph_waiting_edge(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_in_one_fan_out_state_graph_waiting_edge``: two
    branches of different lengths meet at ``qa`` with LangGraph's state."""
    done = await retrieval(store).run(ASKED, thread_id="0")
    assert done.state.model_dump() == ANSWERED
    assert done.path[0] == "rewrite_query" and done.path[-1] == "qa"


@pytest.mark.parametrize("via_router", [False, True], ids=["list-edge", "router"])
async def test_in_one_fan_out_waiting_edge_interrupt_after_a_branch_node_at_its_join(
    store: CheckpointStore, via_router: bool
) -> None:
    """Follows the ``interrupt_after=["retriever_one"]`` part of LangGraph's
    ``test_in_one_fan_out_state_graph_waiting_edge`` (and of its neighbour
    ``..._via_branch``, where the fan-out is a router's): the run pauses after
    ``retriever_one``, whose route is the join, and resuming runs only ``qa``.
    Deliberate difference in the router variant: LangGraph applies the edge to
    ``analyzer_one`` and the router to ``retriever_two`` both; here one place decides
    (a node's edge and router together are a build error), so the router lists both."""
    app = retrieval(store, via_router=via_router, interrupt_after=["retriever_one"])
    paused = await app.run(ASKED, thread_id="1")
    assert paused.status == "suspended"
    assert [(s.node, s.breakpoint) for s in paused.suspensions] == [("retriever_one", "after")]
    assert sorted(paused.path) == sorted(
        ["rewrite_query", "analyzer_one", "retriever_one", "retriever_two"]
    )
    assert "qa" not in paused.path
    done = await app.resume(paused.suspensions[0].token, None)
    assert (done.status, done.path) == ("completed", ["qa"])
    assert done.state.model_dump() == ANSWERED


async def test_in_one_fan_out_waiting_edge_interrupt_before_the_join_and_edit(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_before=["qa"]`` part of LangGraph's
    ``test_in_one_fan_out_state_graph_waiting_edge``: paused before the join, an edit
    adds ``doc5`` through the field's reducer, the pause stays with ``next`` ``qa``,
    and ``qa`` sees it."""
    app = retrieval(store, interrupt_before=["qa"])
    paused = await app.run(ASKED, thread_id="2")
    assert paused.suspension is not None and paused.suspension.node == "qa"
    edited = await app.update_state("2", {"docs": ["doc5"]})
    assert (edited.status, edited.next, edited.origin) == ("suspended", "qa", "update")
    assert edited.state.docs == ["doc1", "doc2", "doc3", "doc4", "doc5"]
    assert edited.parent_id == paused.checkpoint_id
    assert edited.suspension is not None
    done = await app.resume(edited.suspension.token, None)
    assert (done.path, done.state.answer) == (["qa"], "doc1,doc2,doc3,doc4,doc5")


# -- test_conditional_state_graph (test_large_cases.py) ----------------------


class Agent(BaseModel):
    input: str = ""
    outcome: dict[str, str] | None = None
    steps: Annotated[list[str], append] = []


def agent_app(store: CheckpointStore, **breakpoints: Any) -> CompiledGraph[Agent]:
    """agent -> (tools -> agent)* -> END; the agent's scripted outcomes: two tool
    calls, then a finish."""
    script = [
        {"tool": "search_api", "query": "query"},
        {"tool": "search_api", "query": "another"},
        {"finish": "answer"},
    ]

    async def agent(state: Agent) -> dict[str, Any]:
        return {"outcome": script[len(state.steps)]}

    async def tools(state: Agent) -> dict[str, Any]:
        assert state.outcome is not None
        return {"steps": [f"result for {state.outcome['query']}"]}

    graph = StateGraph(Agent)
    graph.add_node("agent", agent).add_node("tools", tools)
    graph.add_edge(START, "agent").add_edge("tools", "agent")
    graph.add_router(
        "agent",
        lambda s: "exit" if "finish" in (s.outcome or {}) else "continue",
        {"continue": "tools", "exit": END},
    )
    return graph.compile(store=store, **breakpoints)


async def test_conditional_state_graph_interrupt_before_every_node(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_before="*"`` part of LangGraph's
    ``test_conditional_state_graph``: the run pauses before each node in turn, first
    before ``agent``, with nothing run yet."""
    app = agent_app(store, interrupt_before="*")
    result = await app.run({"input": "what is weather in sf"}, thread_id="3")
    seen = []
    while result.status == "suspended":
        assert result.suspension is not None and result.suspension.breakpoint == "before"
        seen.append((result.suspension.node, result.path))
        result = await app.resume(result.suspension.token, None)
    assert seen == [
        ("agent", []),
        ("tools", ["agent"]),
        ("agent", ["tools"]),
        ("tools", ["agent"]),
        ("agent", ["tools"]),
    ]
    assert result.state.steps == ["result for query", "result for another"]


async def test_conditional_state_graph_interrupt_after_every_node(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_after="*"`` part of LangGraph's
    ``test_conditional_state_graph``: the run pauses after each node, its snapshot's
    ``next`` the node its route picked. Deliberate difference: no pause after the
    last ``agent``, whose route is END (nothing is left to run)."""
    app = agent_app(store, interrupt_after="*")
    result = await app.run({"input": "what is weather in sf"}, thread_id="4")
    seen = []
    while result.status == "suspended":
        assert result.suspension is not None and result.suspension.breakpoint == "after"
        snapshot = await app.get_state("4")
        assert snapshot is not None
        seen.append((result.suspension.node, snapshot.next))
        result = await app.resume(result.suspension.token, None)
    assert seen == [("agent", "tools"), ("tools", "agent")] * 2
    assert result.path == ["agent"] and result.state.outcome == {"finish": "answer"}


async def test_interrupt_star_on_a_call_and_a_bad_value_are_named(store: CheckpointStore) -> None:
    """``"*"`` works on one call too; any other string is refused, naming ``"*"``."""
    app = agent_app(store)
    paused = await app.run({}, thread_id="t", interrupt_before="*")
    assert paused.suspension is not None and paused.suspension.node == "agent"
    with pytest.raises(Exception, match=r'list of node names or "\*"'):
        agent_app(store, interrupt_after="agent")


async def test_conditional_state_graph_edit_the_tool_call_as_the_agent(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_before=["tools"]`` part of LangGraph's
    ``test_conditional_state_graph`` (the "approve or edit the agent's tool call"
    flow): paused before ``tools``, an edit as ``agent`` replaces the tool call and
    routes from ``agent`` again; ``tools`` runs the edited call; a final edit as
    ``agent`` with a finish ends the thread. Deliberate difference: after an edit the
    thread is still paused (before where ``agent`` routes, with a new token), so the
    run goes on with ``resume(token, None)``, not ``invoke(None)``."""
    app = agent_app(store, interrupt_before=["tools"])
    paused = await app.run({"input": "what is weather in sf"}, thread_id="2")
    assert paused.suspension is not None and paused.suspension.node == "tools"
    edited = await app.update_state(
        "2", {"outcome": {"tool": "search_api", "query": "a different query"}}, as_node="agent"
    )
    assert (edited.status, edited.next, edited.origin) == ("suspended", "tools", "update")
    assert edited.suspension is not None and edited.suspension.breakpoint == "before"
    assert edited.suspension.token != paused.suspension.token
    with pytest.raises(StaleResumeToken):
        await app.resume(paused.suspension.token, None)
    again = await app.resume(edited.suspension.token, None)
    assert again.path == ["tools", "agent"]
    assert again.state.steps == ["result for a different query"]
    assert again.suspension is not None and again.suspension.node == "tools"
    finished = await app.update_state(
        "2", {"outcome": {"finish": "a really nice answer"}}, as_node="agent"
    )
    assert (finished.status, finished.next, finished.suspension) == ("completed", None, None)
    assert finished.state.steps == ["result for a different query"]


async def test_conditional_state_graph_edit_after_the_agent_keeps_the_route(
    store: CheckpointStore,
) -> None:
    """Follows the ``interrupt_after=["agent"]`` part of LangGraph's
    ``test_conditional_state_graph``. Deliberate difference: an edit without
    ``as_node`` leaves where the run goes unchanged (LangGraph re-routes as the last
    node): the finish edited in still goes to ``tools``; as ``agent`` it ends the
    thread, as LangGraph's does."""
    app = agent_app(store, interrupt_after=["agent"])
    await app.run({"input": "what is weather in sf"}, thread_id="1")
    kept = await app.update_state("1", {"outcome": {"finish": "a really nice answer"}})
    assert (kept.status, kept.next) == ("suspended", "tools")
    routed = await app.update_state("1", None, as_node="agent")
    assert (routed.status, routed.next) == ("completed", None)
    assert routed.state.outcome == {"finish": "a really nice answer"}


# -- test_command_goto_with_static_breakpoints (test_pregel.py) ---------------


class Foo(BaseModel):
    foo: Annotated[str, add] = ""


def two_nodes(store: CheckpointStore) -> CompiledGraph[Foo]:
    """START -> node1 -> node2 -> END, pausing before node1."""

    async def node1(state: Foo) -> dict[str, Any]:
        return {"foo": "|node-1"}

    async def node2(state: Foo) -> dict[str, Any]:
        return {"foo": "|node-2"}

    graph = StateGraph(Foo)
    graph.add_node("node1", node1).add_node("node2", node2)
    graph.add_edge(START, "node1").add_edge("node1", "node2").add_edge("node2", END)
    return graph.compile(store=store, interrupt_before=["node1"])


async def test_command_goto_with_static_breakpoints(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_command_goto_with_static_breakpoints``: a pause
    before ``node1`` continued with ``Command(goto=...)``. Deliberate difference:
    ``goto`` says where the run goes instead of the node paused before (one place
    decides, as for a node's ``Command``), so LangGraph's result, where the paused
    ``node1`` runs beside the ``goto`` target, is ``goto=["node1", "node2"]`` here:
    two parallel branches, merged in that order: ``"abc|node-1|node-2|node-2"``. A
    single name goes there alone."""
    app = two_nodes(store)
    paused = await app.run({"foo": "abc"}, thread_id="a")
    assert paused.suspension is not None
    both = await app.resume(paused.suspension.token, Command(goto=["node1", "node2"]))
    assert (both.status, both.state.foo) == ("completed", "abc|node-1|node-2|node-2")

    paused = await app.run({"foo": "abc"}, thread_id="b")
    assert paused.suspension is not None
    skipped = await app.resume(paused.suspension.token, Command(goto="node2", update={"foo": "!"}))
    assert (skipped.path, skipped.state.foo) == (["node2"], "abc!|node-2")

    paused = await app.run({"foo": "abc"}, thread_id="c")
    assert paused.suspension is not None
    with pytest.raises(InvalidCommand, match="nope"):
        await app.resume(paused.suspension.token, Command(goto="nope"))
    ended = await app.resume(paused.suspension.token, Command(goto=END))
    assert (ended.status, ended.path, ended.state.foo) == ("completed", [], "abc")


async def test_finishing_by_hand_drops_branches_in_flight(store: CheckpointStore) -> None:
    """``update_state(thread, values, as_node=END)`` while a fan-out waits on a paused
    branch finishes the thread: no branches, no suspension, the branch's token stale,
    the values merged; the next input starts a new turn. Everything else edits a
    fan-out only once its branches meet (``UpdateRefused``)."""
    app = retrieval(store, interrupt_before=["retriever_one"])
    paused = await app.run(ASKED, thread_id="f")
    assert [s.node for s in paused.suspensions] == ["retriever_one"]
    before = await app.get_state("f")
    assert before is not None and before.branches
    ended = await app.update_state("f", {"answer": "by hand"}, as_node=END)
    assert (ended.status, ended.next, ended.branches, ended.suspensions) == (
        "completed",
        None,
        (),
        (),
    )
    assert ended.state.answer == "by hand"
    latest = await app.get_state("f")
    assert latest is not None and (latest.status, latest.branches) == ("completed", ())
    with pytest.raises(StaleResumeToken):
        await app.resume(paused.suspensions[0].token, None)
    again = await app.run({"query": "q"}, thread_id="f", interrupt_before=[])
    assert again.status == "completed" and again.state.answer.startswith("doc1")


# -- test_send_react_interrupt (test_large_cases.py) --------------------------


class Chat(BaseModel):
    messages: Annotated[list[str], append] = []


async def test_send_react_interrupt(store: CheckpointStore) -> None:
    """Follows LangGraph's ``test_send_react_interrupt``: the agent's tool call is sent
    to ``foo``, which pauses before running; the snapshot shows the paused branch;
    removing the tool call by hand ends the thread without ``foo`` ever running.
    Deliberate difference: an edit while a fan-out's branches are in flight is refused
    (``UpdateRefused``, the branches are isolated until they meet), so the edit that
    drops the pending call is ``as_node=END``, which finishes the thread with it; and the
    run goes on from the pause with ``resume(token, None)``."""
    called: list[Any] = []

    async def agent(state: Chat) -> dict[str, Any]:
        return {"messages": ["call foo(hi=[1, 2, 3])"]}

    async def foo(state: Chat, ctx: Any) -> dict[str, Any]:
        called.append(ctx.item)
        return {"messages": [f"foo says {ctx.item['hi']}"]}

    def route(state: Chat) -> list[Send]:
        last = state.messages[-1]
        return [Send("foo", {"hi": [1, 2, 3]})] if last.startswith("call foo") else []

    graph = StateGraph(Chat)
    graph.add_node("agent", agent).add_node("foo", foo)
    graph.add_edge(START, "agent").add_router("agent", route, ["foo"])
    graph.add_edge("foo", END)
    done = await graph.compile(store=store).run({"messages": ["hello"]}, thread_id="1")
    assert done.state.messages == ["hello", "call foo(hi=[1, 2, 3])", "foo says [1, 2, 3]"]

    app = graph.compile(store=store, interrupt_before=["foo"])
    paused = await app.run({"messages": ["hello"]}, thread_id="2")
    assert [(s.node, s.breakpoint) for s in paused.suspensions] == [("foo", "before")]
    assert len(called) == 1
    snapshot = await app.get_state("2")
    assert snapshot is not None
    assert [(b.node, b.status) for b in snapshot.branches] == [("foo", "suspended")]
    with pytest.raises(UpdateRefused, match="parallel branches are in flight"):
        await app.update_state("2", {"messages": ["Bye now"]})
    ended = await app.update_state("2", {"messages": Replace(["hello", "Bye now"])}, as_node=END)
    assert (ended.status, ended.next, ended.branches) == ("completed", None, ())
    assert ended.state.messages == ["hello", "Bye now"]
    assert len(called) == 1  # foo never ran on this thread

    paused = await app.run({"messages": ["hello"]}, thread_id="3")
    resumed = await app.resume(paused.suspensions[0].token, None)
    assert resumed.path == ["foo"] and resumed.state.messages[-1] == "foo says [1, 2, 3]"
