"""``interrupt()`` called several times in one node, and in a loop: LangGraph's replay.

On resume the node runs again from its top; its k-th ``interrupt()`` returns the k-th
answer given so far and the first unanswered one suspends again. Ported from
LangGraph's ``test_interrupt_multiple``, ``test_multiple_interrupt_state_persistence``,
``test_interrupt_loop``, ``test_parallel_interrupts`` and
``test_node_before_multiple_interrupt_cycles_graph_api`` (written anew here), on
every store, across store objects (as a new process opens them) and a real new process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from stores.helpers import close_store, reopen

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    GraphInterrupt,
    InterruptMisused,
    MemoryCheckpointStore,
    NodeContext,
    NodeFailed,
    RetryPolicy,
    RunResult,
    Send,
    StaleResumeToken,
    StateGraph,
    Suspend,
    add,
    append,
    interrupt,
)
from research_fsm.stores import open_store

REPO = Path(__file__).resolve().parents[2]


class Steps(BaseModel):
    count: int = 0
    steps: Annotated[list[str], append] = []


async def prepare(state: Steps) -> dict[str, Any]:
    return {"count": state.count + 10}


async def two_questions(state: Steps) -> dict[str, Any]:
    first = interrupt("First question?")
    second = interrupt("Second question?")
    return {"steps": [first, second]}


def two_question_graph(store: CheckpointStore) -> CompiledGraph[Steps]:
    builder = StateGraph(Steps).add_node("prepare", prepare).add_node("ask", two_questions)
    builder.add_edge(START, "prepare").add_edge("prepare", "ask").add_edge("ask", END)
    return builder.compile(store=store)


def asked(result: RunResult[Any]) -> Any:
    """The question a suspended result asks."""
    assert result.status == "suspended" and result.suspension is not None
    return result.suspension.payload


async def test_two_interrupts_are_answered_in_order(store: CheckpointStore) -> None:
    """Two interrupt() calls in one node: the first resume answers the first and asks
    the second; the second completes the node with both answers, in order. The state
    is unchanged while it waits, and the node before it ran once."""
    app = two_question_graph(store)
    result = await app.run({}, thread_id="t")
    assert asked(result) == "First question?"
    assert result.path == ["prepare", "ask"]
    result = await app.resume(result.suspension.token, "step1")  # type: ignore[union-attr]
    assert asked(result) == "Second question?"
    assert result.path == ["ask"]
    snapshot = await app.get_state("t")
    assert snapshot is not None and snapshot.state == Steps(count=10)
    result = await app.resume(result.suspension.token, "step2")  # type: ignore[union-attr]
    assert (result.status, result.path) == ("completed", ["ask"])
    assert result.state == Steps(count=10, steps=["step1", "step2"])


async def test_answers_survive_a_new_store_object(store: CheckpointStore) -> None:
    """Each resume on another store object over the same data (as a new process opens
    it, a str token in hand) replays the answers saved with the suspension."""
    app = two_question_graph(store)
    token = str((await app.run({}, thread_id="t")).suspension.token)  # type: ignore[union-attr]
    for answer, question in [("one", "Second question?"), ("two", None)]:
        other = reopen(store)
        try:
            result = await two_question_graph(other).resume(token, answer)
        finally:
            if other is not store:
                await close_store(other)
        if question is None:
            assert result.state.steps == ["one", "two"]
        else:
            assert asked(result) == question
            token = str(result.suspension.token)  # type: ignore[union-attr]


async def test_each_token_is_single_use_across_questions(store: CheckpointStore) -> None:
    """The first question's token is stale once answered (its answer is not taken
    twice); the second question's token goes on."""
    app = two_question_graph(store)
    first = await app.run({}, thread_id="t")
    assert first.suspension is not None
    second = await app.resume(first.suspension.token, "a")
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspension.token, "again")
    assert second.suspension is not None
    done = await app.resume(second.suspension.token, "b")
    assert done.state.steps == ["a", "b"]


class Person(BaseModel):
    age: int = 0
    other: str = ""


