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
    MemoryCheckpointStore,
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


def asking_parent(store: CheckpointStore, seen: Seen) -> CompiledGraph[Outer]:
    """plan -> research (gather -> ask, a leaf subgraph) -> write."""
    graph = StateGraph(Outer)
    graph.add_node("plan", seen.note("plan")).add_node("research", leaf(store, seen, ask=True))
    graph.add_node("write", seen.note("write"))
    graph.add_edge(START, "plan").add_edge("plan", "research")
    graph.add_edge("research", "write").add_edge("write", END)
    return graph.compile(store=store)


async def _child_log(store: CheckpointStore, thread: str) -> list[str]:
    return [cp.checkpoint_id async for cp in store.history(thread)]


async def test_a_new_line_of_history_inside_a_child_carries_the_question_over(
    store: CheckpointStore,
) -> None:
    """``run(None, checkpoint_id=...)`` back to where the parent was suspended inside
    its child: the new line's child thread (its own) starts as a fork of the child at
    that question, so the answer to the new token answers it, asked once; the
    abandoned line's answer is not taken and its child thread is not touched."""
    seen = Seen()
    app = asking_parent(store, seen)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    (old_child,) = seen.threads - {"p"}
    done = await app.resume(first.suspension.token, "yes")
    assert done.state.notes == ["plan:t", "gather:t", "ask=yes", "write:t"]
    old_log = await _child_log(store, old_child)
    again = await app.run(None, thread_id="p", checkpoint_id=first.checkpoint_id)
    assert again.status == "suspended" and again.suspension is not None
    assert again.suspension.payload == {"question": "t"}
    final = await app.resume(again.suspension.token, "no")
    assert final.state.notes == ["plan:t", "gather:t", "ask=no", "write:t"]
    assert seen.answers == ["yes", "no"]
    new_child = again.suspension.child_thread_id
    assert new_child is not None and new_child != old_child
    assert await store.load_latest(new_child) is not None
    new_children = {new_child}
    assert await _child_log(store, old_child) == old_log
    await app.delete_thread("p")
    for thread in {old_child, *new_children, "p"}:
        assert await store.load_latest(thread) is None, thread


async def test_a_fork_inside_a_child_carries_the_question_and_leaves_the_source_alone(
    store: CheckpointStore,
) -> None:
    """``fork`` of a checkpoint where the parent waits on its child: the fork's child
    thread (derived from the fork's thread id) starts as a fork of the child at that
    question, which the fork's token answers, and the source's child goes on
    untouched."""
    seen = Seen()
    app = asking_parent(store, seen)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    (source_child,) = seen.threads - {"p"}
    source_log = await _child_log(store, source_child)
    forked = await app.fork("p", first.checkpoint_id, "q")
    assert forked.suspension is not None
    final = await app.resume(forked.suspension.token, "fork")
    assert final.state.notes == ["plan:t", "gather:t", "ask=fork", "write:t"]
    assert await _child_log(store, source_child) == source_log
    done = await app.resume(first.suspension.token, "source")
    assert done.state.notes == ["plan:t", "gather:t", "ask=source", "write:t"]
    await app.delete_thread("q")
    assert await store.load_latest(source_child) is not None
    assert (await app.get_state("p")) is not None


def test_to_mermaid_draws_each_subgraph_as_a_block_with_its_nodes() -> None:
    """A subgraph node is a Mermaid ``subgraph`` block holding the child's nodes and
    edges (nested children inside it), its ids apart from the parent's even when a
    parent node is named like one; the parent's edges reach the block."""
    store = MemoryCheckpointStore()
    seen = Seen()
    graph = StateGraph(Outer)
    graph.add_node("research", nested(store, seen))
    graph.add_node("research_before", seen.note("x"))  # a child's id, were `_` the joint
    graph.add_edge(START, "research").add_edge("research", "research_before")
    graph.add_edge("research_before", END)
    drawn = graph.compile(store=store).to_mermaid().splitlines()
    body = drawn[drawn.index('    subgraph research["research"]') :]
    block = body[: body.index("    end") + 1]
    assert block == [
        '    subgraph research["research"]',
        "        direction TB",
        '        research____start__(["START"])',
        '        research____end__(["END"])',
        '        research__before["before"]',
        '        subgraph research__deep["deep"]',
        "            direction TB",
        '            research__deep____start__(["START"])',
        '            research__deep____end__(["END"])',
        '            research__deep__gather["gather"]',
        "            research__deep____start__ --> research__deep__gather",
        "            research__deep__gather --> research__deep____end__",
        "        end",
        "        research____start__ --> research__before",
        "        research__before --> research__deep",
        "        research__deep --> research____end__",
        "    end",
    ]
    assert '    research_before["research_before"]' in drawn
    assert "    __start__ --> research" in drawn
    assert "    research --> research_before" in drawn


async def test_delete_thread_finds_a_subgraph_a_branch_reaches_after_a_node(
    store: CheckpointStore,
) -> None:
    """A static fan-out whose branches run a plain node, then a subgraph: each branch
    node execution has its own key, and the child of the later one goes too."""
    seen = Seen()
    graph = StateGraph(Outer)
    graph.add_node("a", seen.note("a")).add_node("b", seen.note("b"))
    graph.add_node("research", nested(store, seen)).add_node("other", leaf(store, seen))
    graph.add_node("join", seen.note("join"))
    graph.add_edge(START, ["a", "b"]).add_edge("a", "research").add_edge("b", "other")
    graph.add_edge(["research", "other"], "join").add_edge("join", END)
    app = graph.compile(store=store)
    assert (await app.run({"topic": "t"}, thread_id="p")).status == "completed"
    children = seen.threads - {"p"}
    assert len(children) == 3
    await app.delete_thread("p")
    for thread in children | {"p"}:
        assert await store.load_latest(thread) is None, thread
