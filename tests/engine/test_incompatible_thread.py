"""A saved thread the graph no longer fits: one clear error, and new input starts afresh."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    IncompatibleCheckpoint,
    StateGraph,
)

from .helpers import Ask, Counter, ask_graph, chain


class Grown(BaseModel):
    """Counter with a field added without a default."""

    n: int = 0
    log: list[str] = []
    topic: str


class Retyped(BaseModel):
    """Counter with ``n`` changed to a list."""

    n: list[int] = []
    log: list[str] = []


def _single(model: type[BaseModel], store: CheckpointStore) -> CompiledGraph[Any]:
    graph = StateGraph(model)

    async def a(state: Any) -> dict[str, Any]:
        return {}

    graph.add_node("a", a)
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    return graph.compile(store=store)


@pytest.mark.parametrize(("model", "field"), [(Grown, "topic"), (Retyped, "n")])
async def test_state_that_no_longer_validates_names_the_field(
    store: CheckpointStore, model: type[BaseModel], field: str
) -> None:
    """A saved state the model rejects gives IncompatibleCheckpoint naming thread and field."""
    await chain("a", store=store).run({}, thread_id="t")
    app = _single(model, store)
    with pytest.raises(IncompatibleCheckpoint) as caught:
        await app.run(None, thread_id="t")
    assert ("t", field) == (caught.value.thread_id, caught.value.field)
    assert field in str(caught.value)


async def test_new_input_starts_afresh_on_a_state_that_no_longer_validates(
    store: CheckpointStore,
) -> None:
    """New input on a thread whose state no longer validates starts a fresh run."""
    await chain("a", store=store).run({"n": 4}, thread_id="t")
    app = _single(Grown, store)
    result = await app.run({"topic": "x"}, thread_id="t")
    assert ("completed", "x", 0) == (result.status, result.state.topic, result.state.n)
    snap = await app.get_state("t")
    assert snap is not None
    assert "x" == snap.state.topic


async def test_suspended_node_that_no_longer_exists_names_it(store: CheckpointStore) -> None:
    """Resuming a thread suspended in a node the graph dropped names the node; new input starts afresh."""
    suspended = await ask_graph(Ask(), store=store).run({}, thread_id="t")
    assert suspended.suspension is not None
    app = chain("first", "after", store=store)
    with pytest.raises(IncompatibleCheckpoint) as caught:
        await app.resume(suspended.suspension.token, "x")
    assert ("t", "ask") == (caught.value.thread_id, caught.value.node)
    result = await app.run({}, thread_id="t")
    assert (["first", "after"], "completed") == (result.path, result.status)


async def test_next_node_that_no_longer_exists_names_it(store: CheckpointStore) -> None:
    """Continuing a run whose next node the graph dropped names the node."""
    app = chain("a", "b", store=store)
    await app.run({}, thread_id="t")
    await store.save(  # as if killed before `b` ran
        _unfinished(await store.load_latest("t"), "b")
    )
    with pytest.raises(IncompatibleCheckpoint) as caught:
        await chain("a", store=store).run(None, thread_id="t")
    assert ("t", "b") == (caught.value.thread_id, caught.value.node)
    snap = await chain("a", store=store).get_state("t")  # still readable
    assert snap is not None
    assert "b" == snap.next
    result = await chain("a", store=store).run({}, thread_id="t")
    assert (["a"], Counter) == (result.path, type(result.state))


def _unfinished(latest: Any, node: str) -> Any:
    import dataclasses
    import secrets

    assert latest is not None
    return dataclasses.replace(
        latest,
        checkpoint_id=secrets.token_hex(12),
        parent_id=latest.checkpoint_id,
        seq=latest.seq + 1,
        status="running",
        next=node,
        changes=None,
    )


async def test_get_state_of_a_state_that_no_longer_validates_names_the_field(
    store: CheckpointStore,
) -> None:
    """get_state on a saved state the model rejects raises IncompatibleCheckpoint naming the field."""
    await chain("a", store=store).run({}, thread_id="t")
    with pytest.raises(IncompatibleCheckpoint) as caught:
        await _single(Grown, store).get_state("t")
    assert ("t", "topic") == (caught.value.thread_id, caught.value.field)


async def test_history_lists_a_state_that_no_longer_validates_and_names_it_on_read(
    store: CheckpointStore,
) -> None:
    """history() pages a thread whose states no longer fit; reading one's state raises, naming the field."""
    await chain("a", store=store).run({}, thread_id="t")
    page = [s async for s in _single(Grown, store).history("t", limit=2)]
    assert ["completed", "running"] == [s.status for s in page]
    for snap in page:
        with pytest.raises(IncompatibleCheckpoint) as caught:
            _ = snap.state
        assert ("t", "topic") == (caught.value.thread_id, caught.value.field)
        assert f"state=<IncompatibleCheckpoint: {caught.value}>" in repr(snap)
