"""Attacks on ``interrupt()``'s replay: stale and cross-branch tokens, racing resumes,
edits mid-questions, odd answers, and ``interrupt()`` from tasks the node spawns."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Command,
    CompiledGraph,
    InterruptMisused,
    InvalidResumeValue,
    MemoryCheckpointStore,
    NodeContext,
    NodeFailed,
    Send,
    StaleResumeToken,
    StateGraph,
    StateSerializationError,
    ThreadBusy,
    UpdateRefused,
    append,
    interrupt,
)


class Steps(BaseModel):
    steps: Annotated[list[Any], append] = []


async def three_questions(state: Steps) -> dict[str, Any]:
    first = interrupt("q1")
    second = interrupt("q2")
    third = interrupt("q3")
    return {"steps": [first, second, third]}


def three_graph(store: CheckpointStore) -> CompiledGraph[Steps]:
    builder = StateGraph(Steps).add_node("ask", three_questions)
    builder.add_edge(START, "ask").add_edge("ask", END)
    return builder.compile(store=store)


async def test_an_old_token_after_later_answers_is_stale(store: CheckpointStore) -> None:
    """The first and second questions' tokens, replayed after the third is asked, are
    stale: no answer is taken twice, and the third's token still completes the node."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    assert r1.suspension is not None
    r2 = await app.resume(r1.suspension.token, "a")
    assert r2.suspension is not None
    r3 = await app.resume(r2.suspension.token, "b")
    assert r3.suspension is not None and r3.suspension.payload == "q3"
    for old in (r1.suspension.token, r2.suspension.token):
        with pytest.raises(StaleResumeToken):
            await app.resume(old, "again")
    done = await app.resume(r3.suspension.token, "c")
    assert done.state.steps == ["a", "b", "c"]


async def test_racing_resumes_take_one_answer(store: CheckpointStore) -> None:
    """Two resumes of one token at once: exactly one is taken; the other finds the
    thread busy or the token stale, and the token is stale afterwards."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    assert r1.suspension is not None
    token = r1.suspension.token
    got = await asyncio.gather(
        app.resume(token, "x"), app.resume(token, "y"), return_exceptions=True
    )
    won = [g for g in got if not isinstance(g, BaseException)]
    lost = [g for g in got if isinstance(g, BaseException)]
    assert len(won) == 1 and len(lost) == 1, got
    assert isinstance(lost[0], (StaleResumeToken, ThreadBusy)), lost
    with pytest.raises(StaleResumeToken):  # and once the winner is done, it is stale
        await app.resume(token, "late")
    answer = "x" if won[0] is got[0] else "y"
    r3 = await app.resume(won[0].suspension.token, "b")  # type: ignore[union-attr]
    done = await app.resume(r3.suspension.token, "c")  # type: ignore[union-attr]
    assert done.state.steps == [answer, "b", "c"]


@pytest.mark.parametrize("answer", [None, {"big": "x" * 200_000}, [1, {"a": [None]}], 1.5])
async def test_odd_answers_are_replayed_as_given(store: CheckpointStore, answer: Any) -> None:
    """None, a large dict, nested lists and a float are replayed to the first question
    as given, across a second suspension that saves them."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    r2 = await app.resume(r1.suspension.token, answer)  # type: ignore[union-attr]
    r3 = await app.resume(r2.suspension.token, "b")  # type: ignore[union-attr]
    done = await app.resume(r3.suspension.token, "c")  # type: ignore[union-attr]
    assert done.state.steps == [answer, "b", "c"]


