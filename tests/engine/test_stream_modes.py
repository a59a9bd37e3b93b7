"""Stream modes: "events" (the default), "updates", "values", "custom", and lists of
them (tagged (mode, chunk) pairs), for stream and stream_resume."""

from __future__ import annotations

from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Emitted,
    InvalidStreamMode,
    NodeContext,
    NodeFinished,
    NodeStarted,
    StateGraph,
    Suspend,
)

from .helpers import Counter, chain


def talker(name: str) -> Any:
    async def node(state: Counter, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", f"{name}-1")
        ctx.emit("token", f"{name}-2")
        return {"n": state.n + 1, "log": [name]}

    return node


def talking_chain(store: CheckpointStore) -> Any:
    graph = StateGraph(Counter)
    graph.add_node("a", talker("a")).add_node("b", talker("b"))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph.compile(store=store)


async def collect(stream: Any) -> list[Any]:
    async with stream as items:
        return [item async for item in items]


async def test_updates_yields_each_nodes_update(store: CheckpointStore) -> None:
    app = chain("a", "b", "c", store=store)
    stream = app.stream({}, thread_id="t", mode="updates")
    chunks = await collect(stream)
    assert chunks == [
        {"a": {"n": 1, "log": ["a"]}},
        {"b": {"n": 2, "log": ["b"]}},
        {"c": {"n": 3, "log": ["c"]}},
    ]
    assert stream.result is not None and stream.result.status == "completed"


async def test_values_yields_the_whole_state_after_each_step(store: CheckpointStore) -> None:
    app = chain("a", "b", store=store)
    chunks = await collect(app.stream({"log": ["in"]}, thread_id="t", mode="values"))
    # The input merged first, as LangGraph's "values" stream starts.
    assert [(c.n, c.log) for c in chunks] == [(0, ["in"]), (1, ["in", "a"]), (2, ["in", "a", "b"])]
    assert all(isinstance(c, Counter) for c in chunks)


async def test_values_are_copies_the_run_does_not_see_changed(store: CheckpointStore) -> None:
    app = chain("a", "b", store=store)
    stream = app.stream({}, thread_id="t", mode="values")
    async with stream as items:
        async for state in items:
            state.log.append("meddled")
    assert stream.result is not None and stream.result.state.log == ["a", "b"]


async def test_values_after_a_fan_out_is_the_merged_state(store: CheckpointStore) -> None:
    async def left(state: Counter) -> dict[str, Any]:
        return {"log": ["left"]}

    async def right(state: Counter) -> dict[str, Any]:
        return {"log": ["right"]}

    async def join(state: Counter) -> dict[str, Any]:
        return {"log": ["join"]}

    graph = StateGraph(Counter)
    graph.add_node("left", left).add_node("right", right).add_node("join", join)
    graph.add_edge(START, ["left", "right"]).add_edge(["left", "right"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=store)
    chunks = await collect(app.stream({}, thread_id="t", mode="values"))
    # Branch states are not the run's: the merge, then the join's step.
    assert [c.log for c in chunks] == [[], ["left", "right"], ["left", "right", "join"]]


async def test_custom_yields_only_what_nodes_emit(store: CheckpointStore) -> None:
    chunks = await collect(talking_chain(store).stream({}, thread_id="t", mode="custom"))
    assert all(isinstance(c, Emitted) for c in chunks)
    assert [(c.node, c.kind, c.data) for c in chunks] == [
        ("a", "token", "a-1"),
        ("a", "token", "a-2"),
        ("b", "token", "b-1"),
        ("b", "token", "b-2"),
    ]


async def test_a_list_of_modes_tags_each_chunk_in_order(store: CheckpointStore) -> None:
    app = talking_chain(store)
    chunks = await collect(app.stream({}, thread_id="t", mode=["custom", "updates", "values"]))
    shape = [
        (mode, chunk.data if mode == "custom" else chunk.n if mode == "values" else chunk)
        for mode, chunk in chunks
    ]
    assert shape == [
        ("values", 0),
        ("custom", "a-1"),
        ("custom", "a-2"),
        ("updates", {"a": {"n": 1, "log": ["a"]}}),
        ("values", 1),
        ("custom", "b-1"),
        ("custom", "b-2"),
        ("updates", {"b": {"n": 2, "log": ["b"]}}),
        ("values", 2),
    ]


async def test_events_in_a_list_are_the_events(store: CheckpointStore) -> None:
    app = chain("a", store=store)
    chunks = await collect(app.stream({}, thread_id="t", mode=["events", "updates"]))
    kinds = [(mode, type(chunk).__name__) for mode, chunk in chunks]
    assert kinds == [
        ("events", "NodeStarted"),
        ("events", "NodeFinished"),
        ("updates", "dict"),
        ("events", "Completed"),
    ]


async def test_the_default_is_the_events_unchanged(store: CheckpointStore) -> None:
    events = await collect(chain("a", store=store).stream({}, thread_id="t"))
    assert [type(e) for e in events[:2]] == [NodeStarted, NodeFinished]
    assert len(events) == 3  # and Completed: no state chunks leak in


async def test_stream_resume_takes_a_mode(store: CheckpointStore) -> None:
    class Ask:
        async def run(self, state: Counter, ctx: NodeContext) -> Suspend:
            return Suspend("?", update={"log": ["asked"]})

        async def resume(self, state: Counter, value: Any, ctx: NodeContext) -> dict[str, Any]:
            ctx.emit("token", value)
            return {"log": [value]}

    graph = StateGraph(Counter)
    graph.add_node("ask", Ask()).add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(store=store)
    asked = await collect(app.stream({}, thread_id="t", mode="values"))
    assert [c.log for c in asked] == [[], ["asked"]]  # the input, the suspension's state
    snapshot = await app.get_state("t")
    assert snapshot is not None and snapshot.suspension is not None
    stream = app.stream_resume(snapshot.suspension.token, "yes", mode=["custom", "values"])
    chunks = await collect(stream)
    assert [(m, c.data if m == "custom" else c.log) for m, c in chunks] == [
        ("values", ["asked"]),  # where the call starts, as LangGraph's
        ("custom", "yes"),
        ("values", ["asked", "yes"]),
    ]
    assert stream.result is not None and stream.result.status == "completed"


@pytest.mark.parametrize("mode", ["messages", ["updates", "debug"], [], 3])
async def test_an_unknown_mode_names_the_modes(mode: Any) -> None:
    app = chain("a")
    with pytest.raises(InvalidStreamMode, match="'events', 'updates', 'values', 'custom'"):
        app.stream({}, thread_id="t", mode=mode)
    assert await app.get_state("t") is None