async def test_interrupt_loop_asks_until_valid(store: CheckpointStore) -> None:
    """LangGraph's validation loop: each invalid answer asks again, the valid one
    ends the loop; the node ran once per answer, from its top."""
    runs: list[int] = []

    async def ask_age(state: Person) -> dict[str, Any]:
        runs.append(1)
        question = "How old are you?"
        value = None
        for _ in range(10):
            value = interrupt(question)
            if not value.isdigit() or int(value) < 18:
                question, value = "invalid response", None
            else:
                break
        assert value is not None
        return {"age": int(value)}

    builder = StateGraph(Person).add_node("node", ask_age)
    app = builder.add_edge(START, "node").add_edge("node", END).compile(store=store)
    result = await app.run({"other": ""}, thread_id="t")
    questions = [asked(result)]
    for answer in ["13", "15"]:
        result = await app.resume(result.suspension.token, answer)  # type: ignore[union-attr]
        questions.append(asked(result))
    result = await app.resume(result.suspension.token, "19")  # type: ignore[union-attr]
    assert questions == ["How old are you?", "invalid response", "invalid response"]
    assert (result.status, result.state.age, len(runs)) == ("completed", 19, 4)


class Market(BaseModel):
    my_key: Annotated[str, add] = ""


async def test_updates_stream_shows_each_question_as_langgraph_does() -> None:
    """LangGraph's test_interrupt_multiple streamed in "updates" mode: each
    suspension is `{"__interrupt__": suspensions}` (the payload its `Interrupt.value`),
    and the node's update comes once, with both answers."""

    async def node(state: Market) -> dict[str, Any]:
        answer = interrupt({"value": 1})
        answer2 = interrupt({"value": 2})
        return {"my_key": answer + " " + answer2}

    app = (
        StateGraph(Market)
        .add_node("node", node)
        .add_edge(START, "node")
        .add_edge("node", END)
        .compile(store=MemoryCheckpointStore())
    )
    seen: list[list[Any]] = []
    stream = app.stream({"my_key": "DE"}, thread_id="1", mode="updates")
    for answer in ["answer 1", "answer 2", None]:
        async with stream:
            chunks = [chunk async for chunk in stream]
        seen.append(
            [
                {k: [s.payload for s in v] if k == "__interrupt__" else v for k, v in c.items()}
                for c in chunks
            ]
        )
        if answer is not None:
            assert stream.result is not None and stream.result.suspension is not None
            stream = app.stream_resume(stream.result.suspension.token, answer, mode="updates")
    assert seen == [
        [{"__interrupt__": [{"value": 1}]}],
        [{"__interrupt__": [{"value": 2}]}],
        [{"node": {"my_key": "answer 1 answer 2"}}],
    ]


async def test_answers_are_the_node_executions_own() -> None:
    """A node that runs again later (a loop through the graph) asks afresh: the
    answers of its earlier execution are not replayed."""

    async def ask(state: Steps) -> dict[str, Any]:
        return {"steps": [interrupt(f"round {len(state.steps)}?")]}

    builder = StateGraph(Steps).add_node("ask", ask).add_edge(START, "ask")
    builder.add_router("ask", lambda s: "ask" if len(s.steps) < 2 else END, ["ask", END])
    app = builder.compile(store=MemoryCheckpointStore())
    result = await app.run({}, thread_id="t")
    result = await app.resume(result.suspension.token, "x")  # type: ignore[union-attr]
    assert asked(result) == "round 1?"
    result = await app.resume(result.suspension.token, "y")  # type: ignore[union-attr]
    assert result.state.steps == ["x", "y"]


class Asks(BaseModel):
    got: Annotated[list[str], append] = []


async def ask_in_branch(state: Asks, ctx: NodeContext) -> dict[str, Any]:
    first = interrupt(f"{ctx.item} first?")
    second = interrupt(f"{ctx.item} second?")
    return {"got": [f"{ctx.item}:{first},{second}"]}


def by_payload(result: RunResult[Any]) -> dict[str, Any]:
    """A suspended result's pending questions, each with its token."""
    return {s.payload: s.token for s in result.suspensions}


def branch_graph(store: CheckpointStore) -> CompiledGraph[Asks]:
    builder = StateGraph(Asks).add_node("ask", ask_in_branch)
    builder.add_router(START, lambda s: [Send("ask", "a"), Send("ask", "b")], ["ask"])
    return builder.add_edge("ask", END).compile(store=store)


