"""``AnthropicLLM``: the ``LLM`` seam over ``anthropic.AsyncAnthropic``.

Structured output uses forced tool use (one tool whose input schema is the
pydantic model's JSON schema, field descriptions and limits included); text is
streamed token by token. The SDK's own retries are off: transient failures (429,
529, 5xx, timeouts, connection errors) are retried here a bounded number of times
with exponential backoff that honours ``retry-after``; authentication errors are
never retried and switch the client off for the rest of the process with one clear
message.

An answer cut at the output limit (``stop_reason == "max_tokens"``) is asked again
once with twice the limit (structured output) or continued once from where it
stopped (streamed text); an answer that does not fit the schema is asked again once
with the validation error sent back as the tool's result. Both are said in the
reply's ``note``, and every answer received is counted in the usage, also when the
call finally fails (``LLMError.usage``).

A model that does not follow the forced tool call (local models behind Ollama or
llama.cpp, ``local=True``: Ollama ignores ``tool_choice``, small models answer with
text, cut or incomplete JSON) still gives structured answers where it can: JSON written
in the text instead of the call is taken (``json_in``: code fences, words around it);
failing that, or when the server says the model cannot use tools, the answer is asked
for as one JSON object in text with the schema in the system prompt (once more with
what was wrong); failing that, ``LLMError`` and the agent's rules do the step. Each
way is said in the reply's ``note`` in words that do not vary from call to call, so a
run can say it once. A model without a price (every local model, unless ``prices``
names it) costs ``None``: unknown, never $0.

Each agent may use its own model: ``models={"financial": "claude-haiku-4-5"}`` or
``RESEARCH_FSM_MODEL_FINANCIAL``; the others use ``model`` (``RESEARCH_FSM_MODEL``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from .._tracing import llm_span, record_usage
from ._base import (
    LLM,
    LLMError,
    LLMErrorKind,
    StructuredReply,
    TextReply,
    Usage,
    agent_budget,
    agent_model,
)

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "DEFAULT_MODEL",
    "LOCAL_KEY",
    "MAX_TOKENS",
    "MODEL_ENV",
    "PRICES",
    "AnthropicLLM",
    "LLMCheck",
    "Price",
]

M = TypeVar("M", bound=BaseModel)
_log = structlog.get_logger("research_fsm.llm")

DEFAULT_MODEL = "claude-sonnet-5"
"""The model used when ``RESEARCH_FSM_MODEL`` is not set."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    """Per million input tokens."""
    output: float
    """Per million output tokens."""


PRICES: Mapping[str, Price] = {
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-opus-4-1": Price(15.0, 75.0),
}
"""Published list prices; pass ``prices=`` to override or extend."""

MAX_TOKENS: Mapping[str, int] = {}
"""Output token limits by agent name that ``AnthropicLLM`` applies over every app's own
(empty: each app's agent table gives its agents' limits, passed in with each call as an
``Agent``; ``AnthropicLLM(max_tokens={...})`` overrides them by name)."""
DEFAULT_MAX_TOKENS = 2048
"""The output limit of an agent that carries none (a plain name) and is not in ``max_tokens=``."""
MAX_TOKENS_CEILING = 16_384
"""The most a raised limit goes to (an answer cut at the limit is asked again with twice it)."""
MODEL_ENV = "RESEARCH_FSM_MODEL"
"""The environment variable naming the model of every agent; ``RESEARCH_FSM_MODEL_<AGENT>``
(e.g. ``RESEARCH_FSM_MODEL_FINANCIAL``) names one agent's."""
_UNPRICED_WARNED: set[str] = set()
"""Models already warned about having no price (once per process)."""

