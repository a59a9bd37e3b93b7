"""research_fsm.prebuilt: the pieces LangGraph agents use, on the engine and nothing
above it: messages merged by id (``add_messages``, ``MessagesState``), a ``ToolNode``,
``tools_condition``, and ``create_react_agent`` on the project's Anthropic client.
Messages are plain dicts in the Anthropic SDK's shape (``role``/``content``) or
LangGraph's (``type``/``content``); see docs/langgraph.md."""

from ._messages import (
    REMOVE_ALL_MESSAGES,
    Message,
    MessagesState,
    add_messages,
    last_assistant,
    remove_message,
    to_anthropic,
    tool_calls,
)
from ._react import Conversing, create_react_agent
from ._tools import Tool, ToolNode, tools_condition

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "Conversing",
    "Message",
    "MessagesState",
    "Tool",
    "ToolNode",
    "add_messages",
    "create_react_agent",
    "last_assistant",
    "remove_message",
    "to_anthropic",
    "tool_calls",
    "tools_condition",
]
