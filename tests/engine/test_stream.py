"""Streaming: event order, ctx.emit interleaving, early exit, results and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Completed,
    Emitted,
    Event,
    NodeContext,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    StateGraph,
    Suspended,
    ThreadBusy,
)

from .helpers import Ask, Counter, Gate, ask_graph, chain


def shape(events: list[Event]) -> list[tuple[Any, ...]]:
    """Events reduced to comparable tuples (durations and results left out)."""
    out: list[tuple[Any, ...]] = []
    for ev in events:
        if isinstance(ev, NodeStarted):
            out.append(("started", ev.node, ev.step))
        elif isinstance(ev, NodeFinished):
            out.append(("finished", ev.node, ev.step, ev.update))
        elif isinstance(ev, Emitted):
            out.append(("emitted", ev.node, ev.kind, ev.data))
        elif isinstance(ev, Suspended):
            out.append(("suspended", ev.suspension.node))
        else:
            out.append(("completed", ev.result.status))
    return out


async def test_event_order_for_a_completed_run(store: CheckpointStore) -> None:
    """Each node yields NodeStarted then NodeFinished (with its update); Completed comes last."""
    compiled = chain("a", "b", store=store)
    async with compiled.stream({}, thread_id="t") as events:
        collected = [ev async for ev in events]
    assert shape(collected) == [
        ("started", "a", 0),
        ("finished", "a", 0, {"n": 1, "log": ["a"]}),
        ("started", "b", 1),
        ("finished", "b", 1, {"n": 2, "log": ["b"]}),
        ("completed", "completed"),
    ]
    finished = [ev for ev in collected if isinstance(ev, NodeFinished)]
    assert all(ev.duration >= 0 for ev in finished)
    last = collected[-1]
    assert isinstance(last, Completed)
    assert events.result is last.result
    assert (["a", "b"], Counter(n=2, log=["a", "b"])) == (last.result.path, last.result.state)


async def test_result_is_set_only_after_exhaustion(store: CheckpointStore) -> None:
    """``RunStream.result`` is None until the stream is exhausted, then equals run()'s result."""
    compiled = chain("a", store=store)
    stream = compiled.stream({}, thread_id="t")
    first = await stream.__anext__()
    assert isinstance(first, NodeStarted)
    assert None is stream.result
    rest = [ev async for ev in stream]
    assert isinstance(rest[-1], Completed)
    assert stream.result is not None
    assert ("completed", ["a"], Counter(n=1, log=["a"])) == (
        stream.result.status,
        stream.result.path,
        stream.result.state,
    )


async def test_suspended_event_ends_stream_and_stream_resume_continues(
    store: CheckpointStore,
) -> None:
    """A suspension yields Suspended (with a working token) and ends the stream; stream_resume goes on."""
    compiled = ask_graph(Ask(), store)
    async with compiled.stream({}, thread_id="t") as events:
        collected = [ev async for ev in events]
    assert shape(collected) == [
        ("started", "first", 0),
        ("finished", "first", 0, {"n": 1, "log": ["first"]}),
        ("started", "ask", 1),
        ("suspended", "ask"),
    ]
    suspended = collected[-1]
    assert isinstance(suspended, Suspended)
    assert suspended.result.status == "suspended"
    async with compiled.stream_resume(str(suspended.suspension.token), "Bo") as events:
        resumed = [ev async for ev in events]
    assert shape(resumed) == [
        ("started", "ask", 1),
        ("finished", "ask", 1, {"log": ["answer:Bo"]}),
        ("started", "after", 2),
        ("finished", "after", 2, {"n": 3, "log": ["after"]}),
        ("completed", "completed"),
    ]