_TOOL_NAME = "respond"
LOCAL_KEY = "local-no-key"
"""The placeholder API key sent to a local server (the SDK wants one; the server ignores it)."""
_JSON_INSTRUCTION = (
    "Answer with one JSON object and nothing else: no code fence, no words before or "
    "after it. The object must be valid against this JSON schema:"
)
_CUT_REASONS = frozenset({"max_tokens", "length", "model_context_window_exceeded"})
"""Stop reasons that mean the answer was cut (``length``: OpenAI-style servers)."""
_UNKNOWN_MODEL = re.compile(r"not found|unknown|does not exist|no such|not available|pull")
"""What a server says of a model it does not have (Ollama: ``model 'x' not found``)."""
_CHECK_ADVICE: Mapping[str, str] = {
    "connection": (
        " (nothing answered there: is the server running? `ollama serve`, or "
        "`llama-server -m MODEL.gguf --port 8080`; or fix RESEARCH_FSM_LLM_URL)"
    ),
    "unknown_model": (
        " (set RESEARCH_FSM_MODEL to a model the server has, e.g. from `ollama list`, "
        "or fetch it: `ollama pull {model}`)"
    ),
    "no_tools": (
        " (structured steps will ask for JSON in text, and use the rules where that fails; "
        "a model with tool support does better)"
    ),
    "timeout": (
        " (a local model may need longer: set RESEARCH_FSM_LLM_TIMEOUT to more seconds, "
        "or use a smaller model)"
    ),
}
"""What to do, after the message of a failed ``check``."""
_NO_USAGE_WARNED: set[str] = set()
"""Models already warned about answers without token counts (once per process)."""

_STATUS_OF_ERROR_TYPE: Mapping[str, int] = {
    "rate_limit_error": 429,
    "overloaded_error": 529,
    "api_error": 500,
    "timeout_error": 504,
}
"""The HTTP status an ``event: error`` in a streamed (HTTP 200) answer stands for."""