async def test_a_command_answer_is_refused_and_the_token_stays_good(
    store: CheckpointStore,
) -> None:
    """A Command given as the answer to interrupt() (LangGraph's Command(update=...)
    habit) is refused naming resume(token, value), on every store (the memory store
    used to hand the Command to the node as its answer); the token then still works."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    assert r1.suspension is not None
    with pytest.raises(InvalidResumeValue, match=r"node `ask`.*resume\(token, value\)"):
        await app.resume(r1.suspension.token, Command(update={"steps": ["u"]}))
    r2 = await app.resume(r1.suspension.token, "a")
    assert r2.suspension is not None and r2.suspension.payload == "q2"
    snap = await app.get_state("t")
    assert snap is not None and snap.state.steps == []


async def branch_asks(state: Steps, ctx: NodeContext) -> dict[str, Any]:
    return {"steps": [interrupt(f"q{ctx.item}"), interrupt(f"r{ctx.item}")]}


async def nothing(state: Steps) -> dict[str, Any]:
    return {}


def fanout_graph(store: CheckpointStore) -> CompiledGraph[Steps]:
    builder = StateGraph(Steps).add_node("ask", branch_asks).add_node("done", nothing)
    builder.add_router(START, lambda s: [Send("ask", 1), Send("ask", 2)], ["ask"], join="done")
    builder.add_edge("ask", "done").add_edge("done", END)
    return builder.compile(store=store)


async def test_a_branch_refuses_a_command_answer(store: CheckpointStore) -> None:
    """A Send branch asked by interrupt() refuses a Command answer too, and its token,
    and the other branch's, still work afterwards."""
    app = fanout_graph(store)
    r = await app.run({}, thread_id="t")
    tokens = {s.payload: s.token for s in r.suspensions}
    assert set(tokens) == {"q1", "q2"}
    with pytest.raises(InvalidResumeValue, match="node `ask`"):
        await app.resume(tokens["q1"], Command(update={"steps": ["u"]}))
    r = await app.resume(tokens["q1"], "a1")
    tokens = {s.payload: s.token for s in r.suspensions}
    assert set(tokens) == {"r1", "q2"}
    r = await app.resume(tokens["q2"], "a2")
    tokens = {s.payload: s.token for s in r.suspensions}
    r = await app.resume(tokens["r2"], "b2")
    r = await app.resume(r.suspensions[0].token, "b1")
    assert r.status == "completed"
    assert sorted(r.state.steps) == ["a1", "a2", "b1", "b2"]


async def test_a_non_json_answer_fails_and_the_token_stays_good(store: CheckpointStore) -> None:
    """An answer a durable store cannot save fails the resume naming where it sits
    (``suspension.answers[0]``); nothing is saved, so the same token answers again."""
    if isinstance(store, MemoryCheckpointStore):
        pytest.skip("the memory store keeps objects as they are")

    class Odd:
        pass

    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    assert r1.suspension is not None
    with pytest.raises(StateSerializationError, match=r"suspension\.answers\[0\].*Odd"):
        await app.resume(r1.suspension.token, Odd())
    snap = await app.get_state("t")
    assert snap is not None and snap.suspension is not None
    assert snap.suspension.payload == "q1"
    r2 = await app.resume(r1.suspension.token, "a")
    assert r2.suspension is not None and r2.suspension.payload == "q2"


