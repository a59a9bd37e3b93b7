"""Concurrency: ThreadBusy, one winner among duplicate resumes, many threads at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    NodeContext,
    StaleResumeToken,
    StateGraph,
    Suspend,
    ThreadBusy,
)

from .helpers import Counter, Gate


def gate_graph(gate: Gate, store: CheckpointStore) -> Any:
    graph = StateGraph(Counter)
    graph.add_node("gate", gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    return graph.compile(store=store)


async def test_second_run_on_same_thread_raises_thread_busy_at_once(store: CheckpointStore) -> None:
    """While a run holds a thread, another run raises ThreadBusy without running any node."""
    gate = Gate()
    compiled = gate_graph(gate, store)
    first = asyncio.create_task(compiled.run({"log": ["first"]}, thread_id="t"))
    await gate.entered.wait()
    async with asyncio.timeout(10):  # a second run that waited would hang here
        with pytest.raises(ThreadBusy, match="thread `t` is busy") as info:
            await compiled.run({"log": ["second"]}, thread_id="t")
    assert ("t", 1) == (info.value.thread_id, gate.calls)
    gate.release.set()
    result = await first
    assert ["first", "gate"] == result.state.log


async def test_other_threads_are_not_blocked(store: CheckpointStore) -> None:
    """A busy thread does not block runs on other threads."""
    gate = Gate(block=1)
    compiled = gate_graph(gate, store)
    first = asyncio.create_task(compiled.run({}, thread_id="busy"))
    await gate.entered.wait()
    assert "completed" == (await compiled.run({}, thread_id="free")).status
    gate.release.set()
    await first


async def test_delete_of_busy_thread_raises_thread_busy(store: CheckpointStore) -> None:
    """``delete_thread`` refuses a thread that a run currently holds."""
    gate = Gate()
    compiled = gate_graph(gate, store)
    first = asyncio.create_task(compiled.run({}, thread_id="t"))
    await gate.entered.wait()
    with pytest.raises(ThreadBusy):
        await compiled.delete_thread("t")
    gate.release.set()
    assert "completed" == (await first).status


class SlowResume:
    """Suspends in ``run``; ``resume`` signals ``entered`` and waits for ``release``."""

    def __init__(self) -> None:
        self.resume_calls = 0
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, state: Counter, ctx: NodeContext) -> Suspend:
        return Suspend("pay?")

    async def resume(self, state: Counter, value: Any, ctx: NodeContext) -> dict[str, Any]:
        self.resume_calls += 1  # the side effect that must happen once
        self.entered.set()
        await self.release.wait()
        return {"log": [f"paid {value}"]}


async def test_concurrent_resumes_of_one_token_run_resume_once(store: CheckpointStore) -> None:
    """Two resumes of the same token: exactly one runs the resume code, the other fails cleanly."""
    node = SlowResume()
    graph = StateGraph(Counter)
    graph.add_node("pay", node)
    graph.add_edge(START, "pay")
    graph.add_edge("pay", END)
    compiled = graph.compile(store=store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    winner = asyncio.create_task(compiled.resume(token, 1))
    await node.entered.wait()
    with pytest.raises(ThreadBusy):
        await compiled.resume(str(token), 2)
    node.release.set()
    result = await winner
    with pytest.raises(StaleResumeToken):
        await compiled.resume(token, 3)
    assert (1, ["paid 1"]) == (node.resume_calls, result.state.log)


async def test_gathered_resumes_of_one_token_have_one_winner(store: CheckpointStore) -> None:
    """Resumes started together: one result, every other one ThreadBusy or StaleResumeToken."""
    node = SlowResume()
    node.release.set()
    graph = StateGraph(Counter)
    graph.add_node("pay", node)
    graph.add_edge(START, "pay")
    graph.add_edge("pay", END)
    compiled = graph.compile(store=store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    outcomes = await asyncio.gather(
        *(compiled.resume(suspended.suspension.token, i) for i in range(5)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [type(o) for o in outcomes if isinstance(o, BaseException)]
    assert (1, 1) == (len(winners), node.resume_calls)
    assert set(losers) <= {ThreadBusy, StaleResumeToken}
    assert 4 == len(losers)


async def test_two_hundred_threads_run_concurrently(store: CheckpointStore) -> None:
    """200 threads run at once in one loop, each ending with its own correct state."""

    async def double(state: Counter) -> dict[str, Any]:
        await asyncio.sleep(0)  # let the other threads interleave
        return {"n": state.n * 2, "log": [f"x{state.n}"]}

    graph = StateGraph(Counter)
    graph.add_node("double", double)
    graph.add_edge(START, "double")
    graph.add_router(
        "double", lambda s: "again" if len(s.log) < 3 else "stop", {"again": "double", "stop": END}
    )
    compiled = graph.compile(store=store)
    results = await asyncio.gather(
        *(compiled.run({"n": i, "log": [f"t{i}"]}, thread_id=f"thread-{i}") for i in range(200))
    )
    for i, result in enumerate(results):
        assert (f"thread-{i}", "completed") == (result.thread_id, result.status)
        assert Counter(n=4 * i, log=[f"t{i}", f"x{i}", f"x{2 * i}"]) == result.state
    snapshot = await compiled.get_state("thread-123")
    assert snapshot is not None
    assert Counter(n=492, log=["t123", "x123", "x246"]) == snapshot.state


async def test_run_cancelled_at_any_point_leaves_the_thread_free(store: CheckpointStore) -> None:
    """A run cancelled after any number of event-loop turns never leaves its thread leased."""
    graph = StateGraph(Counter)
    graph.add_node("gate", Gate(block=0))
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    compiled = graph.compile(store=store)
    still_busy: list[int] = []
    for turns in range(8):
        thread = f"t{turns}"
        task = asyncio.create_task(compiled.run({}, thread_id=thread))
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait({task})
        try:
            lease = await store.acquire(thread)
        except ThreadBusy:
            still_busy.append(turns)
        else:
            await lease.release()
    assert [] == still_busy
