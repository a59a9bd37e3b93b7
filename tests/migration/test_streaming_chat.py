"""Streaming a three-node chain (updates and values) and a multi-turn chat with a
message edited by id: ported word for word and in this engine's idiom."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, MemoryCheckpointStore, StateGraph, append
from research_fsm.prebuilt import MessagesState

from .conftest import recorded


class Count(BaseModel):
    n: int = 0
    seen: Annotated[list[str], append] = []


def step(name: str) -> Any:
    async def node(state: Count) -> dict[str, Any]:
        return {"n": state.n + 1, "seen": [name]}

    return node


def chain() -> Any:
    builder = StateGraph(Count)
    for name in ("one", "two", "three"):
        builder.add_node(name, step(name))
    builder.add_edge(START, "one").add_edge("one", "two").add_edge("two", "three")
    builder.add_edge("three", END)
    return builder.compile()


async def test_streaming_word_for_word() -> None:
    """`stream_mode="updates"` / `"values"` as `mode=`: LangGraph's chunks, the input
    state first in "values"."""
    app = chain()
    async with app.stream({"n": 0, "seen": []}, thread_id="u", mode="updates") as chunks:
        updates = [c async for c in chunks]
    async with app.stream({"n": 0, "seen": []}, thread_id="v", mode="values") as chunks:
        values = [c.model_dump() async for c in chunks]
    assert {"updates": updates, "values": values} == recorded("streaming")


async def test_streaming_idiomatic() -> None:
    """Both modes in one stream, as `(mode, chunk)` pairs: the same chunks in order."""
    async with chain().stream({}, thread_id="t", mode=["updates", "values"]) as chunks:
        pairs = [(mode, chunk) async for mode, chunk in chunks]
    got = {
        "updates": [c for m, c in pairs if m == "updates"],
        "values": [c.model_dump() for m, c in pairs if m == "values"],
    }
    assert got == recorded("streaming")


async def bot(state: MessagesState) -> dict[str, Any]:
    heard = state.messages[-1]["content"]
    return {"messages": [{"type": "ai", "content": f"you said {heard!r} ({len(state.messages)})"}]}


def shown(message: dict[str, Any]) -> list[str]:
    kind = message.get("type") or {"user": "human", "assistant": "ai"}[message["role"]]
    return [kind, message["content"]]


async def test_chat_word_for_word() -> None:
    """Three turns on one thread, then the first message replaced by id with
    `update_state`: LangGraph's messages (the replaced one in place)."""
    builder = StateGraph(MessagesState).add_node("bot", bot)
    builder.add_edge(START, "bot").add_edge("bot", END)
    app = builder.compile(store=MemoryCheckpointStore())
    for said in ["hello", "how are you", "bye"]:
        await app.run({"messages": [{"role": "user", "content": said}]}, thread_id="chat")
    snapshot = await app.get_state("chat")
    assert snapshot is not None
    first = snapshot.state.messages[0]
    await app.update_state(
        "chat", {"messages": [{"role": "user", "content": "HELLO", "id": first["id"]}]}
    )
    final = await app.get_state("chat")
    assert final is not None
    assert {"messages": [shown(m) for m in final.state.messages]} == recorded("chat")


async def test_chat_idiomatic() -> None:
    """The same with plain strings as user turns (a str is a user message)."""
    builder = StateGraph(MessagesState).add_node("bot", bot)
    builder.add_edge(START, "bot").add_edge("bot", END)
    app = builder.compile(store=MemoryCheckpointStore())
    results = [
        await app.run({"messages": said}, thread_id="c") for said in ["hello", "how are you", "bye"]
    ]
    first = results[-1].state.messages[0]
    await app.update_state("c", {"messages": {**first, "content": "HELLO"}})
    final = await app.get_state("c")
    assert final is not None
    assert {"messages": [shown(m) for m in final.state.messages]} == recorded("chat")