async def test_parallel_branches_keep_their_own_answers(store: CheckpointStore) -> None:
    """Two Send branches each ask twice: answered in an interleaved order (each on
    another store object over the same data), each branch replays its own answers
    only (saved with its branch record)."""
    result = await branch_graph(store).run({}, thread_id="t")
    assert set(by_payload(result)) == {"a first?", "b first?"}
    for question, answer in [
        ("a first?", "a1"),
        ("b first?", "b1"),
        ("b second?", "b2"),
        ("a second?", "a2"),
    ]:
        other = reopen(store)
        try:
            result = await branch_graph(other).resume(by_payload(result)[question], answer)
        finally:
            if other is not store:
                await close_store(other)
    assert result.status == "completed"
    assert result.state.got == ["a:a1,a2", "b:b1,b2"]


class Child(BaseModel):
    name: str = ""
    got: Annotated[list[str], append] = []


class Parent(BaseModel):
    names: list[str] = []
    got: Annotated[list[str], append] = []


async def child_asks(state: Child) -> dict[str, Any]:
    first = interrupt(f"{state.name or 'you'}: first?")
    second = interrupt(f"{state.name or 'you'}: second?")
    return {"got": [f"{state.name}:{first},{second}"]}


def child_graph() -> CompiledGraph[Child]:
    builder = StateGraph(Child).add_node("asks", child_asks)
    return builder.add_edge(START, "asks").add_edge("asks", END).compile()


async def test_a_subgraph_node_asks_twice(store: CheckpointStore) -> None:
    """A child graph's node with two interrupt() calls, run as a parent's node: the
    parent's tokens answer them in order, the child replays its own answers."""
    builder = StateGraph(Child).add_node("child", child_graph())
    app = builder.add_edge(START, "child").add_edge("child", END).compile(store=store)
    result = await app.run({"name": "c"}, thread_id="t")
    assert asked(result) == "c: first?"
    result = await app.resume(result.suspension.token, 1)  # type: ignore[union-attr]
    assert asked(result) == "c: second?"
    result = await app.resume(result.suspension.token, 2)  # type: ignore[union-attr]
    assert result.state.got == ["c:1,2"]


async def test_parallel_subgraphs_each_ask_twice(store: CheckpointStore) -> None:
    """LangGraph's parallel interrupts, two questions each: two Send branches run the
    child graph; answered out of order, each child gets its own answers."""
    builder = StateGraph(Parent).add_node("child", child_graph())
    builder.add_router(START, lambda s: [Send("child", {"name": n}) for n in s.names], ["child"])
    app = builder.add_edge("child", END).compile(store=store)
    result = await app.run({"names": ["a", "b"]}, thread_id="t")
    for question, answer in [
        ("b: first?", "b1"),
        ("a: first?", "a1"),
        ("a: second?", "a2"),
        ("b: second?", "b2"),
    ]:
        result = await app.resume(by_payload(result)[question], answer)
    assert result.status == "completed"
    assert result.state.got == ["a:a1,a2", "b:b1,b2"]


async def test_a_suspend_node_still_gets_only_the_last_answer(store: CheckpointStore) -> None:
    """A node that returns Suspend (the engine's own way) is unchanged: called again
    with the last answer alone (``ctx.answers`` holds just it)."""
    seen: list[tuple[Any, ...]] = []

    async def ask(state: Steps, ctx: NodeContext) -> Any:
        if ctx.resuming:
            seen.append(ctx.answers)
            if ctx.resume_value != "last":
                return Suspend(f"after {ctx.resume_value}?")
            return {"steps": [ctx.resume_value]}
        return Suspend("first?")

    builder = StateGraph(Steps).add_node("ask", ask)
    app = builder.add_edge(START, "ask").add_edge("ask", END).compile(store=store)
    result = await app.run({}, thread_id="t")
    result = await app.resume(result.suspension.token, "x")  # type: ignore[union-attr]
    assert asked(result) == "after x?"
    result = await app.resume(result.suspension.token, "last")  # type: ignore[union-attr]
    assert (result.state.steps, seen) == (["last"], [("x",), ("last",)])


