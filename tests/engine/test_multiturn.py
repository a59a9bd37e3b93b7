"""Multi-turn threads: next turns, continuing stopped runs, abandoning unfinished ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from structlog.testing import capture_logs

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    NodeFailed,
    StateGraph,
    ThreadNotFound,
)

from .helpers import Counter, Gate, chain, recorder


async def test_second_run_merges_input_with_reducers_and_restarts(store: CheckpointStore) -> None:
    """A new turn merges its input (append/replace) into the saved state and starts at START."""
    calls: list[str] = []
    compiled = chain("a", "b", store=store, calls=calls)
    await compiled.run({"log": ["hello"]}, thread_id="t")
    result = await compiled.run({"log": ["again"], "n": 100}, thread_id="t")
    assert result.path == ["a", "b"]
    assert calls == ["a", "b", "a", "b"]
    assert Counter(n=102, log=["hello", "a", "b", "again", "a", "b"]) == result.state


async def test_run_none_on_completed_thread_is_a_no_op(store: CheckpointStore) -> None:
    """``run(None)`` on a finished thread runs nothing and returns the saved state."""
    calls: list[str] = []
    compiled = chain("a", store=store, calls=calls)
    first = await compiled.run({}, thread_id="t")
    again = await compiled.run(None, thread_id="t")
    assert ("completed", [], first.state, first.checkpoint_id) == (
        again.status,
        again.path,
        again.state,
        again.checkpoint_id,
    )
    assert calls == ["a"]


async def test_run_none_on_new_thread_raises_thread_not_found(store: CheckpointStore) -> None:
    """``run(None)`` on a thread that never ran raises ThreadNotFound (a LookupError)."""
    compiled = chain("a", store=store)
    with pytest.raises(ThreadNotFound, match="thread `nobody` does not exist") as info:
        await compiled.run(None, thread_id="nobody")
    assert info.value.thread_id == "nobody"
    assert isinstance(info.value, LookupError)
    assert None is await compiled.get_state("nobody")


def flaky_graph(
    store: CheckpointStore, broken: dict[str, bool], calls: list[str]
) -> CompiledGraph[Counter]:
    async def flaky(state: Counter) -> dict[str, Any]:
        calls.append("flaky")
        if broken["on"]:
            raise RuntimeError("service down")
        return {"log": ["flaky"]}

    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a", calls))
    graph.add_node("flaky", flaky)
    graph.add_node("c", recorder("c", calls))
    graph.add_edge(START, "a")
    graph.add_edge("a", "flaky")
    graph.add_edge("flaky", "c")
    graph.add_edge("c", END)
    return graph.compile(store=store)


async def test_run_none_after_failure_continues_from_failed_node(store: CheckpointStore) -> None:
    """After NodeFailed, fixing the cause and ``run(None)`` re-runs only the failed node onward."""
    broken = {"on": True}
    calls: list[str] = []
    compiled = flaky_graph(store, broken, calls)
    with pytest.raises(NodeFailed):
        await compiled.run({}, thread_id="t")
    broken["on"] = False
    result = await compiled.run(None, thread_id="t")
    assert (result.status, result.path) == ("completed", ["flaky", "c"])
    assert calls == ["a", "flaky", "flaky", "c"]
    assert Counter(n=2, log=["a", "flaky", "c"]) == result.state


async def test_cancelled_run_continues_with_run_none(store: CheckpointStore) -> None:
    """A run cancelled mid-node continues from that node with ``run(None)``; earlier nodes do not re-run."""
    gate = Gate()
    calls: list[str] = []
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a", calls))
    graph.add_node("gate", gate)
    graph.add_edge(START, "a")
    graph.add_edge("a", "gate")
    graph.add_edge("gate", END)
    compiled = graph.compile(store=store)
    task = asyncio.create_task(compiled.run({}, thread_id="t"))
    await gate.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert (snapshot.status, snapshot.next) == ("running", "gate")
    result = await compiled.run(None, thread_id="t")
    assert (result.path, calls, gate.cancelled) == (["gate"], ["a"], 1)
    assert Counter(n=2, log=["a", "gate"]) == result.state


async def test_cancel_in_first_node_of_a_turn_keeps_the_input(store: CheckpointStore) -> None:
    """Cancelled inside the first node, the turn's input is saved and ``run(None)`` finishes it."""
    gate = Gate()
    graph = StateGraph(Counter)
    graph.add_node("gate", gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    compiled = graph.compile(store=store)
    task = asyncio.create_task(compiled.run({"log": ["user message"]}, thread_id="t"))
    await gate.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await compiled.run(None, thread_id="t")
    assert (["gate"], Counter(n=1, log=["user message", "gate"])) == (result.path, result.state)


async def test_new_input_abandons_unfinished_run_and_logs_it(store: CheckpointStore) -> None:
    """New input on a thread that stopped midway logs a warning and starts again at START."""
    broken = {"on": True}
    calls: list[str] = []
    compiled = flaky_graph(store, broken, calls)
    with pytest.raises(NodeFailed):
        await compiled.run({}, thread_id="t")
    broken["on"] = False
    with capture_logs() as logs:
        result = await compiled.run({"log": ["new"]}, thread_id="t")
    assert result.path == ["a", "flaky", "c"]
    warnings = [e for e in logs if e["event"] == "new input abandons an unfinished run"]
    assert len(warnings) == 1
    assert (
        warnings[0]["log_level"],
        warnings[0]["thread_id"],
        warnings[0]["next_node"],
    ) == ("warning", "t", "flaky")


async def test_new_turn_on_completed_thread_logs_no_abandon(store: CheckpointStore) -> None:
    """Starting the next turn of a finished thread is normal and logs no warning."""
    compiled = chain("a", store=store)
    await compiled.run({}, thread_id="t")
    with capture_logs() as logs:
        await compiled.run({}, thread_id="t")
    assert [e for e in logs if e["log_level"] == "warning"] == []
