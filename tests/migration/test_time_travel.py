"""Breakpoints and time travel: pause before `book`, go on, read the history, edit the
checkpoint before `book` and run again from it. Ported word for word (each LangGraph
call by its name in docs/langgraph.md; the history's positions by the translation
`get_state_history`'s error names) and in this engine's idiom."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    Command,
    CompiledGraph,
    MemoryCheckpointStore,
    StateGraph,
    ThreadSuspended,
    append,
)

from .conftest import as_langgraph_positions, recorded


class Trip(BaseModel):
    city: str = ""
    steps: Annotated[list[str], append] = []


async def plan(state: Trip) -> dict[str, Any]:
    return {"steps": [f"plan {state.city}"]}


async def book(state: Trip) -> dict[str, Any]:
    return {"steps": [f"book {state.city}"]}


async def confirm(state: Trip) -> dict[str, Any]:
    return {"steps": ["confirm"]}


def trip() -> CompiledGraph[Trip]:
    builder = StateGraph(Trip)
    builder.add_node("plan", plan).add_node("book", book).add_node("confirm", confirm)
    builder.set_entry_point("plan")
    builder.add_edge("plan", "book").add_edge("book", "confirm")
    builder.set_finish_point("confirm")
    return builder.compile(store=MemoryCheckpointStore(), interrupt_before=["book"])


async def test_time_travel_word_for_word() -> None:
    """`invoke(None)` at the pause names `resume(token, ...)`; `get_state_history`
    names `history` with the translation of positions (no input checkpoint, a pause of
    its own), which picks LangGraph's checkpoint by the tutorial's index;
    `update_state(past) + invoke(None)` is one `run(Command(update=...),
    checkpoint_id=past)`: LangGraph's states."""
    want = recorded("time_travel")
    app = trip()
    paused = await app.run({"city": "Oslo", "steps": []}, thread_id="trip")
    assert paused.state.model_dump() == want["paused"]
    snapshot = await app.get_state("trip")
    assert snapshot is not None and [snapshot.next] == want["next"]  # a str, not a tuple
    with pytest.raises(ThreadSuspended, match=r"call resume\(token, value\)") as waiting:
        await app.run(None, thread_id="trip")  # invoke(None, config)
    done = await app.resume(waiting.value.token, None)
    assert done.state.model_dump() == want["done"]
    with pytest.raises(AttributeError, match=r"all_states\[-k\] is states\[-k \+ 1\]"):
        app.get_state_history  # type: ignore[attr-defined]  # noqa: B018
    states = as_langgraph_positions([s async for s in app.history("trip")])
    nexts = [[s.next] if s.next else [] for s in states]
    assert nexts == want["history_next"][:-1]  # all but LangGraph's input checkpoint
    before_book = states[-3 + 1]  # the tutorial's history[-3]
    assert [before_book.next] == want["picked"]["next"]
    assert before_book.state.model_dump() == want["picked"]["values"]
    again = await app.run(
        Command(update={"city": "Rome"}), thread_id="trip", checkpoint_id=before_book.checkpoint_id
    )
    assert again.state.model_dump() == want["again"]


async def test_time_travel_idiomatic() -> None:
    """The pause's token resumes it; the pause's checkpoint id (on the result) is
    where to edit and go on from, not a position in the history: the same states."""
    want = recorded("time_travel")
    app = trip()
    paused = await app.run({"city": "Oslo"}, thread_id="trip")
    assert paused.suspension is not None and paused.suspension.node == "book"
    done = await app.resume(paused.suspension.token, None)
    again = await app.run(
        Command(update={"city": "Rome"}), thread_id="trip", checkpoint_id=paused.checkpoint_id
    )
    got = [paused.state.model_dump(), done.state.model_dump(), again.state.model_dump()]
    assert got == [want["paused"], want["done"], want["again"]]