async def test_a_failed_resume_keeps_the_answers() -> None:
    """A resumed node that fails keeps its suspension and the answers before it: the
    same token, answered again, replays them."""

    async def ask(state: Steps) -> dict[str, Any]:
        first = interrupt("first?")
        second = interrupt("second?")
        if second == "boom":
            raise ValueError("boom")
        return {"steps": [first, second]}

    builder = StateGraph(Steps).add_node("ask", ask)
    app = builder.add_edge(START, "ask").add_edge("ask", END).compile(store=MemoryCheckpointStore())
    result = await app.run({}, thread_id="t")
    result = await app.resume(result.suspension.token, "one")  # type: ignore[union-attr]
    token = result.suspension.token  # type: ignore[union-attr]
    with pytest.raises(NodeFailed, match="boom"):
        await app.resume(token, "boom")
    done = await app.resume(token, "two")
    assert done.state.steps == ["one", "two"]


async def test_a_retried_attempt_asks_from_its_first_question() -> None:
    """A node retried after a transient failure replays the answers from the first
    interrupt() again (each attempt counts its own calls)."""
    failures = [ConnectionError("flaky")]

    async def ask(state: Steps) -> dict[str, Any]:
        first = interrupt("first?")
        second = interrupt("second?")
        if failures:
            raise failures.pop()
        return {"steps": [first, second]}

    builder = StateGraph(Steps).add_node("ask", ask, retry=RetryPolicy(backoff=0.0))
    app = builder.add_edge(START, "ask").add_edge("ask", END).compile(store=MemoryCheckpointStore())
    result = await app.run({}, thread_id="t")
    result = await app.resume(result.suspension.token, "one")  # type: ignore[union-attr]
    result = await app.resume(result.suspension.token, "two")  # type: ignore[union-attr]
    assert (result.state.steps, failures) == (["one", "two"], [])


async def test_a_fork_mid_questions_keeps_the_answers(store: CheckpointStore) -> None:
    """A thread forked while its node waits on its second question carries the first
    answer: the fork's token completes the node with it."""
    app = two_question_graph(store)
    result = await app.run({}, thread_id="t")
    await app.resume(result.suspension.token, "kept")  # type: ignore[union-attr]
    forked = await app.fork("t", None, "copy")
    assert forked.suspension is not None and forked.suspension.payload == "Second question?"
    done = await app.resume(forked.suspension.token, "new")
    assert done.state.steps == ["kept", "new"]


async def test_interrupt_outside_a_node_names_the_fix() -> None:
    """interrupt() with no node running is an InterruptMisused naming where it goes."""
    with pytest.raises(InterruptMisused, match="inside a node of a compiled graph"):
        interrupt("question?")


async def test_interrupt_in_a_node_object_with_resume_names_the_fix() -> None:
    """A node object with `resume` takes its answer there: interrupt() in it fails
    naming Suspend (a silent mix of the two ways would answer the wrong call)."""

    class Ask:
        async def run(self, state: Steps, ctx: NodeContext) -> Any:
            return {"steps": [interrupt("q?")]}

        async def resume(self, state: Steps, value: Any, ctx: NodeContext) -> Any:
            return {"steps": [value]}

    builder = StateGraph(Steps).add_node("ask", Ask())
    app = builder.add_edge(START, "ask").add_edge("ask", END).compile(store=MemoryCheckpointStore())
    with pytest.raises(NodeFailed) as failed:
        await app.run({}, thread_id="t")
    assert isinstance(failed.value.__cause__, InterruptMisused)
    assert "return Suspend(payload) from its `run`" in str(failed.value.__cause__)


async def test_a_caught_interrupt_fails_naming_the_fix() -> None:
    """A node whose broad `except Exception` swallows interrupt()'s GraphInterrupt
    and returns fails, naming `except GraphInterrupt: raise` (not a silent skip)."""

    async def ask(state: Steps) -> dict[str, Any]:
        try:
            answer = interrupt("q?")
        except Exception:
            answer = "default"
        return {"steps": [answer]}

    async def careful(state: Steps) -> dict[str, Any]:
        try:
            answer = interrupt("q?")
        except GraphInterrupt:
            raise
        except Exception:
            answer = "default"
        return {"steps": [answer]}

    for node, thread in [(ask, "a"), (careful, "b")]:
        builder = StateGraph(Steps).add_node("ask", node)
        app = (
            builder.add_edge(START, "ask")
            .add_edge("ask", END)
            .compile(store=MemoryCheckpointStore())
        )
        if node is ask:
            with pytest.raises(NodeFailed) as failed:
                await app.run({}, thread_id=thread)
            assert "except GraphInterrupt: raise" in str(failed.value.__cause__)
        else:
            assert asked(await app.run({}, thread_id=thread)) == "q?"


