"""``FakeAnthropic``: a loopback server speaking the Anthropic Messages API.

``POST /v1/messages`` (also ``?beta=true``) is scripted; each request pops one reply::

    server.enqueue(text("Hello there"), tool_use("verdict", {"ok": True}), error(429, "rate_limit_error"))

A message reply is sent as a JSON message object, or, when the request body has
``"stream": true``, as server-sent events in the order the API uses::

    message_start, ping,
    (content_block_start, content_block_delta*, content_block_stop) per block,
    message_delta (stop_reason, usage.output_tokens), message_stop

Text is streamed word by word (``text_delta``), tool input as ``input_json_delta``
pieces. ``stream_error`` sends ``event: error`` in the middle of a stream.
``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}`` (a word count);
other paths get a 404 ``not_found_error``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._http import (
    Exchange,
    JsonReply,
    LoopbackServer,
    RecordedRequest,
    Reply,
    chunks,
    delay,
    disconnect,
    raw,
)

__all__ = [
    "ERROR_TYPES",
    "FakeAnthropic",
    "MessageReply",
    "StreamErrorReply",
    "cut_text",
    "cut_tool_use",
    "delay",
    "disconnect",
    "error",
    "json_text",
    "message",
    "raw",
    "schema_problems",
    "stream_error",
    "text",
    "tool_use",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
DEFAULT_MODEL = "claude-test"

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""The API's error type for each status (used when ``error`` gets no type)."""

_WORD_PIECES = re.compile(r"(?<=\s)(?=\S)")


def _new_id(prefix: str) -> str:
    return f"{prefix}_01{uuid.uuid4().hex[:22]}"


def _words(text: str) -> list[str]:
    """``text`` split before each word; the pieces concatenate back to ``text``."""
    return [piece for piece in _WORD_PIECES.split(text) if piece]


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _wants_stream(request: RecordedRequest) -> bool:
    return request.body.get("stream") is True


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


@dataclass(frozen=True)
class MessageReply(Reply):
    """An assistant message: JSON, or SSE events when the request streams."""

    content: tuple[Mapping[str, Any], ...]
    """Content blocks (``{"type": "text", ...}`` / ``{"type": "tool_use", ...}``)."""
    stop_reason: str = "end_turn"
    input_tokens: int = 10
    output_tokens: int = 10
    stream_delay: float = 0.0
    """Seconds to wait between streamed events."""

    def message(self, request: RecordedRequest, message_id: str) -> dict[str, Any]:
        """The complete message object for ``request``."""
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": str(request.body.get("model") or DEFAULT_MODEL),
            "content": [dict(block) for block in self.content],
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": _usage(self.input_tokens, self.output_tokens),
        }

    def events(self, request: RecordedRequest, message_id: str) -> Iterator[bytes]:
        """The SSE events of the message, in the API's order."""
        start = self.message(request, message_id) | {
            "content": [],
            "stop_reason": None,
            "usage": _usage(self.input_tokens, min(1, self.output_tokens)),
        }
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for index, block in enumerate(self.content):
            yield from _block_events(index, block)
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": self.output_tokens},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})

    def respond(self, exchange: Exchange) -> None:
        """JSON for a plain request, SSE for ``"stream": true``."""
        message_id = _new_id("msg")
        headers = {"request-id": _new_id("req")}
        if not _wants_stream(exchange.request):
            exchange.send_json(200, self.message(exchange.request, message_id), headers=headers)
            return
        exchange.begin_stream(headers=headers)
        for event in self.events(exchange.request, message_id):
            if self.stream_delay and not exchange.sleep(self.stream_delay):
                exchange.abort()
                return
            exchange.write(event)
        exchange.end_stream()


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[bytes]:
    kind = block.get("type")
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _words(str(block["text"]))]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        encoded = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in chunks(encoded, 12)]
    else:
        start, deltas = dict(block), []
    yield _sse(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield _sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})


@dataclass(frozen=True)
class StreamErrorReply(Reply):
    """A stream that starts, optionally writes some text, then sends ``event: error``."""

    error_type: str
    message: str
    partial_text: str = ""
    input_tokens: int = 10

    def respond(self, exchange: Exchange) -> None:
        """Start the SSE stream and break it with an error event."""
        if not _wants_stream(exchange.request):
            _error_json(529, self.error_type, self.message, None).respond(exchange)
            return
        exchange.begin_stream(headers={"request-id": _new_id("req")})
        begun = MessageReply((), input_tokens=self.input_tokens, output_tokens=1)
        exchange.write(next(iter(begun.events(exchange.request, _new_id("msg")))))
        if self.partial_text:
            for event in _block_events(0, {"type": "text", "text": self.partial_text}):
                if b"content_block_stop" in event:
                    break
                exchange.write(event)
        payload = {"type": "error", "error": {"type": self.error_type, "message": self.message}}
        exchange.write(_sse("error", payload))
        exchange.end_stream()


def _error_json(status: int, error_type: str, msg: str, retry_after: float | None) -> JsonReply:
    headers = {"request-id": _new_id("req")}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    payload = {
        "type": "error",
        "error": {"type": error_type, "message": msg},
        "request_id": headers["request-id"],
    }
    return JsonReply(status, payload, headers)


# -- reply constructors ---------------------------------------------------------


