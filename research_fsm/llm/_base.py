"""The ``LLM`` seam the agents think through, and what it returns."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..errors import ResearchError

__all__ = [
    "LLM",
    "Agent",
    "LLMError",
    "LLMErrorKind",
    "StructuredReply",
    "TextReply",
    "Usage",
    "agent_models",
    "models_text",
]

M = TypeVar("M", bound=BaseModel)
LLMErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "timeout",
    "connection",
    "schema",
    "max_tokens",
    "unknown_model",
    "no_tools",
    "other",
]


class Usage(BaseModel):
    """Token usage and estimated cost; adds up with ``+``."""

    model_config = ConfigDict(use_attribute_docstrings=True, frozen=True)

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    calls: int = 0
    """LLM requests made."""
    cost_usd: float | None = 0.0
    """Estimated cost in US dollars; ``None`` when unknown (a model without a price, such
    as a local one): never counted as free, never guessed."""

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else round(self.cost_usd + other.cost_usd, 6)
        )
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            calls=self.calls + other.calls,
            cost_usd=cost,
        )

    def cost_text(self, prefix: str = "~$") -> str:
        """The cost for people: ``"~$0.0123"``, or ``"cost unknown"`` when it is not known."""
        return "cost unknown" if self.cost_usd is None else f"{prefix}{self.cost_usd:.4f}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StructuredReply(Generic[M]):
    """A validated structured answer."""

    value: M
    """The answer, an instance of the requested schema."""
    usage: Usage
    """What producing it cost (every attempt, the ones that did not fit included)."""
    note: str | None = None
    """What the client had to do to get it, for the run's notes (e.g. the answer was cut
    at the output limit and asked again with a higher one); ``None`` when nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextReply:
    """A generated text."""

    text: str
    """The whole text."""
    usage: Usage
    """What producing it cost."""
    truncated: bool = False
    """The text still ends at the output limit (it is cut short)."""
    note: str | None = None
    """What the client had to do to get it, for the run's notes (e.g. the text reached
    the output limit and was continued once); ``None`` when nothing."""


class Agent(str):
    """The name of the agent an LLM call is made for, carrying what that agent needs:
    its output budget and its default model. Apps pass one as ``agent=`` (their agent
    tables make them); it is a ``str``, so a client that only reads the name works as
    before, and a plain ``str`` still works (the client's defaults then apply)."""

    max_tokens: int | None
    """The agent's output token limit, or ``None`` for the client's default."""
    model: str | None
    """The agent's default model, or ``None`` for the client's model."""

    def __new__(
        cls, name: str, *, max_tokens: int | None = None, model: str | None = None
    ) -> Agent:
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"agent {name!r}: max_tokens must be >= 1, got {max_tokens}")
        agent = super().__new__(cls, name)
        agent.max_tokens = max_tokens
        agent.model = model
        return agent

    def __getnewargs_ex__(self) -> tuple[tuple[str], dict[str, object]]:
        return (str(self),), {"max_tokens": self.max_tokens, "model": self.model}


def agent_budget(agent: str) -> int | None:
    """The output limit ``agent`` carries (an ``Agent``), or ``None`` (a plain name)."""
    return agent.max_tokens if isinstance(agent, Agent) else None


def agent_model(agent: str) -> str | None:
    """The default model ``agent`` carries (an ``Agent``), or ``None`` (a plain name)."""
    return agent.model if isinstance(agent, Agent) else None


class LLMError(ResearchError):
    """An LLM call failed for good (after the client's own retries)."""

    def __init__(
        self, message: str, *, kind: LLMErrorKind = "other", usage: Usage | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong (never contains credentials)."""
        self.kind: LLMErrorKind = kind
        """The failure's class: auth, rate_limit, overloaded, server, timeout, connection,
        schema (the answer did not fit the schema), max_tokens (it was cut at the output
        limit, also after the limit was raised), unknown_model (the server does not have
        the model), no_tools (the model cannot use tools), other."""
        self.usage: Usage = usage or Usage()
        """What the failed call cost: the answers received before it failed (an answer
        that did not fit is paid for too)."""


@runtime_checkable
class LLM(Protocol):
    """What the agents need from a language model.

    ``structured`` and ``generate`` are required; ``aclose`` is optional: subclass
    ``LLM`` to inherit its default (nothing to release).
    """

    model: str
    """The model's name, for logs and pricing."""

    async def structured(
        self, *, agent: str, system: str, prompt: str, schema: type[M]
    ) -> StructuredReply[M]:
        """Answer ``prompt`` with an instance of ``schema``; raise ``LLMError`` on failure."""
        ...

    async def generate(
        self,
        *,
        agent: str,
        system: str,
        prompt: str,
        on_token: Callable[[str], None] | None = None,
    ) -> TextReply:
        """Write text, calling ``on_token`` with each piece as it arrives."""
        ...

    async def aclose(self) -> None:
        """Release the client's connections. Default: nothing to release."""
        return None


def agent_models(llm: LLM | None, agents: Iterable[str]) -> dict[str, str]:
    """The agents of ``agents`` whose model is not ``llm.model`` -> their model (an LLM
    with a ``model_for(agent)`` method, as ``AnthropicLLM``, may give agents their own)."""
    if llm is None:
        return {}
    model_for = getattr(llm, "model_for", None)
    if not callable(model_for):
        return {}
    found = {agent: str(model_for(agent)) for agent in agents}
    return {agent: model for agent, model in found.items() if model != llm.model}


def models_text(model: str, models: Mapping[str, str], used: Iterable[str] | None = None) -> str:
    """``model`` alone, or each agent with its own model and then the others':
    ``"financial: m2; quality: m3; others: m"``; with ``used``, only the agents among
    them (those that made calls)."""
    wanted = set(used) if used is not None else set(models)
    own = [f"{agent}: {name}" for agent, name in sorted(models.items()) if agent in wanted]
    return "; ".join([*own, f"others: {model}"]) if own else model