async def test_update_state_at_the_second_question(store: CheckpointStore) -> None:
    """While a node waits at its second question, update_state is refused naming
    as_node; with as_node the values answer the node for good: its tokens are
    stale and the thread goes on without replaying the first answer."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    r2 = await app.resume(r1.suspension.token, "a")  # type: ignore[union-attr]
    with pytest.raises(UpdateRefused, match="as_node='ask'"):
        await app.update_state("t", {"steps": ["edit"]})
    await app.update_state("t", {"steps": ["edit"]}, as_node="ask")
    for old in (r1.suspension.token, r2.suspension.token):  # type: ignore[union-attr]
        with pytest.raises(StaleResumeToken):
            await app.resume(old, "b")
    done = await app.run(None, thread_id="t")
    assert done.status == "completed" and done.state.steps == ["edit"]


async def spawns_task(state: Steps) -> dict[str, Any]:
    first = await asyncio.create_task(_ask("t1"))
    second = await asyncio.create_task(_ask("t2"))
    return {"steps": [first, second]}


async def gathers(state: Steps) -> dict[str, Any]:
    got = await asyncio.gather(_ask("g1"), _ask("g2"))
    return {"steps": list(got)}


async def _ask(q: str) -> Any:
    await asyncio.sleep(0)
    return interrupt(q)


@pytest.mark.parametrize(
    ("node", "questions"), [(spawns_task, ["t1", "t2"]), (gathers, ["g1", "g2"])]
)
async def test_interrupt_from_tasks_the_node_awaits(node: Any, questions: list[str]) -> None:
    """interrupt() in a task the node creates and awaits, or in coroutines it gathers,
    asks in call order (the task copies the node's context) and replays by position."""
    builder = StateGraph(Steps).add_node("ask", node)
    builder.add_edge(START, "ask").add_edge("ask", END)
    app = builder.compile(store=MemoryCheckpointStore())
    r = await app.run({}, thread_id="t")
    seen = []
    for answer in ["A", "B"]:
        assert r.suspension is not None
        seen.append(r.suspension.payload)
        r = await app.resume(r.suspension.token, answer)
    assert seen == questions
    assert r.status == "completed" and r.state.steps == ["A", "B"]


async def test_a_thread_deleted_mid_questions_refuses_its_tokens(store: CheckpointStore) -> None:
    """A thread deleted while its node waits at its second question: both tokens are
    stale (no answer lands on a new thread of the same id), and a new run there asks
    the first question again with no answers carried over."""
    app = three_graph(store)
    r1 = await app.run({}, thread_id="t")
    r2 = await app.resume(r1.suspension.token, "a")  # type: ignore[union-attr]
    await app.delete_thread("t")
    for old in (r1.suspension.token, r2.suspension.token):  # type: ignore[union-attr]
        with pytest.raises(StaleResumeToken):
            await app.resume(old, "b")
    again = await app.run({}, thread_id="t")
    assert again.suspension is not None and again.suspension.payload == "q1"
    for old in (r1.suspension.token, r2.suspension.token):  # type: ignore[union-attr]
        with pytest.raises(StaleResumeToken):
            await app.resume(old, "b")
    r = await app.resume(again.suspension.token, "x")
    r = await app.resume(r.suspension.token, "y")  # type: ignore[union-attr]
    r = await app.resume(r.suspension.token, "z")  # type: ignore[union-attr]
    assert r.state.steps == ["x", "y", "z"]


async def test_a_task_left_running_cannot_ask() -> None:
    """interrupt() in a task the node starts and does not await: called before the node
    returns, the node fails naming the task; called after, the task fails with
    InterruptMisused naming the node (never a GraphInterrupt nobody sees)."""
    late: list[BaseException] = []

    async def early(state: Steps) -> dict[str, Any]:
        started.append(asyncio.create_task(_ask("bg")))
        await asyncio.sleep(0.01)
        return {"steps": ["done"]}

    async def after(state: Steps) -> dict[str, Any]:
        async def ask_later() -> None:
            await asyncio.sleep(0.01)
            try:
                interrupt("bg")
            except BaseException as raised:
                late.append(raised)

        background.append(asyncio.create_task(ask_later()))
        return {"steps": ["done"]}

    background: list[asyncio.Task[None]] = []
    started: list[asyncio.Task[Any]] = []
    for node in (early, after):
        builder = StateGraph(Steps).add_node("f", node)
        builder.add_edge(START, "f").add_edge("f", END)
        app = builder.compile(store=MemoryCheckpointStore())
        if node is early:
            with pytest.raises(NodeFailed) as failed:
                await app.run({}, thread_id="t")
            assert "await a task that calls interrupt()" in str(failed.value.__cause__)
            await asyncio.gather(*started, return_exceptions=True)
        else:
            done = await app.run({}, thread_id="t")
            assert done.status == "completed" and done.state.steps == ["done"]
            await asyncio.gather(*background)
            assert len(late) == 1 and isinstance(late[0], InterruptMisused)
            assert "after node `f` had returned" in str(late[0])