async def test_emit_is_delivered_while_the_node_runs(store: CheckpointStore) -> None:
    """``ctx.emit`` events reach the consumer before the node returns (the node waits on the consumer)."""
    consumer_saw_token = asyncio.Event()

    async def talker(state: Counter, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "Hel")
        await consumer_saw_token.wait()  # only the consumer can set this
        ctx.emit("token", "lo")
        return {"log": ["talked"]}

    graph = StateGraph(Counter)
    graph.add_node("talker", talker)
    graph.add_edge(START, "talker")
    graph.add_edge("talker", END)
    compiled = graph.compile(store=store)
    collected: list[Event] = []
    async with asyncio.timeout(10), compiled.stream({}, thread_id="t") as events:
        async for ev in events:
            collected.append(ev)
            if isinstance(ev, Emitted) and ev.data == "Hel":
                consumer_saw_token.set()
    assert shape(collected) == [
        ("started", "talker", 0),
        ("emitted", "talker", "token", "Hel"),
        ("emitted", "talker", "token", "lo"),
        ("finished", "talker", 0, {"log": ["talked"]}),
        ("completed", "completed"),
    ]


async def test_emit_without_a_stream_is_a_no_op(store: CheckpointStore) -> None:
    """``ctx.emit`` during a plain ``run`` is harmless."""

    async def talker(state: Counter, ctx: NodeContext) -> None:
        ctx.emit("token", "x")

    graph = StateGraph(Counter)
    graph.add_node("talker", talker)
    graph.add_edge(START, "talker")
    graph.add_edge("talker", END)
    assert (await graph.compile(store=store).run({}, thread_id="t")).path == ["talker"]


def gate_graph(gate: Gate, store: CheckpointStore) -> Any:
    graph = StateGraph(Counter)
    graph.add_node("gate", gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    return graph.compile(store=store)


async def test_leaving_async_with_early_releases_the_thread_at_once(store: CheckpointStore) -> None:
    """Exiting ``async with`` mid-run cancels the node and frees the thread before the block ends."""
    gate = Gate()
    compiled = gate_graph(gate, store)
    async with compiled.stream({}, thread_id="t") as events:
        async for ev in events:
            if isinstance(ev, NodeStarted):
                break
    assert gate.cancelled == 1
    lease = await store.acquire("t")  # raises ThreadBusy if the run still held it
    await lease.release()
    result = await compiled.run(None, thread_id="t")
    assert (result.path, gate.calls) == (["gate"], 2)


async def test_break_without_async_with_then_new_run_works(store: CheckpointStore) -> None:
    """Dropping a stream with ``break`` (no ``async with``) does not leave the thread busy."""
    gate = Gate()
    compiled = gate_graph(gate, store)
    async with asyncio.timeout(10):
        async for ev in compiled.stream({}, thread_id="t"):
            assert isinstance(ev, NodeStarted)
            await gate.entered.wait()
            break
        result = await compiled.run(None, thread_id="t")
    assert (result.path, gate.cancelled, gate.calls) == (["gate"], 1, 2)


async def test_error_in_run_propagates_out_of_iteration(store: CheckpointStore) -> None:
    """A failing node's NodeFailed is raised by the ``async for`` after the events before it."""

    async def broken(state: Counter) -> None:
        raise ValueError("nope")

    graph = StateGraph(Counter)
    graph.add_node("broken", broken)
    graph.add_edge(START, "broken")
    graph.add_edge("broken", END)
    collected: list[Event] = []
    with pytest.raises(NodeFailed, match="nope"):
        async with graph.compile(store=store).stream({}, thread_id="t") as events:
            async for ev in events:
                collected.append(ev)
    assert shape(collected) == [("started", "broken", 0)]


async def test_stream_on_busy_thread_raises_thread_busy(store: CheckpointStore) -> None:
    """Streaming a thread another run holds raises ThreadBusy from the iteration."""
    gate = Gate()
    compiled = gate_graph(gate, store)
    holder = asyncio.create_task(compiled.run({}, thread_id="t"))
    await gate.entered.wait()
    with pytest.raises(ThreadBusy):
        async with compiled.stream(None, thread_id="t") as events:
            async for _ in events:
                pass
    gate.release.set()
    assert (await holder).status == "completed"
    assert gate.calls == 1


async def test_stream_validates_thread_id_at_once(store: CheckpointStore) -> None:
    """``stream`` with an invalid thread id raises ValueError when called, before iterating."""
    with pytest.raises(ValueError, match="invalid thread_id"):
        chain("a", store=store).stream({}, thread_id="../x")
