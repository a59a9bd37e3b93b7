"""``ScriptedLLM``: a deterministic LLM test double, shipped for users' tests too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ._base import LLM, LLMError, StructuredReply, TextReply, Usage

__all__ = ["ScriptedCall", "ScriptedLLM"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedCall:
    """One call the double received."""

    agent: str
    """The calling agent."""
    kind: str
    """``"structured"`` or ``"generate"``."""
    system: str
    """The system prompt."""
    prompt: str
    """The user prompt."""


class ScriptedLLM(LLM):
    """Answers each agent's calls from a script, in order.

    ``script`` maps an agent name to its replies: a model instance or dict (for
    ``structured``), a str (text for ``generate``; for ``structured`` it is
    parsed as JSON, so a non-JSON string simulates malformed output), an
    exception instance to raise, or a callable given the prompt that returns
    one of those (for calls whose order is not fixed, such as parallel branches). An agent whose replies ran out gets
    ``LLMError``. Every call is recorded in ``calls``.
    """

    def __init__(
        self, script: Mapping[str, Iterable[object]] | None = None, *, model: str = "scripted"
    ) -> None:
        self.model = model
        self._script = {agent: list(replies) for agent, replies in (script or {}).items()}
        self.calls: list[ScriptedCall] = []

    def _next(self, agent: str) -> object:
        replies = self._script.get(agent)
        if not replies:
            raise LLMError(f"no scripted reply left for agent {agent!r}", kind="other")
        reply = replies.pop(0)
        if callable(reply) and not isinstance(reply, (BaseModel, BaseException, type)):
            reply = reply(self.calls[-1].prompt)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    @staticmethod
    def _usage(prompt: str, output: str) -> Usage:
        return Usage(input_tokens=len(prompt) // 4 + 1, output_tokens=len(output) // 4 + 1, calls=1)

    async def structured(
        self, *, agent: str, system: str, prompt: str, schema: type[M]
    ) -> StructuredReply[M]:
        self.calls.append(
            ScriptedCall(agent=agent, kind="structured", system=system, prompt=prompt)
        )
        reply: Any = self._next(agent)
        try:
            if isinstance(reply, str):
                reply = json.loads(reply)
            value = reply if isinstance(reply, schema) else schema.model_validate(reply)
        except (ValueError, ValidationError) as exc:
            raise LLMError(f"reply does not fit {schema.__name__}: {exc}", kind="schema") from None
        return StructuredReply(value=value, usage=self._usage(prompt, str(reply)))

    async def generate(
        self,
        *,
        agent: str,
        system: str,
        prompt: str,
        on_token: Callable[[str], None] | None = None,
    ) -> TextReply:
        self.calls.append(ScriptedCall(agent=agent, kind="generate", system=system, prompt=prompt))
        text = str(self._next(agent))
        if on_token is not None:
            for piece in text.split(" "):
                on_token(piece + " ")
        return TextReply(text=text, usage=self._usage(prompt, text))
