"""``create_react_agent``: a model node and a ``ToolNode`` in a loop, on the
project's Anthropic client (anything with its ``converse`` method)."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    GraphValidationError,
    StateGraph,
)
from ._messages import Message, MessagesState, to_anthropic
from ._tools import Tool, ToolNode, tools_condition

__all__ = ["Conversing", "create_react_agent"]


class Conversing(Protocol):
    """What the agent needs of a model: ``research_fsm.llm.AnthropicLLM.converse``."""

    async def converse(
        self,
        *,
        agent: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], Any]: ...


def create_react_agent(
    model: Conversing,
    tools: Sequence[Callable[..., Any] | Tool],
    *,
    prompt: str = "",
    agent: str = "react",
    store: CheckpointStore | None = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    step_limit: int = 50,
) -> CompiledGraph[MessagesState]:
    """A ReAct agent over ``MessagesState``: node ``agent`` asks ``model`` (with the
    tools), ``tools_condition`` routes to node ``tools`` while it calls some, and
    ``tools`` (a ``ToolNode``) answers them, back to ``agent``. ``prompt`` goes
    before the conversation's own system messages; ``agent`` names the model's
    budget and model (``AnthropicLLM.model_for``). ``interrupt_before=["tools"]``
    pauses before each tool run (edit the call with ``resume(token,
    Command(update={"messages": [edited]}))``: same id, replaced)."""
    converse = getattr(model, "converse", None)
    if not inspect.iscoroutinefunction(converse):
        shown = repr(model) if isinstance(model, str) else type(model).__name__
        raise GraphValidationError(
            [
                f"create_react_agent: the model {shown:.60} is not one: a model is an object "
                "with `async def converse(*, agent, system, messages, tools=None)`, such as "
                "research_fsm.llm.AnthropicLLM(...) (a model name string like "
                "'anthropic:claude-...' is LangGraph's; a scripted one for tests is a small "
                "class)"
            ]
        )
    node = ToolNode(tools)
    specs = node.specs()

    async def call_model(state: MessagesState) -> dict[str, list[Message]]:
        system, messages = to_anthropic(state.messages)
        system = "\n\n".join(part for part in (prompt, system) if part)
        reply, _usage = await model.converse(
            agent=agent, system=system, messages=messages, tools=specs
        )
        message = {"role": "assistant", "content": reply["content"], "id": uuid.uuid4().hex}
        return {"messages": [message]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model).add_node("tools", node)
    graph.add_edge(START, "agent").add_edge("tools", "agent")
    graph.add_router("agent", tools_condition, ["tools", END])
    return graph.compile(
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        step_limit=step_limit,
    )
