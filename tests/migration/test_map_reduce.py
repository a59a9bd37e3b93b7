"""Map-reduce with ``Send``: ported word for word (``add_conditional_edges`` and an edge
into the reducer) and in this engine's idiom (``add_router(..., join=...)``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, NodeContext, Send, StateGraph, append

from .conftest import recorded


class Topics(BaseModel):
    topic: str = ""
    subjects: list[str] = []
    notes: Annotated[list[str], append] = []
    summary: list[str] = []


async def map_reduce(idiomatic: bool) -> dict[str, Any]:
    calls: list[str] = []

    async def split(state: Topics) -> dict[str, Any]:
        return {"subjects": [f"{state.topic} {n}" for n in (1, 2, 3)]}

    def each(state: Topics) -> list[Send]:
        return [Send("note", {"subject": s}) for s in state.subjects]

    async def note(state: Topics, ctx: NodeContext) -> dict[str, Any]:
        calls.append("note")
        return {"notes": [f"note on {ctx.item['subject']}"]}

    async def gather(state: Topics) -> dict[str, Any]:
        calls.append("gather")
        return {"summary": [f"summary of {len(state.notes)} notes"]}

    builder = StateGraph(Topics)
    builder.add_node("split", split).add_node("note", note).add_node("gather", gather)
    builder.add_edge(START, "split")
    if idiomatic:
        builder.add_router("split", each, ["note"], join="gather")
    else:
        builder.add_conditional_edges("split", each, ["note"])
    builder.add_edge("note", "gather")
    builder.add_edge("gather", END)
    final = await builder.compile().run({"topic": "tea"}, thread_id="t")
    state = final.state.model_dump()
    return {"final": {**state, "notes": sorted(state["notes"])}, "calls": calls}


async def test_map_reduce_word_for_word() -> None:
    """`gather` runs once after the three `note` branches, as in LangGraph (it used
    to run once per branch, silently)."""
    assert await map_reduce(idiomatic=False) == recorded("map_reduce")


async def test_map_reduce_idiomatic() -> None:
    """`join="gather"` says where the branches meet: the same result."""
    assert await map_reduce(idiomatic=True) == recorded("map_reduce")