class AnthropicLLM(LLM):
    """Claude through the official async SDK.

    Args:
        api_key: defaults to ``ANTHROPIC_API_KEY``.
        model: defaults to ``RESEARCH_FSM_MODEL``, else ``DEFAULT_MODEL``.
        base_url: defaults to ``ANTHROPIC_BASE_URL`` (read by the SDK).
        timeout: seconds per request.
        max_attempts: attempts per call for transient failures (1 = no retry).
        backoff, max_backoff: first wait and cap, in seconds (doubling).
        max_tokens: output limits by agent name, over the limit each ``Agent`` carries.
        prices: per-model prices, merged over ``PRICES``.
        models: a model per agent (e.g. ``{"financial": "claude-haiku-4-5"}``), merged
            over the ``RESEARCH_FSM_MODEL_<AGENT>`` variables; other agents use the model their
            ``Agent`` carries, else ``model``.
        local: a local server (Ollama, llama.cpp) speaking the Messages API at
            ``base_url``: no API key needed (a placeholder is sent), and no list price
            applies (its cost is unknown unless ``prices`` names the model).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        model: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_tokens: Mapping[str, int] | None = None,
        prices: Mapping[str, Price] | None = None,
        models: Mapping[str, str] | None = None,
        local: bool = False,
    ) -> None:
        import anthropic  # imported here: the SDK is slow to import

        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or (LOCAL_KEY if local else None)
        if not key:
            raise ValueError("no Anthropic API key: set ANTHROPIC_API_KEY or pass api_key=")
        if local and not base_url:
            raise ValueError("a local LLM needs its server's address: pass base_url=")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.model = model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
        self.models: dict[str, str] = {**_models_from_env(), **(models or {})}
        """The agents whose model is not ``model``."""
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_tokens = {**MAX_TOKENS, **(max_tokens or {})}
        self.local = local
        """A local server: no list prices, a placeholder key."""
        self.prices = dict(prices or {}) if local else {**PRICES, **(prices or {})}
        self._no_tools: set[str] = set()
        """Models the server said cannot use tools: asked for JSON in text directly."""
        self._sdk = anthropic
        self._network_errors, self._timeout_errors = _http_errors()
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self._auth_failure: str | None = None

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """Where requests go (``https://api.anthropic.com`` unless set)."""
        return str(self._client.base_url).rstrip("/")

    def _who(self, model: str) -> str:
        """Who answered, for messages: Claude, or the local model by name."""
        return f"the model {model}" if self.local or not model.startswith("claude") else "Claude"

    def _answerer(self) -> str:
        """Who did not answer in time, for messages."""
        return f"the LLM server at {self.base_url}" if self.local else "Claude"

    def _api(self, what: str) -> str:
        """An error of the API, for messages: "Anthropic API rate limit (HTTP 429): ..."
        or "the LLM server at URL answered: server (HTTP 500): ..."."""
        return (
            f"the LLM server at {self.base_url} answered: {what}"
            if self.local
            else (f"Anthropic API {what}")
        )

    def _where(self) -> str:
        """Where requests go, for messages."""
        return f"the LLM server at {self.base_url}" if self.local else "the Anthropic API"

    # -- the LLM protocol --------------------------------------------------------

    def model_for(self, agent: str) -> str:
        """The model ``agent`` uses."""
        return self.models.get(agent) or agent_model(agent) or self.model

    def limit_for(self, agent: str) -> int:
        """The output token limit of ``agent``: ``max_tokens=`` by name, else the limit
        the ``Agent`` carries, else ``DEFAULT_MAX_TOKENS``."""
        return self.max_tokens.get(agent) or agent_budget(agent) or DEFAULT_MAX_TOKENS

    async def check(self) -> LLMCheck:
        """One tiny forced tool call (no retries) to prove the model answers, and how:
        through the tool, in text only, or not at all (with what to do about it)."""
        who = f"{self._who(self.model)} at {self.base_url}"
        tool: Any = {
            "name": _TOOL_NAME,
            "description": "Say that you can hear me.",
            "input_schema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean", "description": "Always true."}},
                "required": ["ok"],
            },
        }
        request = functools.partial(
            self._client.messages.create,
            model=self.model,
            max_tokens=256,
            messages=[{"role": "user", "content": f"Call the {_TOOL_NAME} tool with ok=true."}],
            tools=[tool],
            tool_choice={"type": "tool", "name": _TOOL_NAME},
        )
        try:
            message = await self._call(request, retry_if=lambda: False)
        except LLMError as exc:
            return LLMCheck(
                status="degraded" if exc.kind == "no_tools" else "failed",
                message=exc.message
                + _CHECK_ADVICE.get(exc.kind, "").replace("{model}", self.model),
                kind=exc.kind,
            )
        usage = self._usage_of(message, self.model)
        if any(block.type == "tool_use" for block in message.content):
            return LLMCheck(status="ok", message=f"{who} answers through tools", usage=usage)
        return LLMCheck(
            status="degraded",
            message=f"{who} answered in text instead of calling the tool: structured steps "
            "will ask it for JSON in text, and use the rules where that fails too",
            kind="text",
            usage=usage,
        )

    async def structured(
        self, *, agent: str, system: str, prompt: str, schema: type[M]
    ) -> StructuredReply[M]:
        tool: Any = {
            "name": _TOOL_NAME,
            "description": f"Give your answer as a {schema.__name__}: {_doc(schema)}",
            "input_schema": schema.model_json_schema(),
        }
        model = self.model_for(agent)
        with llm_span("anthropic", model, agent, prompt=prompt) as span:
            reply = await self._structured(agent, model, system, prompt, schema, tool)
            usage = reply.usage
            record_usage(span, usage.input_tokens, usage.output_tokens, usage.cost_usd)
            return reply

    async def _structured(
        self, agent: str, model: str, system: str, prompt: str, schema: type[M], tool: Any
    ) -> StructuredReply[M]:
        """The forced tool call; when the model does not follow it (no tool support, text
        instead of the call, an answer that does not fit after one correction, an answer
        cut at the output limit also after raising it): the answer asked for as JSON in
        text. Failing that, an ``LLMError`` (the agent's rules take over)."""
        usage = Usage()
        failure: LLMError | None = None
        if model not in self._no_tools:
            try:
                return await self._by_tool(agent, model, system, prompt, schema, tool)
            except LLMError as exc:
                if exc.kind not in ("schema", "max_tokens", "no_tools"):
                    raise
                failure, usage = exc, exc.usage
                if exc.kind == "no_tools":
                    self._no_tools.add(model)
        why = (
            f"{self._who(model)} cannot use tools"
            if failure is None or failure.kind == "no_tools"
            else failure.message
        )
        try:
            cut = failure is not None and failure.kind == "max_tokens"
            limit = self.limit_for(agent)
            limit = min(limit * 2, MAX_TOKENS_CEILING) if cut else limit
            value, more = await self._by_json_text(agent, model, system, prompt, schema, limit)
        except LLMError as exc:
            raise LLMError(
                f"{why}; asked for JSON in text instead: {exc.message}",
                kind=exc.kind,
                usage=usage + exc.usage,
            ) from None
        how = (
            "cannot use tools"
            if failure is None or failure.kind == "no_tools"
            else f"did not answer through the tool ({failure.kind})"
        )
        note = f"{agent}: {self._who(model)} {how}; its answer was asked for as JSON in text"
        return StructuredReply(value=value, usage=usage + more, note=note)

    async def _by_tool(
        self, agent: str, model: str, system: str, prompt: str, schema: type[M], tool: Any
    ) -> StructuredReply[M]:
        """The answer through the forced tool call: the limit raised once when it is cut,
        the validation errors sent back once when it does not fit."""
        usage = Usage()
        who = self._who(model)
        limit = self.limit_for(agent)
        messages: list[Any] = [{"role": "user", "content": prompt}]
        notes: list[str] = []
        raised = schema_retried = False
        while True:
            sent_limit = limit
            try:
                message = await self._call(
                    functools.partial(
                        self._client.messages.create,
                        model=model,
                        max_tokens=limit,
                        system=system,
                        messages=list(messages),
                        tools=[tool],
                        tool_choice={"type": "tool", "name": _TOOL_NAME},
                    )
                )
            except LLMError as exc:
                exc.usage = usage + exc.usage
                raise
            usage = usage + self._usage_of(message, model)
            cut = _is_cut(message.stop_reason)
            if cut and not raised and limit < MAX_TOKENS_CEILING:
                raised, limit = True, min(limit * 2, MAX_TOKENS_CEILING)
                notes.append(
                    f"{agent}: {who}'s answer was cut at the {sent_limit:,}-token output "
                    f"limit; asked again with {limit:,}"
                )
                continue
            block = next((b for b in message.content if b.type == "tool_use"), None)
            try:
                if block is None:  # text instead of the call: JSON in it will do
                    value = schema.model_validate(json_in(_text_of(message)))
                    notes.append(f"{agent}: {who} answered in text, not through the tool")
                else:
                    value = schema.model_validate(_unwrapped(block.input))
            except (ValueError, ValidationError) as exc:
                if cut:
                    raise LLMError(
                        f"{who}'s answer for {schema.__name__} was cut at the {limit:,}-token "
                        "output limit, also after the limit was raised",
                        kind="max_tokens",
                        usage=usage,
                    ) from None
                if schema_retried:
                    raise LLMError(
                        f"{who}'s answer does not fit {schema.__name__}: {_problems(exc)[:200]}",
                        kind="schema",
                        usage=usage,
                    ) from None
                schema_retried = True
                messages = [*messages, *_correction(message, block, exc)]
                continue
            if schema_retried:
                notes.append(f"{agent}: {who}'s first answer did not fit the schema; corrected")
            return StructuredReply(value=value, usage=usage, note="; ".join(notes) or None)

    async def _by_json_text(
        self, agent: str, model: str, system: str, prompt: str, schema: type[M], limit: int
    ) -> tuple[M, Usage]:
        """The answer asked for as one JSON object in text (no tools), parsed leniently
        (a code fence, words around it); asked again once with what was wrong."""
        usage = Usage()
        who = self._who(model)
        shape = json.dumps(schema.model_json_schema(), ensure_ascii=False)
        system = f"{system}\n\n{_JSON_INSTRUCTION}\n<schema>\n{shape}\n</schema>"
        messages: list[Any] = [{"role": "user", "content": prompt}]
        for attempt in (1, 2):
            try:
                message = await self._call(
                    functools.partial(
                        self._client.messages.create,
                        model=model,
                        max_tokens=limit,
                        system=system,
                        messages=list(messages),
                    )
                )
            except LLMError as exc:
                exc.usage = usage + exc.usage
                raise
            usage = usage + self._usage_of(message, model)
            said = _text_of(message)
            try:
                return schema.model_validate(json_in(said)), usage
            except (ValueError, ValidationError) as exc:
                if _is_cut(message.stop_reason):
                    raise LLMError(
                        f"{who}'s JSON was cut at the {limit:,}-token output limit",
                        kind="max_tokens",
                        usage=usage,
                    ) from None
                if attempt == 2:
                    raise LLMError(
                        f"{who}'s JSON does not fit {schema.__name__}: {_problems(exc)[:200]}",
                        kind="schema",
                        usage=usage,
                    ) from None
                messages += [
                    {"role": "assistant", "content": said.strip() or "(no answer)"},
                    {
                        "role": "user",
                        "content": "That is not one JSON object fitting the schema "
                        f"({_problems(exc)[:1500]}). Answer again with the JSON object only.",
                    },
                ]
        raise AssertionError("unreachable")  # pragma: no cover

    async def generate(
        self,
        *,
        agent: str,
        system: str,
        prompt: str,
        on_token: Callable[[str], None] | None = None,
    ) -> TextReply:
        model = self.model_for(agent)
        limit = self.limit_for(agent)
        streamed = False
        broken = Usage()  # what streams that broke mid-way had cost when they broke

        def attempt(messages: list[Any]) -> Callable[[], Any]:
            async def request() -> Any:
                nonlocal streamed, broken
                async with self._client.messages.stream(
                    model=model, max_tokens=limit, system=system, messages=messages
                ) as stream:
                    try:
                        async for text in stream.text_stream:
                            streamed = True
                            if on_token is not None:
                                on_token(text)
                        return await stream.get_final_message()
                    except BaseException:
                        broken = broken + self._usage_so_far(stream, model)
                        raise

            return request

        with llm_span("anthropic", model, agent, prompt=prompt) as span:
            first: list[Any] = [{"role": "user", "content": prompt}]
            try:
                message = await self._call(attempt(first), retry_if=lambda: not streamed)
            except LLMError as exc:
                exc.usage = broken + exc.usage
                raise
            text = _text_of(message)
            usage = broken + self._usage_of(message, model)
            broken = Usage()
            truncated = _is_cut(message.stop_reason)
            note = None
            if truncated:  # continue once from where it stopped: the limit raised once
                text, usage, truncated, note = await self._continue(
                    agent, text, usage, first, attempt, model, limit
                )
                usage = broken + usage  # a continuation that broke mid-way
            record_usage(
                span,
                usage.input_tokens,
                usage.output_tokens,
                usage.cost_usd,
                model=getattr(message, "model", None),
                answer=text,
            )
        return TextReply(text=text, usage=usage, truncated=truncated, note=note)

    async def converse(
        self,
        *,
        agent: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], Usage]:
        """One turn of a conversation with tools (the Messages API as it is): the
        assistant's message as a dict (``role``, ``content`` blocks, ``stop_reason``)
        and its usage. ``messages`` and ``tools`` are in the API's shape; retries and
        errors as for every call (``LLMError``)."""
        model = self.model_for(agent)
        limit = self.limit_for(agent)
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        sent: Any = messages  # the API's own shape, as the caller gave it

        async def request() -> Any:
            return await self._client.messages.create(
                model=model, max_tokens=limit, system=system, messages=sent, **extra
            )

        with llm_span("anthropic", model, agent, prompt=system) as span:
            message = await self._call(request)
            usage = self._usage_of(message, model)
            record_usage(span, usage.input_tokens, usage.output_tokens, usage.cost_usd)
        content = [block.model_dump(exclude_none=True) for block in message.content]
        reply = {"role": "assistant", "content": content, "stop_reason": message.stop_reason}
        return reply, usage

    async def _continue(
        self,
        agent: str,
        text: str,
        usage: Usage,
        first: list[Any],
        attempt: Callable[[list[Any]], Callable[[], Any]],
        model: str,
        limit: int,
    ) -> tuple[str, Usage, bool, str]:
        """Ask Claude to go on from ``text`` (an assistant turn it continues)."""
        head = f"{agent}: Claude's text reached the {limit:,}-token output limit"
        start = text.rstrip()  # the API refuses an assistant turn ending in whitespace
        if not start:
            return text, usage, True, f"{head} before writing anything"
        try:
            message = await self._call(
                attempt([*first, {"role": "assistant", "content": start}]), retry_if=lambda: False
            )
        except LLMError as exc:
            return text, usage + exc.usage, True, f"{head}; continuing it failed ({exc.kind})"
        usage = usage + self._usage_of(message, model)
        whole = start + _text_of(message)
        if _is_cut(message.stop_reason):
            return whole, usage, True, f"{head}, also after being continued once; it is cut short"
        return whole, usage, False, f"{head} and was continued once"

    # -- retries and error mapping -------------------------------------------------

    async def _call(
        self, request: Callable[[], Any], retry_if: Callable[[], bool] = lambda: True
    ) -> Any:
        if self._auth_failure is not None:
            raise LLMError(self._auth_failure, kind="auth")
        for attempt in range(1, self.max_attempts + 1):
            try:
                message = await request()
                _check_message(message, self._sdk.types.Message)
                return message
            except self._sdk.APIError as exc:
                error, wait = self._classify(exc, attempt)
            except self._network_errors as exc:  # raised while a stream is read
                error, wait = self._classify_transport(exc, attempt)
            # an unparseable answer (the SDK asserts on a stream without a message)
            except (ValueError, TypeError, KeyError, AttributeError, AssertionError) as exc:
                error = LLMError(
                    f"unexpected answer from the Anthropic API ({type(exc).__name__})", kind="other"
                )
                wait = None
            if error.kind == "auth":
                self._auth_failure = error.message
                _log.error(
                    "Anthropic authentication failed; not using Claude", detail=error.message
                )
                raise error
            if wait is None or attempt == self.max_attempts or not retry_if():
                raise error
            _log.info(
                "Anthropic call failed; retrying",
                kind=error.kind,
                attempt=attempt,
                wait=round(wait, 2),
            )
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _classify(self, exc: anthropic.APIError, attempt: int) -> tuple[LLMError, float | None]:
        """The error to raise, and how long to wait before retrying (None: don't)."""
        sdk = self._sdk
        backoff = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        if isinstance(exc, sdk.APITimeoutError):
            return LLMError(
                f"{self._answerer()} did not answer within {self.timeout:g} s", kind="timeout"
            ), backoff
        if isinstance(exc, sdk.APIConnectionError):
            return LLMError(f"could not connect to {self._where()}", kind="connection"), backoff
        if not isinstance(exc, sdk.APIStatusError):
            return LLMError(self._api(f"error: {type(exc).__name__}"), kind="other"), None
        status = exc.status_code
        if status < 400:  # an ``event: error`` in a streamed answer: its type tells
            status = _STATUS_OF_ERROR_TYPE.get(_error_type(exc) or "", status)
        detail = _error_message(exc, self._client.api_key)
        if status in (401, 403):
            who = (
                f"{self._where()} rejected the API key"
                if self.local
                else ("Anthropic rejected the API key in ANTHROPIC_API_KEY")
            )
            return LLMError(f"{who} (HTTP {status}): {detail}", kind="auth"), None
        kind: LLMErrorKind
        said = detail.lower()
        if status in (400, 404) and "model" in said and _UNKNOWN_MODEL.search(said):
            return LLMError(
                f"{self._where()} does not know the model (HTTP {status}): {detail}",
                kind="unknown_model",
            ), None
        if status == 400 and "tool" in said and "support" in said:
            return LLMError(
                f"{self._where()} says the model cannot use tools (HTTP {status}): {detail}",
                kind="no_tools",
            ), None
        if status == 429:
            kind = "rate_limit"
        elif status == 529:
            kind = "overloaded"
        elif status >= 500:
            kind = "server"
        else:
            return LLMError(self._api(f"error (HTTP {status}): {detail}"), kind="other"), None
        retry_after = _retry_after(exc)
        wait = (
            backoff
            if retry_after is None
            else min(max(retry_after, 0.0), max(self.max_backoff, 1.0))
        )
        return LLMError(
            self._api(f"{kind.replace('_', ' ')} (HTTP {status}): {detail}"), kind=kind
        ), wait

    def _classify_transport(self, exc: Exception, attempt: int) -> tuple[LLMError, float | None]:
        """A network failure the SDK did not wrap (it happens while a stream is read)."""
        backoff = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        if isinstance(exc, self._timeout_errors):
            return LLMError(
                f"{self._answerer()} did not answer within {self.timeout:g} s", kind="timeout"
            ), backoff
        return LLMError(
            f"the connection to {self._where()} broke ({type(exc).__name__})", kind="connection"
        ), backoff

    def _usage_so_far(self, stream: Any, model: str) -> Usage:
        """What a stream that broke had cost: the usage of its ``message_start`` and
        deltas so far (nothing when it broke before ``message_start``)."""
        try:
            snapshot = stream.current_message_snapshot
        except (AssertionError, AttributeError, TypeError):
            return Usage()
        return self._usage_of(snapshot, model)

    def _usage_of(self, message: Any, model: str) -> Usage:
        """The usage the server reported; a count it left out is 0 (said once per model:
        budgets count tokens as the server reports them, never estimated here)."""
        usage = getattr(message, "usage", None)
        counts = [getattr(usage, name, None) for name in ("input_tokens", "output_tokens")]
        if not all(isinstance(n, int) for n in counts) and model not in _NO_USAGE_WARNED:
            _NO_USAGE_WARNED.add(model)
            _log.warning(
                "the LLM server reports no token counts; they are counted as 0",
                model=model,
                server=self.base_url,
            )
        tokens_in, tokens_out = (n if isinstance(n, int) else 0 for n in counts)
        return self._usage(tokens_in, tokens_out, model)

    def _usage(self, input_tokens: int, output_tokens: int, model: str) -> Usage:
        price = self.prices.get(model)
        if price is None and model not in _UNPRICED_WARNED:
            _UNPRICED_WARNED.add(model)
            _log.warning(
                "no price for this model; its cost is reported as unknown",
                model=model,
                known=sorted(self.prices),
                fix="pass AnthropicLLM(prices={model: Price(input, output)})",
            )
        cost = (
            None
            if price is None
            else round((input_tokens * price.input + output_tokens * price.output) / 1e6, 6)
        )
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens, calls=1, cost_usd=cost)


