"""``LocalLLM``: a loopback stand-in for a local model behind Ollama's or llama.cpp's
Anthropic Messages layer, with the failure modes of small models.

It answers ``POST /v1/messages`` (JSON and SSE) from a *brain*: a function that, given
the request body and the JSON schema asked for (``None`` for a text request), returns
the answer a capable model would give (a dict for a schema, a string for text). The
server then renders that answer the way the configured layer and model would.

The documented differences of the layers (Ollama's "Anthropic compatibility" page;
llama.cpp's ``llama-server`` ``/v1/messages``), reproduced here:

* the API key is accepted and never checked; ``anthropic-version`` is ignored;
* ``usage`` has ``input_tokens`` and ``output_tokens`` only (no prompt-caching fields),
  and the counts are the model tokenizer's, not Claude's (here: characters / 3);
* Ollama ignores ``tool_choice`` (a model may answer a forced tool call with text);
  llama.cpp honours it when the model's template can;
* Ollama has no ``/v1/messages/count_tokens`` (404), llama.cpp has;
* errors come back as an HTTP status with an error body, never as an SSE ``error``
  event; an unknown model is a 404 ``not_found_error`` ("model 'x' not found") on
  Ollama, while llama.cpp serves its one loaded model whatever the name;
* a model without tool support gets HTTP 400 ("... does not support tools") when
  tools are sent;
* reasoning models put a ``thinking`` block (with an empty ``signature``) before
  the answer.

Small-model failure modes (``mode``), applied to every structured request, both to the
forced tool call and to the request for JSON in text (the system prompt holding the
schema between ``<schema>`` tags):

* ``text_for_tool``: the tool call is answered with prose; asked for JSON in text, it
  writes the JSON cleanly;
* ``json_with_prose``: the answer is JSON in a code fence with words after it;
* ``truncated_json``: the JSON stops half-way, the stop reason says it ended;
* ``missing_field``: the required fields are left out (also inside list items);
* ``max_tokens``: the JSON is cut mid-object and the stop reason is ``max_tokens``.

``quirks`` adds odd wire details: ``"stop_reason"`` (an unknown stop reason,
``"stop"``), ``"no_usage"`` (no token counts at all).
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

from ._http import Exchange, JsonReply, LoopbackServer, RecordedRequest, Reply
from .anthropic import _block_events, _sse

__all__ = ["FAILURE_MODES", "Brain", "LocalLLM", "schema_of"]

Brain = Callable[[dict[str, Any], dict[str, Any] | None], Any]
"""``brain(request body, schema or None)``: a dict fitting the schema, or a text."""
Flavour = Literal["ollama", "llamacpp"]
FAILURE_MODES = (
    "text_for_tool",
    "json_with_prose",
    "truncated_json",
    "missing_field",
    "max_tokens",
)
"""The small-model failure modes, each applied to every structured request."""

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_SCHEMA = re.compile(r"<schema>\s*(\{.*\})\s*</schema>", re.S)
_PROSE = "I looked into this carefully. The answer depends on several factors, and overall it seems fine."


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _text_of(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_text_of(item) for item in value)
    if isinstance(value, dict):
        return " ".join(_text_of(value.get(k)) for k in ("text", "content") if k in value)
    return ""


def _tokens(text: str) -> int:
    """A local tokenizer's count: not Claude's (about 3 characters a token)."""
    return max(1, len(text) // 3)


def schema_of(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for: its tool's input schema, or the one in the
    system prompt between ``<schema>`` tags (the request for JSON in text); ``None``
    for a text request."""
    tools = body.get("tools") or []
    if tools:
        return dict(tools[0]["input_schema"])
    found = _SCHEMA.search(_text_of(body.get("system")))
    return json.loads(found.group(1)) if found else None


