"""Subgraphs: a compiled graph added as a node runs on a child thread of its own, in
the parent's store; suspensions, failures and streams pass through it.

Several tests are the failure modes LangGraph's users report with subgraphs: an
interrupt inside a subgraph re-running the parent node (and the child's earlier
nodes) on resume, nested subgraphs resuming the wrong level, parallel subgraphs
resuming the wrong child, a subgraph's state leaking from one call into the next.
"""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    Emitted,
    GraphValidationError,
    MemoryCheckpointStore,
    NodeContext,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    Send,
    StaleResumeToken,
    StateGraph,
    Suspend,
    ThreadBusy,
    append,
)
from research_fsm.engine._subgraph import child_thread


class Outer(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []
    answer: str = ""
    rounds: int = 0


class Inner(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []
    draft: str = ""  # the child's own field: never reaches the parent


def note(name: str, calls: Tally[str]) -> Any:
    async def node(state: Any) -> dict[str, Any]:
        calls[name] += 1
        return {"notes": [f"{name}:{state.topic}"]}

    return node


class AskInChild:
    """A child node that asks a question once and records what it was told."""

    def __init__(self, calls: Tally[str], name: str = "ask") -> None:
        self.calls = calls
        self.name = name

    async def run(self, state: Any, ctx: NodeContext) -> Suspend:
        self.calls[f"{self.name}.run"] += 1
        return Suspend({"question": f"{self.name}?", "topic": state.topic})

    async def resume(self, state: Any, value: Any, ctx: NodeContext) -> dict[str, Any]:
        self.calls[f"{self.name}.resume"] += 1
        return {"notes": [f"{self.name}={value}"]}


def child_graph(
    store: CheckpointStore, calls: Tally[str], *, ask: bool = False
) -> CompiledGraph[Inner]:
    """START -> gather -> (ask ->) analyse -> END over ``Inner``."""
    graph = StateGraph(Inner)
    graph.add_node("gather", note("gather", calls))
    graph.add_node("analyse", note("analyse", calls))
    graph.add_edge(START, "gather")
    if ask:
        graph.add_node("ask", AskInChild(calls))
        graph.add_edge("gather", "ask").add_edge("ask", "analyse")
    else:
        graph.add_edge("gather", "analyse")
    graph.add_edge("analyse", END)
    return graph.compile(store=store)


def parent_graph(
    store: CheckpointStore, child: CompiledGraph[Any], calls: Tally[str]
) -> CompiledGraph[Outer]:
    """START -> plan -> research (the child) -> write -> END over ``Outer``."""
    graph = StateGraph(Outer)
    graph.add_node("plan", note("plan", calls))
    graph.add_node("research", child)
    graph.add_node("write", note("write", calls))
    graph.add_edge(START, "plan").add_edge("plan", "research")
    graph.add_edge("research", "write").add_edge("write", END)
    return graph.compile(store=store)


async def test_a_subgraph_runs_as_one_node_on_shared_fields(store: CheckpointStore) -> None:
    """The child gets the shared fields, its changes come back through the parent's
    reducers (appended notes once, not twice), and its own fields stay its own."""
    calls: Tally[str] = Tally()
    app = parent_graph(store, child_graph(store, calls), calls)
    result = await app.run({"topic": "acme"}, thread_id="p")
    assert (result.status, result.path) == ("completed", ["plan", "research", "write"])
    assert result.state.notes == ["plan:acme", "gather:acme", "analyse:acme", "write:acme"]
    assert calls == Tally({"plan": 1, "gather": 1, "analyse": 1, "write": 1})


async def test_the_child_checkpoints_on_its_derived_thread_in_the_parent_store(
    store: CheckpointStore,
) -> None:
    """The child's run is saved under ``<parent>.<node>.<digest>`` in the same store,
    one checkpoint per child step (plus its start)."""
    calls: Tally[str] = Tally()
    app = parent_graph(store, child_graph(store, calls), calls)
    result = await app.run({"topic": "acme"}, thread_id="p")
    history = [cp async for cp in app.history("p")]
    run_id = (await store.load_latest("p")).run_id  # type: ignore[union-attr]
    thread = child_thread("p", "research", run_id, "s1")
    assert thread.startswith("p.research.") and len(thread) == len("p.research.") + 16
    child = [cp async for cp in store.history(thread)]
    assert [cp.last_node for cp in child] == ["analyse", "gather", None]
    assert child[0].status == "completed"
    assert len(history) == 4 and result.status == "completed"


async def test_input_and_output_functions_map_states_that_differ(store: CheckpointStore) -> None:
    """With ``input=``/``output=`` a child over an unrelated model runs; the output's
    update goes through the parent's reducers."""

    class Query(BaseModel):
        q: str
        hits: list[str] = []

    async def search(state: Query) -> dict[str, Any]:
        return {"hits": [f"{state.q}-1", f"{state.q}-2"]}

    child = StateGraph(Query).add_node("search", search)
    child.add_edge(START, "search").add_edge("search", END)
    graph = StateGraph(Outer)
    graph.add_node(
        "lookup",
        child.compile(store=store),
        input=lambda s: {"q": s.topic.upper()},
        output=lambda c: {"notes": c.hits, "answer": c.hits[0]},
    )
    graph.add_edge(START, "lookup").add_edge("lookup", END)
    result = await graph.compile(store=store).run({"topic": "acme", "notes": ["x"]}, thread_id="p")
    assert (result.state.notes, result.state.answer) == (["x", "ACME-1", "ACME-2"], "ACME-1")


async def test_resume_goes_into_the_child_and_reruns_nothing(store: CheckpointStore) -> None:
    """LangGraph: an interrupt inside a subgraph re-runs the parent node and the child's
    nodes before it. Here the parent's token resumes the child's suspended node once,
    then the child and the parent go on; nothing before the suspension runs again."""
    calls: Tally[str] = Tally()
    app = parent_graph(store, child_graph(store, calls, ask=True), calls)
    first = await app.run({"topic": "acme"}, thread_id="p")
    assert first.status == "suspended" and first.suspension is not None
    assert (first.suspension.node, first.suspension.payload) == (
        "research",
        {"question": "ask?", "topic": "acme"},
    )
    assert first.path == ["plan", "research"]
    done = await app.resume(first.suspension.token, "yes")
    assert (done.status, done.path) == ("completed", ["research", "write"])
    assert done.state.notes == [
        "plan:acme",
        "gather:acme",
        "ask=yes",
        "analyse:acme",
        "write:acme",
    ]
    assert calls == Tally(
        {"plan": 1, "gather": 1, "ask.run": 1, "ask.resume": 1, "analyse": 1, "write": 1}
    )
    with pytest.raises(StaleResumeToken):  # the token was used
        await app.resume(first.suspension.token, "again")


async def test_nested_subgraphs_resume_the_innermost_then_each_parent(
    store: CheckpointStore,
) -> None:
    """A suspension two levels down suspends the top run; its token resumes the
    grandchild, then the child, then the top; each level's earlier nodes ran once."""
    calls: Tally[str] = Tally()
    grandchild = child_graph(store, calls, ask=True)
    middle = StateGraph(Inner)
    middle.add_node("before", note("before", calls)).add_node("deep", grandchild)
    middle.add_node("after", note("after", calls))
    middle.add_edge(START, "before").add_edge("before", "deep").add_edge("deep", "after")
    middle.add_edge("after", END)
    app = parent_graph(store, middle.compile(store=store), calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None and first.suspension.node == "research"
    done = await app.resume(first.suspension.token, 42)
    assert done.state.notes == [
        "plan:t",
        "before:t",
        "gather:t",
        "ask=42",
        "analyse:t",
        "after:t",
        "write:t",
    ]
    assert set(calls.values()) == {1}


async def test_two_suspensions_in_a_row_inside_the_child(store: CheckpointStore) -> None:
    """The child asks twice: each parent token answers the question asked then."""
    calls: Tally[str] = Tally()
    graph = StateGraph(Inner)
    graph.add_node("one", AskInChild(calls, "one")).add_node("two", AskInChild(calls, "two"))
    graph.add_edge(START, "one").add_edge("one", "two").add_edge("two", END)
    app = parent_graph(store, graph.compile(store=store), calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None and first.suspension.payload["question"] == "one?"
    second = await app.resume(first.suspension.token, "a")
    assert second.suspension is not None and second.suspension.payload["question"] == "two?"
    assert second.path == ["research"]
    done = await app.resume(second.suspension.token, "b")
    assert done.state.notes == ["plan:t", "one=a", "two=b", "write:t"]
    assert calls["plan"] == 1 and calls["one.run"] == 1 and calls["two.run"] == 1


async def test_each_call_of_a_subgraph_starts_a_fresh_child(store: CheckpointStore) -> None:
    """A subgraph run twice in one run (a loop) and in the next turn gets a new child
    thread each time: nothing of an earlier call's child state leaks in."""
    calls: Tally[str] = Tally()

    class Tally2(BaseModel):
        topic: str = ""
        draft: str = ""

    async def write_draft(state: Tally2) -> dict[str, Any]:
        calls["draft"] += 1
        return {"draft": state.draft + "+" + state.topic}

    child = StateGraph(Tally2).add_node("draft", write_draft)
    child.add_edge(START, "draft").add_edge("draft", END)
    graph = StateGraph(Outer)

    async def bump(state: Outer) -> dict[str, Any]:
        return {"rounds": state.rounds + 1, "notes": [f"round{state.rounds}"]}

    graph.add_node("bump", bump)
    graph.add_node(
        "sub",
        child.compile(store=store),
        input=lambda s: {"topic": s.topic},
        output=lambda c: {"answer": c.draft},
    )
    graph.add_edge(START, "bump").add_edge("bump", "sub")
    graph.add_router(
        "sub", lambda s: "again" if s.rounds < 2 else "done", {"again": "bump", "done": END}
    )
    app = graph.compile(store=store)
    result = await app.run({"topic": "x"}, thread_id="p")
    assert (result.state.answer, calls["draft"]) == ("+x", 2)
    result = await app.run({"topic": "y", "rounds": 0}, thread_id="p")
    assert (result.state.answer, calls["draft"]) == ("+y", 4)


async def test_a_failing_child_step_is_retried_alone_by_run_none(store: CheckpointStore) -> None:
    """The child's node fails: the parent fails at its subgraph node; ``run(None)``
    goes on inside the child, from the failed node, and nothing before it runs again."""
    calls: Tally[str] = Tally()
    failing = {"left": 1}

    async def flaky(state: Inner) -> dict[str, Any]:
        calls["flaky"] += 1
        if failing["left"]:
            failing["left"] -= 1
            raise RuntimeError("service down")
        return {"notes": ["flaky"]}

    graph = StateGraph(Inner)
    graph.add_node("gather", note("gather", calls)).add_node("flaky", flaky)
    graph.add_edge(START, "gather").add_edge("gather", "flaky").add_edge("flaky", END)
    app = parent_graph(store, graph.compile(store=store), calls)
    with pytest.raises(NodeFailed) as failed:
        await app.run({"topic": "t"}, thread_id="p")
    assert failed.value.node == "research"
    assert "service down" in str(failed.value)
    done = await app.run(None, thread_id="p")
    assert done.state.notes == ["plan:t", "gather:t", "flaky", "write:t"]
    assert calls == Tally({"plan": 1, "gather": 1, "flaky": 2, "write": 1})


async def test_parallel_subgraph_branches_each_suspend_and_resume_their_own_child(
    store: CheckpointStore,
) -> None:
    """LangGraph: interrupts in parallel subgraphs resume the wrong one or re-run the
    others. Here each ``Send`` item runs its own child; each branch's token resumes
    only its child, and the join sees both."""
    calls: Tally[str] = Tally()
    child = child_graph(store, calls, ask=True)
    graph = StateGraph(Outer)
    graph.add_node("plan", note("plan", calls))
    graph.add_node(
        "research",
        child,
        input=lambda s: {"topic": s.topic},
        output=lambda c: {"notes": c.notes},
    )

    graph.add_node("write", note("write", calls))
    graph.add_edge(START, "plan")
    graph.add_router(
        "plan", lambda s: [Send("research", t) for t in ("a", "b")], ["research"], join="write"
    )
    graph.add_edge("research", "write").add_edge("write", END)
    app = graph.compile(store=store)
    first = await app.run({"topic": "acme"}, thread_id="p")
    assert first.status == "suspended"
    assert [s.branch for s in first.suspensions] == ["research[0]", "research[1]"]
    second = await app.resume(first.suspensions[1].token, "B")
    assert second.status == "suspended"
    assert [s.branch for s in second.suspensions] == ["research[0]"]
    done = await app.resume(second.suspensions[0].token, "A")
    assert done.status == "completed"
    assert sorted(n for n in done.state.notes if "=" in n) == ["ask=A", "ask=B"]
    assert calls["ask.run"] == 2 and calls["ask.resume"] == 2 and calls["gather"] == 2
    assert calls["plan"] == 1 and calls["write"] == 1


async def test_send_items_are_each_child_s_input(store: CheckpointStore) -> None:
    """A subgraph as a ``Send`` target: one child run per item; a dict item's keys
    are the child's input over the shared fields, and ``input(state, item)`` gets it
    too. Fields the child only read do not come back (no join conflict on `topic`)."""
    calls: Tally[str] = Tally()
    child = child_graph(store, calls)
    for mapped in (False, True):
        graph = StateGraph(Outer)
        if mapped:
            graph.add_node("research", child, input=lambda s, item: {"topic": item.upper()})
        else:
            graph.add_node("research", child)
        graph.add_node("write", note("write", calls))
        items = ("a", "b", "c") if mapped else ({"topic": "a"}, {"topic": "b"}, {"topic": "c"})
        graph.add_router(
            START, lambda s, i=items: [Send("research", t) for t in i], ["research"], join="write"
        )
        graph.add_edge("research", "write").add_edge("write", END)
        result = await graph.compile(store=store).run({"topic": "all"}, thread_id=f"p{mapped}")
        letters = "ABC" if mapped else "abc"
        assert result.state.notes == [
            *(f"{step}:{x}" for x in letters for step in ("gather", "analyse")),
            "write:all",
        ]
    assert calls["gather"] == 6


async def test_child_events_carry_their_path(store: CheckpointStore) -> None:
    """Streamed, the child's node events come as ``research/gather`` and its
    ``ctx.emit`` data as ``research/analyse``; the parent's own node events stay."""
    graph = StateGraph(Inner)

    async def analyse(state: Inner, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "hi")
        return {"notes": ["analysed"]}

    graph.add_node("gather", note("gather", Tally())).add_node("analyse", analyse)
    graph.add_edge(START, "gather").add_edge("gather", "analyse").add_edge("analyse", END)
    app = parent_graph(store, graph.compile(store=store), Tally())
    seen: list[tuple[str, str]] = []
    async with app.stream({"topic": "t"}, thread_id="p") as events:
        async for event in events:
            if isinstance(event, (NodeStarted, NodeFinished, Emitted)):
                seen.append((type(event).__name__, event.node))
    assert seen == [
        ("NodeStarted", "plan"),
        ("NodeFinished", "plan"),
        ("NodeStarted", "research"),
        ("NodeStarted", "research/gather"),
        ("NodeFinished", "research/gather"),
        ("NodeStarted", "research/analyse"),
        ("Emitted", "research/analyse"),
        ("NodeFinished", "research/analyse"),
        ("NodeFinished", "research"),
        ("NodeStarted", "write"),
        ("NodeFinished", "write"),
    ]


def test_a_child_on_another_store_is_refused_at_compile() -> None:
    """A child compiled with another store than the parent's is refused: its
    checkpoints must live in the parent's store."""
    child = child_graph(MemoryCheckpointStore(), Tally())
    with pytest.raises(GraphValidationError) as refused:
        parent_graph(MemoryCheckpointStore(), child, Tally())
    assert refused.value.problems[0].startswith(
        "node `research`: its child graph keeps checkpoints in <research_fsm.engine"
    )
    assert (
        "compile the child without a store (it then uses the parent's)"
        in (refused.value.problems[0])
    )


def test_fields_that_differ_in_type_are_refused_without_mapping_functions() -> None:
    """A field shared by name with another type, a required child field the parent
    lacks, no shared field at all: each named, with what to pass."""
    store = MemoryCheckpointStore()

    class Clash(BaseModel):
        topic: int = 0
        needed: str

    async def noop(state: Clash) -> None:
        return None

    child = StateGraph(Clash).add_node("n", noop)
    child.add_edge(START, "n").add_edge("n", END)
    compiled = child.compile(store=store)
    graph = StateGraph(Outer).add_node("sub", compiled)
    graph.add_edge(START, "sub").add_edge("sub", END)
    with pytest.raises(GraphValidationError) as refused:
        graph.compile(store=store)
    assert refused.value.problems == [
        "node `sub`: fields shared by name differ in type: `topic` (str in `Outer`, int in "
        "`Clash`); pass `input=` and `output=` to map the states",
        "node `sub`: the child's required field(s) `needed` are not in `Outer`: pass "
        "`input=` (parent state -> the child's input)",
    ]

    class Apart(BaseModel):
        other: int = 0

    alone = StateGraph(Apart).add_node("n", noop)
    alone.add_edge(START, "n").add_edge("n", END)
    graph = StateGraph(Outer).add_node("sub", alone.compile(store=store))
    graph.add_edge(START, "sub").add_edge("sub", END)
    with pytest.raises(GraphValidationError) as refused:
        graph.compile(store=store)
    assert refused.value.problems == [
        "node `sub`: `Apart` shares no field with `Outer`: pass `input=` and `output=` to "
        "map the states"
    ]


def test_input_or_output_on_a_plain_node_is_refused() -> None:
    """``input=``/``output=`` belong to subgraphs: on a function node, a named error."""

    async def fn(state: Outer) -> None:
        return None

    with pytest.raises(GraphValidationError) as refused:
        StateGraph(Outer).add_node("n", fn, input=lambda s: {})
    assert refused.value.problems == [
        "node `n`: `input=` and `output=` map a subgraph's state; `fn` is not a compiled graph"
    ]


def test_child_thread_ids_are_valid_and_fall_back_for_odd_names() -> None:
    """The derived id is ``<parent>.<node>.<16 hex>``; a node name with characters a
    thread id may not hold, or a long parent id, gives ``sub.<32 hex>``."""
    assert child_thread("t1", "research", "r", "s1") == child_thread("t1", "research", "r", "s1")
    assert child_thread("t1", "research", "r", "s1") != child_thread("t1", "research", "r", "s2")
    assert child_thread("t1", "a b", "r", "s1").startswith("sub.")
    assert len(child_thread("x" * 128, "n", "r", "s1")) == 36


class FailOnce:
    """A store that fails the first save matching ``when`` (as a full disk would)."""

    def __init__(self, inner: CheckpointStore, when: Any) -> None:
        self.inner = inner
        self.when = when
        self.failed = False
        self.saves_changes = inner.saves_changes

    async def acquire(self, thread_id: str) -> Any:
        return await self.inner.acquire(thread_id)

    async def load_latest(self, thread_id: str) -> Any:
        return await self.inner.load_latest(thread_id)

    async def save(self, checkpoint: Any) -> None:
        if not self.failed and self.when(checkpoint):
            self.failed = True
            raise OSError("no space left on device")
        await self.inner.save(checkpoint)

    def history(self, thread_id: str, *, limit: Any = None, before: Any = None) -> Any:
        return self.inner.history(thread_id, limit=limit, before=before)

    async def load(self, thread_id: str, checkpoint_id: str) -> Any:
        return await self.inner.load(thread_id, checkpoint_id)

    async def delete(self, thread_id: str) -> None:
        await self.inner.delete(thread_id)

    async def secret(self) -> bytes:
        return await self.inner.secret()


async def test_a_child_suspended_before_the_parent_saved_is_not_run_again(
    store: CheckpointStore,
) -> None:
    """The child saved its suspension but the parent's save failed: ``run(None)``
    suspends the parent again from the child's saved suspension (``ask.run`` once),
    and the new token resumes it."""
    calls: Tally[str] = Tally()
    flaky = FailOnce(store, lambda cp: cp.thread_id == "p" and cp.status == "suspended")
    app = parent_graph(flaky, child_graph(flaky, calls, ask=True), calls)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="no space"):
        await app.run({"topic": "t"}, thread_id="p")
    again = await app.run(None, thread_id="p")
    assert again.suspension is not None and again.suspension.payload["question"] == "ask?"
    done = await app.resume(again.suspension.token, "ok")
    assert done.state.notes == ["plan:t", "gather:t", "ask=ok", "analyse:t", "write:t"]
    assert set(calls.values()) == {1}


async def test_racing_resumes_of_one_token_resume_the_child_once(store: CheckpointStore) -> None:
    """Three resumes of the parent's token at once: one resumes the child, the others
    get ThreadBusy (or StaleResumeToken); the child's resume code ran once."""
    calls: Tally[str] = Tally()

    class SlowAsk(AskInChild):
        async def resume(self, state: Any, value: Any, ctx: NodeContext) -> dict[str, Any]:
            await asyncio.sleep(0.05)
            return await super().resume(state, value, ctx)

    graph = StateGraph(Inner)
    graph.add_node("ask", SlowAsk(calls)).add_edge(START, "ask").add_edge("ask", END)
    app = parent_graph(store, graph.compile(store=store), calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    token = first.suspension.token
    outcomes = await asyncio.gather(
        *(app.resume(token, f"v{i}") for i in range(3)), return_exceptions=True
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [type(o) for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1 and set(lost) <= {ThreadBusy, StaleResumeToken}, outcomes
    assert calls["ask.resume"] == 1
    assert [n for n in won[0].state.notes if n.startswith("ask=")] == [
        f"ask=v{outcomes.index(won[0])}"
    ]


async def test_the_child_s_own_token_racing_the_parent_s_resumes_once(
    store: CheckpointStore,
) -> None:
    """The child's token (from its thread's snapshot) and the parent's resumed at once:
    the child's resume code runs once; the parent then finishes with that answer."""
    calls: Tally[str] = Tally()
    child = child_graph(store, calls, ask=True)
    app = parent_graph(store, child, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    run_id = (await store.load_latest("p")).run_id  # type: ignore[union-attr]
    inner = await child.get_state(child_thread("p", "research", run_id, "s1"))
    assert inner is not None and inner.suspension is not None
    outcomes = await asyncio.gather(
        app.resume(first.suspension.token, "parent"),
        child.resume(inner.suspension.token, "child"),
        return_exceptions=True,
    )
    assert calls["ask.resume"] == 1, outcomes
    latest = await app.get_state("p")
    assert latest is not None
    if latest.status == "suspended":  # the child's own resume won: the parent goes on
        assert latest.suspension is not None
        done = await app.resume(latest.suspension.token, "unused")
        notes = done.state.notes
    else:
        notes = latest.state.notes
    answers = [n for n in notes if n.startswith("ask=")]
    assert len(answers) == 1 and calls["ask.resume"] == 1 and calls["analyse"] == 1


async def test_a_suspension_in_the_child_ends_the_parent_s_stream(store: CheckpointStore) -> None:
    """Streamed, a suspension inside the child ends the parent's stream with the
    parent's ``Suspended`` event (the child's own is not passed on)."""
    calls: Tally[str] = Tally()
    app = parent_graph(store, child_graph(store, calls, ask=True), calls)
    kinds: list[str] = []
    async with app.stream({"topic": "t"}, thread_id="p") as events:
        async for event in events:
            kinds.append(f"{type(event).__name__}:{getattr(event, 'node', '')}")
    assert kinds[-1] == "Suspended:" and kinds.count("Suspended:") == 1
    assert "NodeStarted:research/ask" in kinds and "NodeFinished:research" not in kinds
    assert events.result is not None and events.result.suspension is not None
    resumed: list[str] = []
    async with app.stream_resume(events.result.suspension.token, "y") as events:
        async for event in events:
            resumed.append(f"{type(event).__name__}:{getattr(event, 'node', '')}")
    assert resumed == [
        "NodeStarted:research",
        "NodeStarted:research/ask",
        "NodeFinished:research/ask",
        "NodeStarted:research/analyse",
        "NodeFinished:research/analyse",
        "NodeFinished:research",
        "NodeStarted:write",
        "NodeFinished:write",
        "Completed:",
    ]


async def test_a_timed_out_subgraph_node_goes_on_inside_the_child(store: CheckpointStore) -> None:
    """The subgraph node's ``timeout`` cancels the child mid-step (its lease let go);
    ``run(None)`` goes on inside the child from that step."""
    calls: Tally[str] = Tally()
    release = asyncio.Event()

    async def wait(state: Inner) -> dict[str, Any]:
        calls["wait"] += 1
        await release.wait()
        return {"notes": ["waited"]}

    graph = StateGraph(Inner)
    graph.add_node("gather", note("gather", calls)).add_node("wait", wait)
    graph.add_edge(START, "gather").add_edge("gather", "wait").add_edge("wait", END)
    parent = StateGraph(Outer)
    parent.add_node("research", graph.compile(store=store), timeout=0.2)
    parent.add_edge(START, "research").add_edge("research", END)
    app = parent.compile(store=store)
    with pytest.raises(NodeFailed, match=r"did not finish within 0\.2 s"):
        await app.run({"topic": "t"}, thread_id="p")
    release.set()
    done = await app.run(None, thread_id="p")
    assert done.state.notes == ["gather:t", "waited"]
    assert calls == Tally({"gather": 1, "wait": 2})


async def test_a_failed_child_in_a_branch_goes_on_from_its_saved_key(
    store: CheckpointStore,
) -> None:
    """A child in a ``Send`` branch fails; ``run(None)`` rebuilds the fan-out from its
    saved records and each branch finds its own child again by the key saved with the
    branch: only the failed child step runs again."""
    calls: Tally[str] = Tally()
    broken = {"b"}

    async def flaky(state: Inner) -> dict[str, Any]:
        calls[f"flaky:{state.topic}"] += 1
        if state.topic in broken:
            broken.discard(state.topic)
            raise RuntimeError(f"{state.topic} failed")
        return {"notes": [f"flaky:{state.topic}"]}

    inner = StateGraph(Inner)
    inner.add_node("gather", note("gather", calls)).add_node("flaky", flaky)
    inner.add_edge(START, "gather").add_edge("gather", "flaky").add_edge("flaky", END)
    graph = StateGraph(Outer)
    graph.add_node("research", inner.compile(store=store))
    graph.add_node("write", note("write", calls))
    graph.add_router(
        START,
        lambda s: [Send("research", {"topic": t}) for t in "abc"],
        ["research"],
        join="write",
    )
    graph.add_edge("research", "write").add_edge("write", END)
    app = graph.compile(store=store)
    with pytest.raises(NodeFailed, match="b failed"):
        await app.run({}, thread_id="p")
    done = await app.run(None, thread_id="p")
    assert done.state.notes == [
        "gather:a",
        "flaky:a",
        "gather:b",
        "flaky:b",
        "gather:c",
        "flaky:c",
        "write:",
    ]
    assert calls["gather"] == 3 and calls["flaky:b"] == 2
    assert calls["flaky:a"] == 1 and calls["flaky:c"] == 1


async def test_a_subgraph_run_again_in_a_branch_and_in_a_repeated_fan_out_is_new(
    store: CheckpointStore,
) -> None:
    """The same branch runs the subgraph twice (a loop inside the branch), and the
    fan-out itself runs twice in one run (same branch ids): every execution is a new
    child, never a finished one taken again."""
    calls: Tally[str] = Tally()

    class Count(BaseModel):
        n: int = 0
        seen: Annotated[list[int], append] = []

    async def bump(state: Count) -> dict[str, Any]:
        calls["bump"] += 1
        return {"n": state.n + 1, "seen": [state.n + 1]}

    inner = StateGraph(Count).add_node("bump", bump)
    inner.add_edge(START, "bump").add_edge("bump", END)
    graph = StateGraph(Count)
    graph.add_node(
        "sub", inner.compile(store=store), input=lambda s: {"n": s.n}, output=lambda c: {"n": c.n}
    )

    async def fan(state: Count) -> None:
        return None

    async def join(state: Count) -> dict[str, Any]:
        return {"seen": [state.n]}

    graph.add_node("fan", fan).add_node("join", join)
    graph.add_edge(START, "fan")
    graph.add_router("fan", lambda s: ["sub"], ["sub"], join="join")
    graph.add_router(
        "sub", lambda s: "again" if s.n % 2 else "done", {"again": "sub", "done": "join"}
    )
    graph.add_router("join", lambda s: "more" if s.n < 4 else "end", {"more": "fan", "end": END})
    result = await graph.compile(store=store).run({}, thread_id="p")
    assert result.state.seen == [2, 4]  # the joins: two loops in the branch each fan-out
    assert calls["bump"] == 4


async def test_bad_input_from_a_mapping_names_the_node_and_the_field(
    store: CheckpointStore,
) -> None:
    """``input=`` giving a field the child lacks fails the subgraph node naming it; an
    ``output=`` giving one the parent lacks does too."""
    calls: Tally[str] = Tally()
    child = child_graph(store, calls)
    for kwargs, field in (
        ({"input": lambda s: {"bogus": 1}}, "bogus"),
        ({"output": lambda c: {"nothing": 2}}, "nothing"),
    ):
        graph = StateGraph(Outer).add_node("research", child, **kwargs)
        graph.add_edge(START, "research").add_edge("research", END)
        with pytest.raises(NodeFailed) as failed:
            await graph.compile(store=store).run({}, thread_id=f"p-{field}")
        assert failed.value.node == "research"
        assert f"`{field}`" in str(failed.value)


async def test_nested_events_carry_the_whole_path(store: CheckpointStore) -> None:
    """A grandchild's events are ``research/deep/gather``."""
    calls: Tally[str] = Tally()
    middle = StateGraph(Inner).add_node("deep", child_graph(store, calls))
    middle.add_edge(START, "deep").add_edge("deep", END)
    app = parent_graph(store, middle.compile(store=store), calls)
    async with app.stream({"topic": "t"}, thread_id="p") as events:
        started = [e.node async for e in events if isinstance(e, NodeStarted)]
    assert started == [
        "plan",
        "research",
        "research/deep",
        "research/deep/gather",
        "research/deep/analyse",
        "write",
    ]


async def test_an_answer_is_not_given_to_the_child_s_next_question(store: CheckpointStore) -> None:
    """The child took the answer to its first question and asked a second, but the
    parent's save of that failed: resuming the first token again does not answer the
    second question with the first answer; it passes the second question on."""
    calls: Tally[str] = Tally()
    suspended_saves = Tally[str]()

    def second_parent_suspension(cp: Any) -> bool:
        if cp.thread_id != "p" or cp.status != "suspended":
            return False
        suspended_saves["p"] += 1
        return suspended_saves["p"] == 2

    flaky = FailOnce(store, second_parent_suspension)
    graph = StateGraph(Inner)
    graph.add_node("one", AskInChild(calls, "one")).add_node("two", AskInChild(calls, "two"))
    graph.add_edge(START, "one").add_edge("one", "two").add_edge("two", END)
    app = parent_graph(flaky, graph.compile(store=flaky), calls)  # type: ignore[arg-type]
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    with pytest.raises(OSError, match="no space"):
        await app.resume(first.suspension.token, "a")
    again = await app.resume(first.suspension.token, "a-again")
    assert again.status == "suspended" and again.suspension is not None
    assert again.suspension.payload["question"] == "two?"
    done = await app.resume(again.suspension.token, "b")
    assert done.state.notes == ["plan:t", "one=a", "two=b", "write:t"]
    assert calls["one.resume"] == 1 and calls["two.resume"] == 1


async def test_a_send_item_sets_fields_only_the_child_has(store: CheckpointStore) -> None:
    """A dict ``Send`` item's keys that only the child's model has reach the child (as
    LangGraph's ``Send`` argument does); keys neither model has are not passed."""

    class Part(BaseModel):
        subject: str = ""
        notes: Annotated[list[str], append] = []

    class Whole(BaseModel):
        notes: Annotated[list[str], append] = []

    async def write(state: Part) -> dict[str, Any]:
        return {"notes": [f"wrote {state.subject}"]}

    inner = StateGraph(Part)
    inner.add_node("write", write).add_edge(START, "write").add_edge("write", END)
    graph = StateGraph(Whole)
    graph.add_node("part", inner.compile(store=store))
    graph.add_router(
        START,
        lambda s: [Send("part", {"subject": x, "unknown": 1}) for x in ("tea", "coffee")],
        ["part"],
    )
    graph.add_edge("part", END)
    done = await graph.compile(store=store).run({}, thread_id="whole")
    assert ["wrote tea", "wrote coffee"] == done.state.notes