def _models_from_env() -> dict[str, str]:
    """``RESEARCH_FSM_MODEL_<AGENT>`` variables: the agent (lower case) -> its model."""
    prefix = MODEL_ENV + "_"
    return {
        name[len(prefix) :].lower(): value.strip()
        for name, value in os.environ.items()
        if name.startswith(prefix) and value.strip()
    }


def _doc(schema: type[BaseModel]) -> str:
    """The schema's docstring in one line."""
    return " ".join((schema.__doc__ or schema.__name__).split())


def _text_of(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def _problems(exc: Exception) -> str:
    """A validation error in a few words, one line per problem (no documentation links)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "\n".join(
        f"{'.'.join(str(part) for part in error['loc']) or '(the answer)'}: {error['msg']}"
        f" (got {str(error.get('input'))[:60]!r})"
        for error in exc.errors(include_url=False)
    )


def _correction(message: Any, block: Any, exc: Exception) -> list[Any]:
    """The turns that send a misfit answer's validation error back to Claude: its answer
    as it was, then the error as the tool's result (or a reminder to use the tool)."""
    error = _problems(exc)[:1500]
    if block is None:
        said = _text_of(message) or "(no answer)"
        return [
            {"role": "assistant", "content": said},
            {
                "role": "user",
                "content": f"Answer by calling the {_TOOL_NAME} tool ({error}).",
            },
        ]
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "is_error": True,
                    "content": "The input does not fit the schema; call the tool again with "
                    f"input that fits it. Validation errors:\n{error}",
                }
            ],
        },
    ]