RESUME_SCRIPT = """
import asyncio, sys
from research_fsm.stores import open_store
from engine.test_interrupt import two_question_graph

async def main():
    store = open_store("file:" + sys.argv[1])
    result = await two_question_graph(store).resume(sys.argv[2], sys.argv[3])
    print(result.status, result.suspension.payload if result.suspension else result.state.steps)

asyncio.run(main())
"""


async def test_resume_in_a_new_process(tmp_path: Path) -> None:
    """A new process resumes the first question and then the second with the str
    tokens printed by the one before: the answers come from the file store alone."""
    folder = tmp_path / "store"
    store = open_store(f"file:{folder}")
    first = await two_question_graph(store).run({}, thread_id="t")
    assert first.suspension is not None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}

    def resume(token: str, answer: str) -> str:
        script = [sys.executable, "-c", RESUME_SCRIPT, str(folder), token, answer]
        done = subprocess.run(script, env=env, cwd=REPO, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert resume(str(first.suspension.token), "one") == "suspended Second question?"
    snapshot = await two_question_graph(store).get_state("t")
    assert snapshot is not None and snapshot.suspension is not None
    assert resume(str(snapshot.suspension.token), "two") == "completed ['one', 'two']"


async def test_a_branch_pause_after_its_questions_keeps_no_answers() -> None:
    """A branch whose node was answered and that then pauses at a breakpoint saves no
    answers with the pause (they were that node's), and goes on past it."""
    store = MemoryCheckpointStore()

    async def after(state: Asks, ctx: NodeContext) -> dict[str, Any]:
        return {"got": [f"after {ctx.item}"]}

    builder = StateGraph(Asks).add_node("ask", ask_in_branch).add_node("after", after)
    builder.add_router(START, lambda s: [Send("ask", "a")], ["ask"], join=END)
    app = (
        builder.add_edge("ask", "after")
        .add_edge("after", END)
        .compile(store=store, interrupt_before=["after"])
    )
    result = await app.run({}, thread_id="t")
    result = await app.resume(by_payload(result)["a first?"], 1)
    result = await app.resume(by_payload(result)["a second?"], 2)
    assert result.suspension is not None and result.suspension.breakpoint == "before"
    latest = await store.load_latest("t")
    assert latest is not None and latest.branches is not None
    assert [record.answers for record in latest.branches.values()] == [()]
    done = await app.resume(result.suspension.token, None)
    assert done.state.got == ["a:1,2", "after a"]


async def test_a_suspension_shows_the_answers_given_so_far(store: CheckpointStore) -> None:
    """A node waiting at its second question: its result's, its snapshot's and its
    history's suspension carry the first answer (what a resume replays); a Send branch's
    suspension its own branch's answers only."""
    app = two_question_graph(store)
    first = await app.run({}, thread_id="t")
    assert first.suspension is not None and first.suspension.answers == ()
    second = await app.resume(first.suspension.token, {"first": 1})
    assert second.suspension is not None and second.suspension.answers == ({"first": 1},)
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert [s.answers for s in snapshot.suspensions] == [({"first": 1},)]
    newest = [s async for s in app.history("t", limit=1)]
    assert [s.answers for s in newest[0].suspensions] == [({"first": 1},)]

    branches = await branch_graph(store).run({}, thread_id="b")
    branches = await branch_graph(store).resume(by_payload(branches)["a first?"], "a1")
    got = {s.payload: s.answers for s in branches.suspensions}
    assert got == {"a second?": ("a1",), "b first?": ()}
    snapshot = await branch_graph(store).get_state("b")
    assert snapshot is not None
    assert {s.payload: s.answers for s in snapshot.suspensions} == got
