"""Thread queries and diagrams: get_state, history and to_mermaid."""

from __future__ import annotations

from datetime import datetime

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    RetryPolicy,
    StateGraph,
)

from .helpers import Ask, Counter, ask_graph, chain, recorder


async def test_get_state_of_unknown_thread_is_none(store: CheckpointStore) -> None:
    """``get_state`` returns None for a thread that never ran."""
    assert None is await chain("a", store=store).get_state("never")


async def test_get_state_after_completion(store: CheckpointStore) -> None:
    """A completed thread's snapshot has its state, status, no next node and the last checkpoint id."""
    compiled = chain("a", "b", store=store)
    result = await compiled.run({}, thread_id="t")
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("completed", None, None, None, result.checkpoint_id, result.state) == (
        snapshot.status,
        snapshot.next,
        snapshot.suspension,
        snapshot.error,
        snapshot.checkpoint_id,
        snapshot.state,
    )
    assert datetime.fromisoformat(snapshot.created_at).tzinfo is not None


async def test_history_is_newest_first_with_one_checkpoint_per_step(store: CheckpointStore) -> None:
    """history() lists the input checkpoint and one per node, newest first, across turns."""
    compiled = chain("a", "b", store=store)
    first = await compiled.run({}, thread_id="t")
    snapshots = [s async for s in compiled.history("t")]
    assert [("completed", None), ("running", "b"), ("running", "a")] == [
        (s.status, s.next) for s in snapshots
    ]
    assert first.checkpoint_id == snapshots[0].checkpoint_id
    assert [2, 1, 0] == [s.state.n for s in snapshots]
    second = await compiled.run({}, thread_id="t")
    snapshots = [s async for s in compiled.history("t")]
    assert 6 == len(snapshots)
    assert second.checkpoint_id == snapshots[0].checkpoint_id
    assert [4, 3, 2, 2, 1, 0] == [s.state.n for s in snapshots]
    assert 6 == len({s.checkpoint_id for s in snapshots})


async def test_history_of_unknown_thread_is_empty(store: CheckpointStore) -> None:
    """history() of a thread that never ran yields nothing."""
    assert [] == [s async for s in chain("a", store=store).history("never")]


async def test_history_shows_the_suspension(store: CheckpointStore) -> None:
    """The newest snapshot of a suspended thread carries the suspension and its token."""
    compiled = ask_graph(Ask(), store)
    result = await compiled.run({}, thread_id="t")
    assert result.suspension is not None
    snapshots = [s async for s in compiled.history("t")]
    newest = snapshots[0]
    assert newest.suspension is not None
    assert ("suspended", "ask", {"question": "name?"}) == (
        newest.status,
        newest.next,
        newest.suspension.payload,
    )
    assert str(result.suspension.token) == str(newest.suspension.token)


@pytest.mark.parametrize("bad", ["../x", ""])
async def test_queries_validate_thread_id(store: CheckpointStore, bad: str) -> None:
    """get_state, history and delete_thread refuse invalid thread ids with ValueError."""
    compiled = chain("a", store=store)
    with pytest.raises(ValueError):
        await compiled.get_state(bad)
    with pytest.raises(ValueError):
        [s async for s in compiled.history(bad)]
    with pytest.raises(ValueError):
        await compiled.delete_thread(bad)


def test_to_mermaid_shows_nodes_edges_and_router_keys() -> None:
    """to_mermaid() draws every node, plain edges, router branches labelled by key, and on_error."""
    graph = StateGraph(Counter)
    graph.add_node("plan", recorder("plan"), retry=RetryPolicy(), on_error="recover")
    graph.add_node("search", recorder("search"))
    graph.add_node("recover", recorder("recover"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: "more", {"more": "search", "done": END})
    graph.add_edge("search", "plan")
    graph.add_edge("recover", END)
    text = graph.compile().to_mermaid()
    lines = text.splitlines()
    assert "flowchart TD" == lines[0]
    for line in [
        '    __start__(["START"])',
        '    __end__(["END"])',
        '    plan["plan"]',
        '    search["search"]',
        '    recover["recover"]',
        "    __start__ --> plan",
        "    search --> plan",
        "    recover --> __end__",
        '    plan -->|"more"| search',
        '    plan -->|"done"| __end__',
        '    plan -.->|"error"| recover',
    ]:
        assert line in lines
    assert 12 == len(lines)


def test_to_mermaid_escapes_awkward_node_names() -> None:
    """Node names that are not Mermaid identifiers get safe ids and keep their label."""
    graph = StateGraph(Counter)
    graph.add_node("end", recorder("end"))
    graph.add_node("web search", recorder("web search"))
    graph.add_edge(START, "end")
    graph.add_edge("end", "web search")
    graph.add_edge("web search", END)
    lines = graph.compile().to_mermaid().splitlines()
    assert '    n0["end"]' in lines
    assert '    n1["web search"]' in lines
    assert "    n0 --> n1" in lines