def _without_required(answer: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``answer`` with the required fields left out, at the top and in list items."""
    defs = schema.get("$defs", {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = node.get("$ref")
        return defs[ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else node

    def strip(value: Any, node: Mapping[str, Any]) -> Any:
        node = resolve(node)
        if isinstance(value, dict):
            required = set(node.get("required", []))
            props = node.get("properties", {})
            return {k: strip(v, props.get(k, {})) for k, v in value.items() if k not in required}
        if isinstance(value, list):
            return [strip(item, node.get("items", {})) for item in value]
        return value

    stripped = strip(copy.deepcopy(answer), schema)
    if stripped == answer:  # nothing required anywhere: drop the first field
        stripped = dict(list(answer.items())[1:])
    return dict(stripped)


class LocalLLM(LoopbackServer):
    """Ollama's (``flavour="ollama"``) or llama.cpp's (``"llamacpp"``) Messages API on
    127.0.0.1; pass ``url`` as ``RESEARCH_FSM_LLM_URL`` or ``base_url``."""

    scripted_paths = frozenset({MESSAGES_PATH})

    def __init__(
        self,
        brain: Brain,
        *,
        flavour: Flavour = "ollama",
        models: tuple[str, ...] = ("qwen3:4b",),
        no_tools: tuple[str, ...] = (),
        mode: str | None = None,
        thinking: bool = True,
        quirks: frozenset[str] = frozenset(),
    ) -> None:
        """A stopped server: ``models`` it has, those of them without tool support,
        the failure ``mode`` of the model (``None``: it answers well), whether it
        thinks aloud, and ``quirks`` of the wire."""
        if mode is not None and mode not in FAILURE_MODES:
            raise ValueError(f"unknown mode {mode!r}; allowed: {', '.join(FAILURE_MODES)}")
        super().__init__(JsonReply(500, {"error": "unreachable"}))
        self.brain = brain
        self.flavour: Flavour = flavour
        self.models = models
        self.no_tools = no_tools
        self.mode = mode
        self.thinking = thinking
        self.quirks = quirks
        self.auto(self._answer)

    # -- routes ------------------------------------------------------------------

    def route(self, request: RecordedRequest) -> Reply:
        """``count_tokens`` on llama.cpp; a 404 on Ollama and for anything else."""
        if request.path == COUNT_TOKENS_PATH and self.flavour == "llamacpp":
            count = _tokens(_text_of(request.body.get("messages")))
            return JsonReply(200, {"input_tokens": count})
        return self._error(404, f"404 page not found: {request.method} {request.path}")

    def failure(self, message: str) -> Reply:
        """An error status (never an SSE error event) when the brain fails."""
        return self._error(500, message)

    def _error(self, status: int, message: str) -> JsonReply:
        if self.flavour == "llamacpp":  # llama-server's OpenAI-style error body
            kind = "not_found_error" if status == 404 else "invalid_request_error"
            if status >= 500:
                kind = "server_error"
            return JsonReply(status, {"error": {"code": status, "message": message, "type": kind}})
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        return JsonReply(status, payload | {"request_id": _new_id("req")})

    # -- answers -----------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> Reply:
        model = str(body.get("model") or "")
        if self.flavour == "ollama" and model not in self.models:
            return self._error(404, f"model '{model}' not found")
        served = model if self.flavour == "ollama" else self.models[0]
        if body.get("tools") and served in self.no_tools:
            return self._error(400, f"registry.ollama.ai/library/{served} does not support tools")
        schema = schema_of(body)
        answer = self.brain(body, schema)
        limit = int(body.get("max_tokens") or 1024)
        if schema is None:
            return self._message(body, [self._text_block(str(answer))], "end_turn")
        return self._structured(body, schema, dict(answer), limit)

    def _structured(
        self, body: dict[str, Any], schema: dict[str, Any], answer: dict[str, Any], limit: int
    ) -> Reply:
        tool = bool(body.get("tools"))
        encoded = json.dumps(answer, ensure_ascii=False)
        mode = self.mode
        if mode is None or (mode == "missing_field" and tool):
            data = answer if mode is None else _without_required(answer, schema)
            if tool:
                block = {
                    "type": "tool_use",
                    "id": _new_id("toolu"),
                    "name": "respond",
                    "input": data,
                }
                return self._message(body, [block], "tool_use")
            return self._message(body, [self._text_block(json.dumps(data, ensure_ascii=False))])
        if mode == "missing_field":
            text = json.dumps(_without_required(answer, schema), ensure_ascii=False)
            return self._message(body, [self._text_block(text)])
        if mode == "text_for_tool":
            return self._message(body, [self._text_block(_PROSE if tool else encoded)])
        if mode == "json_with_prose":
            text = f"Here is my answer:\n```json\n{encoded}\n```\nI hope this helps!"
            return self._message(body, [self._text_block(text)])
        half = encoded[: max(1, len(encoded) // 2)]
        if mode == "truncated_json":
            return self._message(body, [self._text_block(half)])
        return self._message(body, [self._text_block(half)], "max_tokens", output_tokens=limit)

    def _text_block(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def _message(
        self,
        body: dict[str, Any],
        content: list[dict[str, Any]],
        stop_reason: str = "end_turn",
        *,
        output_tokens: int | None = None,
    ) -> Reply:
        if self.thinking:
            content = [{"type": "thinking", "thinking": "Let me think.", "signature": ""}, *content]
        if "stop_reason" in self.quirks and stop_reason == "end_turn":
            stop_reason = "stop"
        written = output_tokens or _tokens(json.dumps(content, ensure_ascii=False))
        read = _tokens(_text_of(body.get("system")) + _text_of(body.get("messages")))
        usage = (
            {} if "no_usage" in self.quirks else {"input_tokens": read, "output_tokens": written}
        )
        return _LocalMessage(
            model=str(body.get("model") or self.models[0]),
            content=tuple(content),
            stop_reason=stop_reason,
            usage=usage,
        )


class _LocalMessage(Reply):
    """A message as a local layer sends it: JSON, or SSE with no ``error`` events."""

    def __init__(
        self,
        *,
        model: str,
        content: tuple[dict[str, Any], ...],
        stop_reason: str,
        usage: dict[str, int],
    ) -> None:
        self.model = model
        self.content = content
        self.stop_reason = stop_reason
        self.usage = usage

    def message(self, message_id: str) -> dict[str, Any]:
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [dict(block) for block in self.content],
            "stop_reason": self.stop_reason,
            "usage": dict(self.usage),
        }

    def events(self, message_id: str) -> Iterator[bytes]:
        start = self.message(message_id) | {"content": [], "stop_reason": None}
        if self.usage:
            start["usage"] = {"input_tokens": self.usage["input_tokens"], "output_tokens": 0}
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for index, block in enumerate(self.content):
            yield from _block_events(index, block)
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": self.stop_reason},
            "usage": dict(self.usage),
        }
        yield _sse("message_delta", delta)
        yield _sse("message_stop", {"type": "message_stop"})

    def respond(self, exchange: Exchange) -> None:
        """JSON for a plain request, SSE for ``"stream": true``."""
        message_id = _new_id("msg")
        if exchange.request.body.get("stream") is not True:
            exchange.send_json(200, self.message(message_id))
            return
        exchange.begin_stream()
        for event in self.events(message_id):
            exchange.write(event)
        exchange.end_stream()
