"""A ReAct loop with two tools, one failing: ported word for word (LangGraph's dict
messages, ``ToolNode``, ``tools_condition``, ``MessagesState`` from
``research_fsm.prebuilt``) and in this engine's idiom (Anthropic-shaped messages)."""

from __future__ import annotations

from typing import Any

from research_fsm.engine import END, START, StateGraph
from research_fsm.prebuilt import MessagesState, ToolNode, tools_condition

from .conftest import recorded


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


TURNS: list[dict[str, Any]] = [
    {
        "text": "",
        "calls": [("c1", "multiply", {"a": 6, "b": 7}), ("c2", "divide", {"a": 1, "b": 0})],
    },
    {"text": "", "calls": [("c3", "divide", {"a": 42, "b": 4})]},
    {"text": "6 x 7 = 42, and 42 / 4 = 10.5; 1 / 0 has no value."},
]


def _assistant_turns(state: MessagesState) -> int:
    return sum(1 for m in state.messages if m.get("type") == "ai" or m.get("role") == "assistant")


async def model_langgraph_shape(state: MessagesState) -> dict[str, Any]:
    turn = TURNS[_assistant_turns(state)]
    calls = [{"id": i, "name": n, "args": a} for i, n, a in turn.get("calls", [])]
    return {"messages": [{"type": "ai", "content": turn["text"], "tool_calls": calls}]}


async def model_anthropic_shape(state: MessagesState) -> dict[str, Any]:
    turn = TURNS[_assistant_turns(state)]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn["text"]}] if turn["text"] else []
    blocks += [
        {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in turn.get("calls", [])
    ]
    return {"messages": [{"role": "assistant", "content": blocks}]}


def shown_langgraph(message: dict[str, Any]) -> dict[str, Any]:
    shown = {"type": message["type"], "content": message["content"]}
    if message.get("tool_calls"):
        shown["calls"] = [c["name"] for c in message["tool_calls"]]
    if message["type"] == "tool":
        shown["status"] = message.get("status", "success")
        if shown["status"] == "error":
            shown["content"] = "error"
    return shown


def shown_anthropic(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One Anthropic-shaped message as LangGraph's messages it stands for (a user
    message of tool results is a tool message per result)."""
    content = message["content"]
    if message["role"] == "user" and isinstance(content, list):
        return [
            {
                "type": "tool",
                "content": "error" if r.get("is_error") else r["content"],
                "status": "error" if r.get("is_error") else "success",
            }
            for r in content
        ]
    if message["role"] == "user":
        return [{"type": "human", "content": content}]
    text = "".join(b["text"] for b in content if b["type"] == "text")
    calls = [b["name"] for b in content if b["type"] == "tool_use"]
    return [{"type": "ai", "content": text, **({"calls": calls} if calls else {})}]


async def react(model: Any, question: Any, idiomatic: bool) -> list[dict[str, Any]]:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", model)
    builder.add_node("tools", ToolNode([multiply, divide]))
    builder.add_edge(START, "agent")
    if idiomatic:
        builder.add_router("agent", tools_condition, ["tools", END])
    else:  # the targets from tools_condition's -> Literal["tools", "__end__"]
        builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    final = await builder.compile().run({"messages": [question]}, thread_id="t")
    return final.state.messages


async def test_react_word_for_word() -> None:
    """LangGraph's message dicts through the prebuilt tool node: the same messages,
    the failing call answered as an error, nothing raised."""
    question = ("user", "What is 6 x 7, 1 / 0 and then / 4?")
    messages = await react(model_langgraph_shape, question, idiomatic=False)
    as_langgraph = [
        shown_langgraph({**m, "type": "human"} if m.get("role") == "user" else m) for m in messages
    ]
    assert {"messages": as_langgraph} == recorded("react_tools")


async def test_react_idiomatic() -> None:
    """Anthropic-shaped messages (what `create_react_agent` keeps): the same turns."""
    messages = await react(model_anthropic_shape, "What is 6 x 7, 1 / 0 and then / 4?", True)
    shown = [each for m in messages for each in shown_anthropic(m)]
    assert {"messages": shown} == recorded("react_tools")
