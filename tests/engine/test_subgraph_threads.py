"""A parent thread's child threads: deleted with it, never shared with a fork or a
new line of history, and drawn inside it by ``to_mermaid``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    NodeContext,
    Send,
    StateGraph,
    Suspend,
    append,
)


class Outer(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []


class Inner(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []


class Seen:
    """The threads child nodes ran on (each node records ``ctx.thread_id``)."""

    def __init__(self) -> None:
        self.threads: set[str] = set()
        self.answers: list[Any] = []

    def note(self, name: str) -> Any:
        async def node(state: Any, ctx: NodeContext) -> dict[str, Any]:
            self.threads.add(ctx.thread_id)
            return {"notes": [f"{name}:{state.topic}"]}

        return node

    def asking(self) -> Any:
        seen = self

        class Ask:
            async def run(self, state: Any, ctx: NodeContext) -> Suspend:
                seen.threads.add(ctx.thread_id)
                return Suspend({"question": state.topic})

            async def resume(self, state: Any, value: Any, ctx: NodeContext) -> dict[str, Any]:
                seen.answers.append(value)
                return {"notes": [f"ask={value}"]}

        return Ask()


def leaf(store: CheckpointStore, seen: Seen, *, ask: bool = False) -> CompiledGraph[Inner]:
    graph = StateGraph(Inner).add_node("gather", seen.note("gather"))
    graph.add_edge(START, "gather")
    if ask:
        graph.add_node("ask", seen.asking()).add_edge("gather", "ask").add_edge("ask", END)
    else:
        graph.add_edge("gather", END)
    return graph.compile(store=store)


def nested(store: CheckpointStore, seen: Seen, *, ask: bool = False) -> CompiledGraph[Inner]:
    """before -> deep (a leaf subgraph) -> END."""
    graph = StateGraph(Inner).add_node("before", seen.note("before"))
    graph.add_node("deep", leaf(store, seen, ask=ask))
    graph.add_edge(START, "before").add_edge("before", "deep").add_edge("deep", END)
    return graph.compile(store=store)


def parent(store: CheckpointStore, seen: Seen, *, ask: bool = False) -> CompiledGraph[Outer]:
    """plan -> research (nested subgraph) -> fan out to `each` (a leaf subgraph per
    Send item) -> write."""
    graph = StateGraph(Outer)
    graph.add_node("plan", seen.note("plan"))
    graph.add_node("research", nested(store, seen, ask=ask))
    graph.add_node("each", leaf(store, seen))
    graph.add_node("write", seen.note("write"))
    graph.add_edge(START, "plan").add_edge("plan", "research")
    graph.add_router(
        "research", lambda s: [Send("each", {"topic": t}) for t in ("a", "b")], ["each"]
    )
    graph.add_edge("each", "write").add_edge("write", END)
    return graph.compile(store=store)


async def test_delete_thread_deletes_every_child_thread(store: CheckpointStore) -> None:
    """Deleting a conversation deletes the threads its subgraphs ran on: a nested
    child's child, and one child per ``Send`` branch; another thread's stay."""
    seen = Seen()
    app = parent(store, seen)
    assert (await app.run({"topic": "t"}, thread_id="p")).status == "completed"
    mine = seen.threads - {"p"}
    seen.threads.clear()
    await app.run({"topic": "u"}, thread_id="other")
    others = seen.threads - {"other"}
    assert len(mine) == 4 and len(others) == 4  # research, research's deep, 2 x each
    await app.delete_thread("p")
    for thread in mine | {"p"}:
        assert await store.load_latest(thread) is None, thread
    for thread in others | {"other"}:
        assert await store.load_latest(thread) is not None, thread


async def test_delete_thread_deletes_a_suspended_child_and_its_later_turns(
    store: CheckpointStore,
) -> None:
    """A child suspended two levels down, and the children of a second turn, go too."""
    seen = Seen()
    app = parent(store, seen, ask=True)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.status == "suspended" and first.suspension is not None
    await app.resume(first.suspension.token, "yes")
    again = await app.run({"topic": "v"}, thread_id="p")
    assert again.status == "suspended"
    children = seen.threads - {"p"}
    assert len(children) == 6  # turn 1: 4 threads; turn 2 suspended in research: 2
    await app.delete_thread("p")
    for thread in children | {"p"}:
        assert await store.load_latest(thread) is None, thread


async def test_a_crash_midway_through_delete_is_finished_by_a_retry(
    store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Children go first, the parent last: when deleting stops after some children,
    the parent still names the rest and deleting again removes them."""
    seen = Seen()
    app = parent(store, seen)
    await app.run({"topic": "t"}, thread_id="p")
    children = seen.threads - {"p"}
    deleted: list[str] = []
    real = store.delete

    async def crashing(thread_id: str) -> None:
        if len(deleted) == 2:
            raise OSError("power cut")
        await real(thread_id)
        deleted.append(thread_id)

    monkeypatch.setattr(store, "delete", crashing)
    with pytest.raises(OSError, match="power cut"):
        await app.delete_thread("p")
    monkeypatch.undo()
    assert len(deleted) == 2 and "p" not in deleted
    assert await store.load_latest("p") is not None
    await app.delete_thread("p")
    for thread in children | {"p"}:
        assert await store.load_latest(thread) is None, thread