def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """The network and timeout errors of the SDK's HTTP client (``httpx``, or
    ``httpx2`` in newer SDKs), which the SDK lets through while a stream is read."""
    network: list[type[Exception]] = []
    timeouts: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        network.append(module.TransportError)
        timeouts.append(module.TimeoutException)
    return tuple(network), tuple(timeouts)


def _check_message(message: object, message_type: type) -> None:
    """Raise ``TypeError`` unless ``message`` is a message with content and usage
    (the SDK builds messages from any JSON without validating them)."""
    if not isinstance(message, message_type):
        raise TypeError(f"got {type(message).__name__} instead of a message")
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise TypeError("the message has no content")
    for block in content:
        kind = getattr(block, "type", None)
        if not isinstance(kind, str) or (
            kind == "text" and not isinstance(getattr(block, "text", None), str)
        ):
            raise TypeError("the message has a malformed content block")


def _error_type(exc: anthropic.APIStatusError) -> str | None:
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def _error_message(exc: anthropic.APIStatusError, key: str | None) -> str:
    """The server's message, capped, with the API key masked (some proxies echo it)."""
    body = exc.body
    message = str(exc.message)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            message = str(error["message"])
    if key:
        message = message.replace(key, "***")
    return message[:200]


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return None if value is None else float(value)
    except (ValueError, AttributeError):
        return None


