"""``ToolNode`` runs the tool calls of the last assistant message; ``tools_condition``
routes to it while there are some."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ValidationError, create_model

from ..engine import GraphValidationError, NodeContext
from ._messages import Message, last_assistant, tool_calls

__all__ = ["Tool", "ToolNode", "tools_condition"]


class Tool:
    """A function the model may call: its name, the first paragraph of its docstring
    as the description, and its parameters as the input schema."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        name = getattr(fn, "__name__", None)
        if not callable(fn) or not isinstance(name, str) or name == "<lambda>":
            raise GraphValidationError(
                [f"a tool is a named function (def name(...)), got {fn!r:.60}"]
            )
        self.fn = fn
        self.name = name
        doc = inspect.getdoc(fn) or ""
        self.description = doc.split("\n\n")[0].replace("\n", " ") or name
        try:
            hints = get_type_hints(fn)
        except Exception:
            hints = {}
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (hints.get(param.name, Any), default)
        self.model: type[BaseModel] = create_model(f"{name}_input", **fields)

    def spec(self) -> dict[str, Any]:
        """The tool as the Messages API takes it."""
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        return {"name": self.name, "description": self.description, "input_schema": schema}

    async def __call__(self, arguments: dict[str, Any]) -> Any:
        values = self.model.model_validate(arguments)
        kwargs = {name: getattr(values, name) for name in type(values).model_fields}
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        return await asyncio.to_thread(self.fn, **kwargs)


def _text(value: Any) -> str | list[Any]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and "type" in v for v in value):
        return value  # content blocks
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return str(value)


class ToolNode:
    """A node that runs every tool call of the last assistant message at once and
    answers each: calls given as ``tool_use`` content blocks (Anthropic's) get one
    user message of ``tool_result`` blocks, calls given as ``tool_calls``
    (LangGraph's) a ``tool`` message per call, with ``status`` ``"success"`` or
    ``"error"`` as LangGraph's. A tool that raises (or an unknown tool, or arguments
    that do not fit) is answered with its error (``is_error`` / ``status="error"``),
    never raised into the run."""

    def __init__(self, tools: Sequence[Callable[..., Any] | Tool], *, key: str = "messages"):
        self.tools = {t.name: t for t in (t if isinstance(t, Tool) else Tool(t) for t in tools)}
        if not self.tools:
            raise GraphValidationError(["ToolNode needs at least one tool"])
        self.key = key

    def specs(self) -> list[dict[str, Any]]:
        """Every tool as the Messages API takes it."""
        return [tool.spec() for tool in self.tools.values()]

    async def _one(self, name: str, arguments: dict[str, Any]) -> tuple[Any, bool]:
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools)
            return f"Error: there is no tool `{name}`; the tools are: {known}", True
        try:
            return _text(await tool(arguments)), False
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return f"Error: the arguments of `{name}` do not fit: {where}: {first['msg']}", True
        except Exception as exc:
            return f"Error: {type(exc).__name__}: {exc}", True

    async def run(self, state: Any, ctx: NodeContext) -> dict[str, list[Message]]:
        messages = getattr(state, self.key)
        last = last_assistant(messages)
        calls = tool_calls(last) if last is not None else []
        if not calls:
            return {}
        done = await asyncio.gather(*(self._one(name, args) for _, name, args in calls))
        assert last is not None
        if last.get("tool_calls"):  # LangGraph's shape: a tool message each
            return {
                self.key: [
                    {
                        "type": "tool",
                        "role": "tool",
                        "content": content,
                        "tool_call_id": call_id,
                        "name": name,
                        "status": "error" if failed else "success",
                    }
                    for (call_id, name, _), (content, failed) in zip(calls, done, strict=True)
                ]
            }
        blocks = []
        for (call_id, _, _), (content, failed) in zip(calls, done, strict=True):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
            block["content"] = content
            if failed:
                block["is_error"] = True
            blocks.append(block)
        return {self.key: [{"type": "human", "role": "user", "content": blocks}]}


def tools_condition(state: Any, *, key: str = "messages") -> Literal["tools", "__end__"]:
    """``"tools"`` while the last message is the assistant's with tool calls, else
    END: ``add_router("agent", tools_condition, ["tools", END])``, or LangGraph's
    ``add_conditional_edges("agent", tools_condition)`` (the targets from the
    annotation)."""
    messages = state[key] if isinstance(state, dict) else getattr(state, key)
    last = last_assistant(messages)
    return "tools" if last is not None and tool_calls(last) else "__end__"
