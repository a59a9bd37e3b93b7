"""A router's copy of the state may become the next node's (when the router left it
unchanged): what either changes in place still reaches nothing else."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, MemoryCheckpointStore, StateGraph, append


class Inner(BaseModel):
    """A nested model changed in place."""

    tags: list[str] = []


class Doc(BaseModel):
    """An append list, a plain list, a nested model."""

    items: Annotated[list[str], append] = []
    notes: list[str] = []
    inner: Inner = Inner()


def _graph(router: Any, second: Any) -> Any:
    graph = StateGraph(Doc)

    async def first(state: Doc) -> dict[str, Any]:
        return {"items": ["a"]}

    graph.add_node("a", first).add_node("b", second)
    graph.add_edge(START, "a")
    graph.add_router("a", router, {"go": "b"})
    graph.add_edge("b", END)
    return graph.compile(store=MemoryCheckpointStore())


async def test_a_routers_in_place_changes_never_reach_the_next_node() -> None:
    """The node after a router that changed its copy gets the state without those changes."""
    seen: list[tuple[list[str], list[str], list[str]]] = []

    def router(state: Doc) -> str:
        state.items.append("router")
        state.notes.append("router")
        state.inner.tags.append("router")
        return "go"

    async def second(state: Doc) -> dict[str, Any]:
        seen.append((list(state.items), list(state.notes), list(state.inner.tags)))
        return {}

    app = _graph(router, second)
    result = await app.run({}, thread_id="t")
    assert seen == [(["a"], [], [])]
    assert (result.state.items, result.state.notes, result.state.inner.tags) == (["a"], [], [])
    history = [cp.state async for cp in app.store.history("t")]
    assert all("router" not in s.items + s.notes + s.inner.tags for s in history)


async def test_the_node_after_a_router_changes_only_its_own_copy() -> None:
    """In-place changes of the node after a router (not returned) reach neither the
    saved states nor the result; the changes it returns do."""

    def router(state: Doc) -> str:
        return "go"

    async def second(state: Doc) -> dict[str, Any]:
        state.items.append("lost")
        state.inner.tags.append("lost")
        return {"notes": ["kept"]}

    app = _graph(router, second)
    result = await app.run({}, thread_id="t")
    assert (result.state.items, result.state.inner.tags, result.state.notes) == (
        ["a"],
        [],
        ["kept"],
    )
    history = [cp.state async for cp in app.store.history("t")]
    assert all("lost" not in s.items + s.inner.tags for s in history)
