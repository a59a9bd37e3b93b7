"""Static breakpoints: interrupt_before/interrupt_after, compiled or per call, pause a
run with an ordinary (checkpointed, signed) suspension that resume(token, None) ends."""

from __future__ import annotations

from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Command,
    GraphValidationError,
    InvalidResumeValue,
    NodeContext,
    StaleResumeToken,
    StateGraph,
    Suspend,
    Suspended,
    ThreadSuspended,
    UpdateRefused,
)

from .helpers import Counter, chain, recorder


def logger(name: str, calls: list[str]) -> Any:
    async def node(state: Counter) -> dict[str, Any]:
        calls.append(name)
        return {"log": [name]}

    return node


async def test_pause_before_a_node_then_resume_runs_it_once(store: CheckpointStore) -> None:
    calls: list[str] = []
    app = StateGraph(Counter)
    for name in ("a", "b", "c"):
        app.add_node(name, recorder(name, calls))
    app.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    compiled = app.compile(store=store, interrupt_before=["b"])
    paused = await compiled.run({}, thread_id="t")
    assert paused.status == "suspended"
    assert paused.path == ["a"] and calls == ["a"]
    assert paused.suspension is not None
    assert (paused.suspension.node, paused.suspension.breakpoint) == ("b", "before")
    assert paused.suspension.payload is None
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert (snapshot.status, snapshot.next) == ("suspended", "b")
    assert snapshot.suspension is not None and snapshot.suspension.breakpoint == "before"
    assert snapshot.suspension.token == paused.suspension.token

    # A graph compiled anew over the same store (as another process would) resumes it.
    again = app.compile(store=store, interrupt_before=["b"])
    done = await again.resume(str(paused.suspension.token), None)
    assert done.status == "completed"
    assert done.path == ["b", "c"]
    assert calls == ["a", "b", "c"]
    assert done.state.n == 3


async def test_pause_after_a_node_then_resume_does_not_run_it_again(
    store: CheckpointStore,
) -> None:
    calls: list[str] = []
    graph = StateGraph(Counter)
    for name in ("a", "b"):
        graph.add_node(name, recorder(name, calls))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = graph.compile(store=store, interrupt_after=["a"])
    paused = await app.run({}, thread_id="t")
    assert paused.status == "suspended"
    assert paused.suspension is not None
    assert (paused.suspension.node, paused.suspension.breakpoint) == ("a", "after")
    assert paused.state.n == 1  # a's update is in
    snapshot = await app.get_state("t")
    assert snapshot is not None and snapshot.next == "b"
    done = await app.resume(paused.suspension.token, None)
    assert (done.status, done.path, calls) == ("completed", ["b"], ["a", "b"])


async def test_a_pause_is_one_pause_between_two_nodes(store: CheckpointStore) -> None:
    """After `a` and before `b` is the same point: the run pauses there once."""
    app = chain("a", "b", store=store)
    paused = await app.run({}, thread_id="t", interrupt_after=["a"], interrupt_before=["b"])
    assert paused.suspension is not None and paused.suspension.breakpoint == "after"
    done = await app.resume(
        paused.suspension.token, None, interrupt_after=["a"], interrupt_before=["b"]
    )
    assert (done.status, done.path) == ("completed", ["b"])


async def test_after_the_last_node_the_run_completes(store: CheckpointStore) -> None:
    app = chain("a", "b", store=store)
    done = await app.run({}, thread_id="t", interrupt_after=["b"])
    assert (done.status, done.path) == ("completed", ["a", "b"])


async def test_every_run_pauses_on_each_turn(store: CheckpointStore) -> None:
    calls: list[str] = []
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a", calls)).add_node("b", recorder("b", calls))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = graph.compile(store=store, interrupt_before=["a"])
    for turn in range(2):
        paused = await app.run({}, thread_id="t")
        assert paused.suspension is not None and paused.suspension.node == "a"
        done = await app.resume(paused.suspension.token, None)
        assert done.path == ["a", "b"]
        assert done.state.n == 2 * (turn + 1)


