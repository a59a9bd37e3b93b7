"""One call to edit a thread (a past checkpoint, or a pause) and go on from there
(issue 41, item 4): ``run(Command(update=...), checkpoint_id=...)``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Command,
    InvalidUpdate,
    StateGraph,
    append,
)


class Draft(BaseModel):
    topic: str = ""
    log: Annotated[list[str], append] = []


async def outline(state: Draft) -> dict[str, Any]:
    return {"log": [f"outline {state.topic}"]}


async def write(state: Draft) -> dict[str, Any]:
    return {"log": [f"write {state.topic}"]}


def app(store: CheckpointStore, **kwargs: Any) -> Any:
    graph = StateGraph(Draft).add_node("outline", outline).add_node("write", write)
    graph.add_edge(START, "outline").add_edge("outline", "write").add_edge("write", END)
    return graph.compile(store=store, **kwargs)


async def test_editing_a_past_checkpoint_goes_on_on_a_new_line(store: CheckpointStore) -> None:
    """`run(Command(update=...), checkpoint_id=past)` edits the checkpoint before
    `write` and runs `write` on the edit; the old line's snapshots are unchanged."""
    graph = app(store)
    first = await graph.run({"topic": "tea"}, thread_id="t")
    old = [s async for s in graph.history("t")]
    before_write = next(s for s in old if s.next == "write")
    again = await graph.run(
        Command(update={"topic": "coffee"}), thread_id="t", checkpoint_id=before_write.checkpoint_id
    )
    assert again.status == "completed"
    assert again.state.log == ["outline tea", "write coffee"]
    assert again.path == ["write"]
    # The old line is untouched: each of its checkpoints reads as it did.
    for snapshot in old:
        reread = await graph.get_state("t", checkpoint_id=snapshot.checkpoint_id)
        assert reread is not None and reread.state == snapshot.state
    assert first.state.log == ["outline tea", "write tea"]
    latest = await graph.get_state("t")
    assert latest is not None and latest.state.topic == "coffee"


async def test_editing_at_a_breakpoint_goes_past_it(store: CheckpointStore) -> None:
    """At a pause before `write`, `run(Command(update=...))` edits and runs `write`."""
    graph = app(store, interrupt_before=["write"])
    paused = await graph.run({"topic": "tea"}, thread_id="t")
    assert paused.status == "suspended"
    done = await graph.run(Command(update={"topic": "milk"}), thread_id="t")
    assert (done.status, done.path, done.state.log) == (
        "completed",
        ["write"],
        ["outline tea", "write milk"],
    )


async def test_a_goto_in_a_runs_command_names_the_other_ways(store: CheckpointStore) -> None:
    """`run(Command(goto=...))` is refused naming `update_state(..., as_node=...)`."""
    graph = app(store)
    await graph.run({"topic": "tea"}, thread_id="t")
    with pytest.raises(InvalidUpdate, match=r"takes update= only.*as_node="):
        await graph.run(Command(goto="write"), thread_id="t")
