"""Messages as plain dicts, merged by id: the ``add_messages`` reducer, ``MessagesState``,
and the conversions to the Anthropic Messages API's shape.

Two dict shapes are taken: the Anthropic SDK's (``{"role": "user" | "assistant",
"content": str | blocks}``) and LangGraph's (``{"type": "human" | "ai" | "system" |
"tool", "content": ...}``, an ``ai`` message's ``tool_calls``, a ``tool`` message's
``tool_call_id``), as are a str (a user message) and a ``(role, content)`` pair. What
``add_messages`` returns has one shape, whatever came in: every message carries both
keys, ``type`` (LangGraph's: human, ai, system, tool) and ``role`` (user, assistant,
system, tool), and an ``id``. ``to_anthropic`` turns a list into the Messages API's
request (system text apart, tool messages as ``tool_result`` blocks). No LangChain needed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "Message",
    "MessagesState",
    "add_messages",
    "last_assistant",
    "remove_message",
    "to_anthropic",
    "tool_calls",
]

Message = dict[str, Any]
"""A message: a dict with ``content`` and ``role`` (Anthropic's) or ``type`` (LangGraph's);
the ones ``add_messages`` returns have both, and an ``id``."""

REMOVE_ALL_MESSAGES = "__remove_all__"
"""``remove_message(REMOVE_ALL_MESSAGES)`` clears the list; messages after it stay."""

_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}
_TYPE_OF_ROLE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
_ROLE_OF_TYPE = {kind: role for role, kind in _TYPE_OF_ROLE.items()}
_KINDS = {**_TYPE_OF_ROLE, **{kind: kind for kind in _ROLE_OF_TYPE}}
"""Every role or type a message may give, to its LangGraph type."""


def remove_message(message_id: str) -> Message:
    """An update that removes the message with ``message_id`` (LangGraph's
    ``RemoveMessage(id=...)`` as a dict)."""
    return {"type": "remove", "id": message_id}


def _message(item: object) -> Message:
    """One message as a new dict in the normal form (``type`` and ``role`` both set,
    agreeing): a dict's other keys kept, a str a user message, a ``(role, content)``
    pair a message of that role; ``ValueError`` otherwise."""
    if isinstance(item, str):
        return {"type": "human", "role": "user", "content": item}
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        role, content = item
        kind = _KINDS.get(role)
        if kind is None:
            raise ValueError(
                f"message ({role!r}, ...): the role must be one of user, assistant, human, "
                "ai, system, tool"
            )
        return {"type": kind, "role": _ROLE_OF_TYPE[kind], "content": content}
    if isinstance(item, Mapping):
        if item.get("type") == "remove":
            if not isinstance(item.get("id"), str):
                raise ValueError(f"a remove message needs the id of the message: {item!r:.80}")
            return dict(item)
        if "role" not in item and "type" not in item:
            raise ValueError(
                f"a message needs `role` (Anthropic: user, assistant) or `type` (LangGraph: "
                f"human, ai, system, tool), got keys {sorted(map(str, item))}"
            )
        if "content" not in item:
            raise ValueError(f"a message needs `content`, got keys {sorted(map(str, item))}")
        kinds = [(key, item[key], _KINDS.get(item[key])) for key in ("type", "role") if key in item]
        for key, given, kind in kinds:
            if kind is None:
                raise ValueError(
                    f"message {key} {given!r}: expected one of human, ai, system, tool "
                    "(type) or user, assistant, system, tool (role)"
                )
        if len({kind for _, _, kind in kinds}) > 1:
            raise ValueError(
                f"message type {item['type']!r} and role {item['role']!r} disagree "
                "(human is user, ai is assistant)"
            )
        kind = kinds[0][2]
        assert kind is not None
        return {**item, "type": kind, "role": _ROLE_OF_TYPE[kind]}
    raise ValueError(
        f"a message is a dict, a str or a (role, content) pair, got {type(item).__name__}"
    )


def add_messages(left: Sequence[object] | None, right: object) -> list[Message]:
    """Merge messages by id, as LangGraph's ``add_messages``: a message whose id is
    new is appended, one whose id is known replaces that message in place, and
    ``remove_message(id)`` removes it (``ValueError`` when no message has the id).
    ``right`` is one message or a list; messages without an ``id`` get one.

    Every message returned has one shape: ``type`` (human, ai, system, tool) and
    ``role`` (user, assistant, system, tool) both set, whichever was given (a str or
    a ``("user", text)`` pair is ``{"type": "human", "role": "user", ...}``), so code
    reading LangGraph's ``m["type"]`` and code reading ``m["role"]`` both work."""
    merged = [_message(m) for m in left or ()]
    items = right if isinstance(right, list) else [right]
    updates = [_message(m) for m in items]
    for message in (*merged, *updates):
        if "id" not in message or message["id"] is None:
            message["id"] = uuid.uuid4().hex
    cleared = [
        i
        for i, m in enumerate(updates)
        if m.get("type") == "remove" and m["id"] == REMOVE_ALL_MESSAGES
    ]
    if cleared:
        merged, updates = [], updates[cleared[-1] + 1 :]
    where = {m["id"]: i for i, m in enumerate(merged)}
    removed: set[str] = set()
    for message in updates:
        known = where.get(message["id"])
        if message.get("type") == "remove":
            if known is None or message["id"] in removed:
                raise ValueError(f"cannot remove message {message['id']!r}: no message has that id")
            removed.add(message["id"])
        elif known is not None:
            merged[known] = message
            removed.discard(message["id"])
        else:
            where[message["id"]] = len(merged)
            merged.append(message)
    return [m for m in merged if m["id"] not in removed]


