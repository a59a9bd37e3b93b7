"""``CompiledGraph.threads``: the listing through the engine, and which threads name a
parent (a subgraph's children keep theirs through edits and new lines; a fork has none)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.helpers import Counter, chain
from research_fsm.engine import (
    END,
    START,
    InvalidThreadQuery,
    MemoryCheckpointStore,
    Send,
    StateGraph,
)


def with_child(store: Any) -> Any:
    """START -> sub (a one-node child graph) -> END."""
    graph = StateGraph(Counter).add_node("sub", chain("x"))
    return graph.add_edge(START, "sub").add_edge("sub", END).compile(store=store)


async def test_a_child_keeps_its_parent_through_edits_and_new_lines() -> None:
    """update_state and run(checkpoint_id=...) on a child thread keep its parent; fork drops it."""
    app = with_child(MemoryCheckpointStore())
    await app.run({"n": 1}, thread_id="top")
    child = next(t for t in (await app.threads()).threads if t.thread_id != "top")
    sub = app.subgraph("sub")
    await sub.update_state(child.thread_id, {"n": 7})
    first = [s async for s in sub.history(child.thread_id)][-1]
    await sub.run(None, thread_id=child.thread_id, checkpoint_id=first.checkpoint_id)
    await sub.fork(child.thread_id, None, "copy")
    parents = {t.thread_id: t.parent_thread_id for t in (await app.threads()).threads}
    assert parents == {"top": None, child.thread_id: "top", "copy": None}


async def test_children_of_a_fan_out_name_their_parent() -> None:
    """A subgraph node run as Send branches: each branch's child thread names the parent."""
    graph = StateGraph(Counter).add_node("sub", chain("x"), output=lambda final: {"log": ["x"]})
    graph.add_router(START, lambda s: [Send("sub", {"n": i}) for i in range(3)], ["sub"])
    app = graph.add_edge("sub", END).compile(store=MemoryCheckpointStore())
    await app.run({}, thread_id="fan")
    page = await app.threads()
    children = [t for t in page.threads if t.thread_id != "fan"]
    assert len(children) == 3 and {t.parent_thread_id for t in children} == {"fan"}
    assert [t.thread_id for t in (await app.threads(children=False)).threads] == ["fan"]


async def test_a_store_without_a_listing_is_named() -> None:
    """A store of one's own without threads(...) runs graphs; app.threads says what it lacks."""

    class Plain:
        def __init__(self) -> None:
            self.inner = MemoryCheckpointStore()
            self.saves_changes = False

        def __getattr__(self, name: str) -> Any:
            if name == "threads":
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = Plain()
    for name in ("acquire", "load_latest", "save", "history", "load", "delete", "secret"):
        setattr(store, name, getattr(store.inner, name))
    app = chain("a", store=store)  # type: ignore[arg-type]
    assert (await app.run({}, thread_id="t")).status == "completed"
    with pytest.raises(TypeError, match="ThreadListing"):
        await app.threads()
    with pytest.raises(InvalidThreadQuery, match="limit"):
        await app.threads(limit=True)