def message(
    content: list[Mapping[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 10,
    output_tokens: int = 10,
    stream_delay: float = 0.0,
) -> MessageReply:
    """A message with these content blocks (e.g. text followed by a tool use)."""
    return MessageReply(tuple(content), stop_reason, input_tokens, output_tokens, stream_delay)


def text(
    text: str,
    *,
    input_tokens: int = 10,
    output_tokens: int | None = None,
    stop_reason: str = "end_turn",
    stream_delay: float = 0.0,
) -> MessageReply:
    """A text answer; ``output_tokens`` defaults to the number of words."""
    tokens = len(text.split()) if output_tokens is None else output_tokens
    block = {"type": "text", "text": text}
    return MessageReply((block,), stop_reason, input_tokens, tokens, stream_delay)


def tool_use(
    name: str,
    input: dict[str, Any],
    *,
    input_tokens: int = 10,
    output_tokens: int = 20,
    id: str | None = None,
    stream_delay: float = 0.0,
    stop_reason: str = "tool_use",
) -> MessageReply:
    """A ``tool_use`` block calling ``name`` with ``input``; stop reason ``tool_use``
    (``"max_tokens"``: a tool call cut at the output limit, see ``cut_tool_use``)."""
    block = {"type": "tool_use", "id": id or _new_id("toolu"), "name": name, "input": input}
    return MessageReply((block,), stop_reason, input_tokens, output_tokens, stream_delay)


def cut_tool_use(name: str, input: dict[str, Any], *, output_tokens: int = 1024) -> MessageReply:
    """A tool call cut at the output limit: ``input`` is what was written before the cut
    (e.g. ``{}``), the stop reason is ``max_tokens`` and the output tokens are the limit."""
    return tool_use(name, input, output_tokens=output_tokens, stop_reason="max_tokens")


def cut_text(written: str, *, output_tokens: int = 1024) -> MessageReply:
    """A text answer cut at the output limit (stop reason ``max_tokens``)."""
    return text(written, output_tokens=output_tokens, stop_reason="max_tokens")


def schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """What a tool's input schema sent to Claude lacks: a description on every property
    (nested models included, through ``$defs``) and ``maxItems`` on every array."""
    problems: list[str] = []
    defs = schema.get("$defs", {})

    def walk(node: Mapping[str, Any], where: str) -> None:
        ref = node.get("$ref")
        if isinstance(ref, str):
            walk(defs[ref.rsplit("/", 1)[-1]], where)
            return
        for option in node.get("anyOf", []):
            walk(option, where)
        if node.get("type") == "array":
            if "maxItems" not in node:
                problems.append(f"{where}: an array without maxItems")
            walk(node.get("items", {}), f"{where}[]")
        for name, prop in node.get("properties", {}).items():
            if not prop.get("description"):
                problems.append(f"{where}.{name}: no description")
            walk(prop, f"{where}.{name}")

    walk(schema, "$")
    return problems


def json_text(
    obj: object, *, input_tokens: int = 10, output_tokens: int | None = None
) -> MessageReply:
    """A text answer whose text is ``json.dumps(obj)`` (the JSON-output path)."""
    return text(json.dumps(obj), input_tokens=input_tokens, output_tokens=output_tokens)


def error(
    status: int,
    type: str | None = None,
    message: str = "fake error",
    *,
    retry_after: float | None = None,
) -> JsonReply:
    """An API error: ``{"type": "error", "error": {"type", "message"}}`` with ``status``;
    ``type`` defaults to the API's type for the status; ``retry_after`` sets the header."""
    error_type = type or ERROR_TYPES.get(status, "api_error")
    return _error_json(status, error_type, message, retry_after)


def stream_error(
    type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    partial_text: str = "",
) -> StreamErrorReply:
    """For a streaming request: ``message_start`` (and ``partial_text`` deltas), then
    ``event: error``. A non-streaming request gets HTTP 529 with the same error."""
    return StreamErrorReply(type, message, partial_text)


# -- the server -------------------------------------------------------------------


def _count_tokens(body: Mapping[str, Any]) -> int:
    """A rough token count: the words of the system prompt and the messages."""
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "content", "system"):
                if key in value:
                    walk(value[key])

    walk(body.get("system"))
    walk(body.get("messages"))
    return max(1, sum(len(t.split()) for t in texts))


class FakeAnthropic(LoopbackServer):
    """The Messages API on 127.0.0.1 (pass ``url`` as ``base_url``/``ANTHROPIC_BASE_URL``)."""

    scripted_paths = frozenset({MESSAGES_PATH})

    def __init__(self, default: Reply | None = None) -> None:
        """A stopped server; the empty script answers ``default`` (``text("ok")``)."""
        super().__init__(default if default is not None else text("ok"))

    def route(self, request: RecordedRequest) -> Reply:
        """``count_tokens`` answers a word count; anything else is a 404."""
        if request.path == COUNT_TOKENS_PATH:
            return JsonReply(200, {"input_tokens": _count_tokens(request.body)})
        return error(404, "not_found_error", f"Not found: {request.method} {request.path}")

    def failure(self, message: str) -> Reply:
        """An ``api_error`` 500 when an ``auto`` function fails."""
        return error(500, "api_error", message)

    def schema_problems(self) -> list[str]:
        """``schema_problems`` of every tool schema the recorded requests sent."""
        problems: list[str] = []
        for request in self.requests:
            for tool in request.body.get("tools") or []:
                name = tool.get("description", tool.get("name"))
                problems += [f"{name}: {p}" for p in schema_problems(tool["input_schema"])]
        return sorted(set(problems))