class MessagesState(BaseModel):
    """A state with a conversation: ``messages`` merged by ``add_messages`` (each
    message with ``type``, ``role``, ``content`` and ``id``). Subclass it to add
    fields, as LangGraph's ``MessagesState``."""

    messages: Annotated[list[Message], add_messages] = []


def _is_assistant(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "assistant" or message.get("type") == "ai"


def last_assistant(messages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The last message if it is the assistant's, else ``None``."""
    if messages and _is_assistant(messages[-1]):
        return messages[-1]
    return None


def tool_calls(message: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(id, name, input)`` of each tool call in an assistant message: the
    ``tool_use`` blocks of its content, or its LangGraph ``tool_calls``."""
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {}  # one per id: a message
    content = message.get("content")  # may hold both shapes of the same call
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                call_id = str(block["id"])
                calls[call_id] = (call_id, str(block["name"]), dict(block.get("input", {})))
    for call in message.get("tool_calls") or ():
        call_id = str(call["id"])
        calls.setdefault(call_id, (call_id, str(call["name"]), dict(call.get("args", {}))))
    return list(calls.values())


def _api_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message in the Messages API's shape (ids and other keys left out)."""
    content = message.get("content", "")
    kind = _KINDS.get(message.get("type", message.get("role")))
    if kind == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message["tool_call_id"],
            "content": content if isinstance(content, (str, list)) else str(content),
        }
        if message.get("status") == "error":
            result["is_error"] = True
        return {"role": "user", "content": [result]}
    if kind == "ai" and message.get("tool_calls"):
        blocks: list[Any] = _blocks(content) if content else []
        shown = {b.get("id") for b in blocks if isinstance(b, Mapping)}
        blocks += [
            {"type": "tool_use", "id": i, "name": n, "input": args}
            for i, n, args in tool_calls({"tool_calls": message["tool_calls"]})
            if i not in shown
        ]
        return {"role": "assistant", "content": blocks}
    if kind is None or kind not in _ROLES:
        shown = message.get("type", message.get("role"))
        raise ValueError(f"message type {shown!r}: expected human, ai, system or tool")
    return {"role": _ROLES[kind], "content": content}


def _blocks(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else [{"type": "text", "text": content}]


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The system text (every system message, in order) and the other messages in
    the Messages API's shape, one after another of the same role merged into one."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("type") == "system" or message.get("role") == "system":
            content = message.get("content", "")
            system.append(content if isinstance(content, str) else str(content))
            continue
        api = _api_message(message)
        if out and out[-1]["role"] == api["role"]:
            out[-1] = {
                "role": api["role"],
                "content": _blocks(out[-1]["content"]) + _blocks(api["content"]),
            }
        else:
            out.append(api)
    return "\n\n".join(system), out