def _is_cut(stop_reason: object) -> bool:
    """Whether a stop reason says the answer was cut at the output limit (any other
    value, known or not, ``None`` included, is an answer that ended)."""
    return isinstance(stop_reason, str) and stop_reason in _CUT_REASONS


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.S)
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_WRAPPERS = ("input", "arguments", "parameters")


def json_in(text: str) -> Any:
    """The JSON object a model wrote in ``text``: alone, in a code fence, or with words
    before or after it (``<think>`` sections skipped); a tool call written out as text
    (``{"name": "respond", "arguments": {...}}``) gives its arguments. ``ValueError``
    when there is no complete JSON object (e.g. it was cut short)."""
    text = _THINKING.sub("", text)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch == "{"):
            try:
                found, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            if isinstance(found, dict):
                return _unwrapped(found)
    raise ValueError("the answer holds no complete JSON object")


def _unwrapped(value: Any) -> Any:
    """A tool call's input written as the whole call (``{"name": "respond", "input":
    {...}}``): the input; anything else as it is."""
    if isinstance(value, dict) and value.get("name") == _TOOL_NAME:
        for key in _WRAPPERS:
            if isinstance(value.get(key), dict) and set(value) <= {"name", "type", key}:
                return value[key]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMCheck:
    """What one tiny call to the LLM showed (``AnthropicLLM.check``)."""

    status: Literal["ok", "degraded", "failed"]
    """ok: it answered through the tool; degraded: it answers, but not through tools
    (structured steps ask for JSON in text, then use the rules); failed: it does not answer."""
    message: str
    """What happened and, when something is wrong, what to do."""
    kind: str | None = None
    """The failure's ``LLMError`` kind (connection, unknown_model, no_tools, timeout,
    auth...), or ``"text"`` (it answered in text instead of calling the tool)."""
    usage: Usage | None = None
    """What the call cost (``None`` when it failed before an answer)."""