async def test_per_call_breakpoints_replace_the_compiled_ones(store: CheckpointStore) -> None:
    graph = StateGraph(Counter)
    for name in ("a", "b", "c"):
        graph.add_node(name, recorder(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    app = graph.compile(store=store, interrupt_before=["b"])
    free = await app.run({}, thread_id="t1", interrupt_before=[])
    assert free.status == "completed"
    paused = await app.run({}, thread_id="t2", interrupt_before=["c"])
    assert paused.suspension is not None and paused.suspension.node == "c"
    assert paused.path == ["a", "b"]
    # The resume uses the compiled ones: `b` already ran, so nothing more pauses.
    done = await app.resume(paused.suspension.token, None)
    assert done.path == ["c"]


async def test_the_pause_token_is_an_ordinary_token(store: CheckpointStore) -> None:
    app = chain("a", "b", store=store)
    paused = await app.run({}, thread_id="t", interrupt_before=["b"])
    assert paused.suspension is not None
    token = paused.suspension.token
    with pytest.raises(ThreadSuspended) as raised:
        await app.run({"n": 5}, thread_id="t")
    assert raised.value.token == token
    with pytest.raises(InvalidResumeValue, match=r"before node `b`.*resume it with None"):
        await app.resume(token, "yes")
    done = await app.resume(token, None)  # the refused value used nothing up
    assert done.status == "completed"
    with pytest.raises(StaleResumeToken):
        await app.resume(token, None)
    statuses = [snapshot.status async for snapshot in app.history("t")]
    assert "suspended" in statuses


async def test_breakpoints_in_parallel_branches(store: CheckpointStore) -> None:
    calls: list[str] = []
    graph = StateGraph(Counter)
    for name in ("start", "a", "a2", "b", "join"):
        graph.add_node(name, logger(name, calls))
    graph.add_edge(START, "start").add_edge("start", ["a", "b"]).add_edge("a", "a2")
    graph.add_edge(["a2", "b"], "join").add_edge("join", END)
    app = graph.compile(store=store, interrupt_before=["b"], interrupt_after=["a"])
    paused = await app.run({}, thread_id="t")
    assert paused.status == "suspended"
    found = [(s.node, s.branch, s.breakpoint) for s in paused.suspensions]
    assert found == [("a", "a[0]", "after"), ("b", "b[1]", "before")]
    assert calls == ["start", "a"]
    with pytest.raises(InvalidResumeValue, match="after node `a`"):
        await app.resume(paused.suspensions[0].token, 1)
    # Resuming one branch runs it on; the other stays paused.
    part = await app.resume(paused.suspensions[0].token, None)
    assert part.status == "suspended"
    assert [(s.node, s.breakpoint) for s in part.suspensions] == [("b", "before")]
    assert calls == ["start", "a", "a2"]
    done = await app.resume(part.suspensions[0].token, None)
    assert done.status == "completed"
    assert calls == ["start", "a", "a2", "b", "join"]
    assert done.state.log == ["start", "a", "a2", "b", "join"]


async def test_a_paused_branch_takes_a_command_update_and_refuses_a_goto(
    store: CheckpointStore,
) -> None:
    """A branch paused at a breakpoint goes on after ``resume(token, Command(update=...))``
    with the update merged at the join; a ``goto`` or a plain value is an
    ``InvalidResumeValue`` naming what the pause takes, and leaves the token good
    (LangGraph resumes a static breakpoint with ``None``, or a ``Command`` whose update
    is applied first)."""
    calls: list[str] = []
    graph = StateGraph(Counter)
    for name in ("start", "a", "b", "join"):
        graph.add_node(name, logger(name, calls))
    graph.add_edge(START, "start").add_edge("start", ["a", "b"])
    graph.add_edge(["a", "b"], "join").add_edge("join", END)
    app = graph.compile(store=store, interrupt_before=["b"])
    paused = await app.run({}, thread_id="t")
    (pause,) = paused.suspensions
    assert ("b", "b[1]", "before") == (pause.node, pause.branch, pause.breakpoint)
    allowed = r"resume it with None, or Command\(update=\.\.\.\) .*branch `b\[1\]`"
    for wrong in (Command(goto="join"), "yes"):
        with pytest.raises(InvalidResumeValue, match=allowed):
            await app.resume(pause.token, wrong)
    done = await app.resume(pause.token, Command(update={"log": ["edited"], "n": 5}))
    assert ("completed", 5) == (done.status, done.state.n)
    assert ["start", "a", "edited", "b", "join"] == done.state.log
    assert ["start", "a", "b", "join"] == calls


async def test_a_branch_paused_after_its_last_node_is_saved_done_once_resumed(
    store: CheckpointStore,
) -> None:
    """Resuming a branch paused after its last node, while another branch stays
    suspended, saves it done (with the resume's update): its token is then stale, and
    the join runs once the other branch is answered."""
    calls: list[str] = []

    async def ask(state: Counter, ctx: NodeContext) -> dict[str, Any] | Suspend:
        if not ctx.resuming:
            return Suspend("ok?")
        return {"log": [f"ask={ctx.resume_value}"]}

    graph = StateGraph(Counter)
    for name in ("start", "a", "join"):
        graph.add_node(name, logger(name, calls))
    graph.add_node("ask", ask)
    graph.add_edge(START, "start").add_edge("start", ["a", "ask"])
    graph.add_edge(["a", "ask"], "join").add_edge("join", END)
    app = graph.compile(store=store, interrupt_after=["a"])
    paused = await app.run({}, thread_id="t")
    first, second = paused.suspensions
    assert (("a", "after"), ("ask", None)) == (
        (first.node, first.breakpoint),
        (second.node, second.breakpoint),
    )
    part = await app.resume(first.token, Command(update={"n": 2}))
    assert [second.token] == [s.token for s in part.suspensions]
    snapshot = await app.get_state("t")
    assert {"a[0]": "done", "ask[1]": "suspended"} == {b.id: b.status for b in snapshot.branches}
    with pytest.raises(StaleResumeToken):
        await app.resume(first.token, None)
    done = await app.resume(second.token, "yes")
    assert ("completed", 2, ["start", "a", "ask=yes", "join"]) == (
        done.status,
        done.state.n,
        done.state.log,
    )


async def test_a_streamed_run_ends_with_the_pause(store: CheckpointStore) -> None:
    app = chain("a", "b", store=store)
    async with app.stream({}, thread_id="t", interrupt_before=["b"]) as events:
        seen = [event async for event in events]
    last = seen[-1]
    assert isinstance(last, Suspended)
    assert (last.suspension.node, last.suspension.breakpoint) == ("b", "before")
    async with app.stream_resume(last.suspension.token, None, mode="updates") as chunks:
        assert [chunk async for chunk in chunks] == [{"b": {"n": 2, "log": ["b"]}}]


@pytest.mark.parametrize("option", ["interrupt_before", "interrupt_after"])
async def test_unknown_breakpoint_nodes_are_named_with_the_nodes(option: str) -> None:
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a")).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(GraphValidationError, match=rf"{option} names 'x', 'y'.*nodes are `a`"):
        graph.compile(**{option: ["a", "x", "y"]})
    app = graph.compile()
    with pytest.raises(GraphValidationError, match=rf"{option} names 'x'.*nodes are `a`"):
        await app.run({}, thread_id="t", **{option: ["x"]})
    with pytest.raises(GraphValidationError, match=f"{option} must be a list"):
        graph.compile(**{option: "a"})
    assert await app.get_state("t") is None  # refused before the thread was touched


async def test_resuming_a_nodes_own_suspension_does_not_pause_before_it(
    store: CheckpointStore,
) -> None:
    class Ask:
        async def run(self, state: Counter, ctx: Any) -> Any:
            return Suspend("name?")

        async def resume(self, state: Counter, value: Any, ctx: Any) -> dict[str, Any]:
            return {"log": [f"got {value}"]}

    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a")).add_node("ask", Ask())
    graph.add_edge(START, "a").add_edge("a", "ask").add_edge("ask", END)
    app = graph.compile(store=store, interrupt_before=["ask"])
    paused = await app.run({}, thread_id="t")
    assert paused.suspension is not None and paused.suspension.breakpoint == "before"
    asked = await app.resume(paused.suspension.token, None)
    assert asked.suspension is not None
    assert (asked.suspension.breakpoint, asked.suspension.payload) == (None, "name?")
    done = await app.resume(asked.suspension.token, "Ada")
    assert (done.status, done.path, done.state.log) == ("completed", ["ask"], ["a", "got Ada"])


async def test_a_branch_resumed_from_its_suspension_does_not_pause_before_it(
    store: CheckpointStore,
) -> None:
    class Ask:
        async def run(self, state: Counter, ctx: Any) -> Any:
            return Suspend("?")

        async def resume(self, state: Counter, value: Any, ctx: Any) -> dict[str, Any]:
            return {"log": [value]}

    calls: list[str] = []
    graph = StateGraph(Counter)
    graph.add_node("ask", Ask()).add_node("other", logger("other", calls))
    graph.add_node("join", logger("join", calls))
    graph.add_edge(START, ["ask", "other"]).add_edge(["ask", "other"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=store)
    asked = await app.run({}, thread_id="t")
    assert [s.node for s in asked.suspensions] == ["ask"]
    done = await app.resume(asked.suspensions[0].token, "x", interrupt_before=["ask"])
    assert done.status == "completed" and done.state.log == ["x", "other", "join"]


async def test_update_state_while_paused_changes_what_the_next_node_sees(
    store: CheckpointStore,
) -> None:
    """An edit at a breakpoint keeps the pause, with a new token, and the next node sees it."""
    seen: list[int] = []

    async def b(state: Counter) -> dict[str, Any]:
        seen.append(state.n)
        return {"log": ["b"]}

    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a")).add_node("b", b)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = graph.compile(store=store, interrupt_before=["b"])
    paused = await app.run({}, thread_id="t")
    assert paused.suspension is not None

    edited = await app.update_state("t", {"n": 41, "log": ["edited"]})
    assert (edited.status, edited.next, edited.origin) == ("suspended", "b", "update")
    assert edited.suspension is not None and edited.suspension.breakpoint == "before"
    assert edited.suspension.token != paused.suspension.token
    with pytest.raises(StaleResumeToken):
        await app.resume(paused.suspension.token, None)

    done = await app.resume(edited.suspension.token, None)
    assert (done.status, done.path) == ("completed", ["b"])
    assert [41] == seen
    assert ["a", "edited", "b"] == done.state.log


async def test_update_state_on_a_node_s_own_suspension_still_needs_as_node(
    store: CheckpointStore,
) -> None:
    """Only a breakpoint's pause takes an edit without as_node; a Suspend is answered."""

    class Ask:
        async def run(self, state: Counter, ctx: Any) -> Suspend:
            return Suspend("which?")

        async def resume(self, state: Counter, value: Any, ctx: Any) -> dict[str, Any]:
            return {"log": [str(value)]}

    graph = StateGraph(Counter)
    graph.add_node("ask", Ask())
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(store=store)
    await app.run({}, thread_id="t")
    with pytest.raises(UpdateRefused, match="suspended at node `ask`"):
        await app.update_state("t", {"n": 1})
