"""An app's agent table: each agent of its graph described once, beside the graph.

A row (``AgentSpec``) holds an agent's node name, its progress label in English and
Japanese, its output budget and its default model. The app passes ``spec.llm`` (an
``research_fsm.llm.Agent``, a ``str`` carrying the budget and the model) as ``agent=``
to its LLM calls, and its runner labels progress from the table; nothing outside the
app names its agents.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..llm import Agent
from .models import Language

__all__ = ["AgentSpec", "AgentTable"]


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    """One agent of an app's graph."""

    name: str
    """The node name (and the name its LLM calls are made, logged and priced under)."""
    label: str
    """Its progress line in English (``{company}`` and other ``{field}`` of the run's
    state are filled in when known)."""
    label_ja: str
    """Its progress line in Japanese."""
    max_tokens: int | None = None
    """Its output budget (tokens) when it calls the LLM; ``None``: it makes no call, or
    takes the client's default."""
    model: str | None = None
    """Its default model; ``None``: the LLM client's model."""
    llm: Agent = field(init=False, repr=False, compare=False)
    """What its LLM calls pass as ``agent=``: the name carrying the budget and the model."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "llm", Agent(self.name, max_tokens=self.max_tokens, model=self.model)
        )

    def label_in(self, language: Language | str, values: Mapping[str, Any] | None = None) -> str:
        """The progress line in ``language`` (English for any other), its ``{field}``
        placeholders filled from ``values`` (a placeholder without a value reads
        ``the <field>``)."""
        text = self.label_ja if language == "ja" else self.label
        return _fill(text, values or {})


class _Blanks(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"the {key}"


def _fill(text: str, values: Mapping[str, Any]) -> str:
    names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
    if not names:
        return text
    shown = _Blanks(
        {k: str(v).rstrip(".") for k, v in values.items() if k in names and v}  # "Inc." + "..."
    )
    return text.format_map(shown)


class AgentTable(Mapping[str, AgentSpec]):
    """An app's agents by node name, in the order given."""

    def __init__(self, *agents: AgentSpec) -> None:
        self._agents: dict[str, AgentSpec] = {}
        for agent in agents:
            if agent.name in self._agents:
                raise ValueError(f"agent {agent.name!r} is listed twice")
            self._agents[agent.name] = agent

    def __getitem__(self, name: str) -> AgentSpec:
        return self._agents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)

    def __repr__(self) -> str:
        return f"AgentTable({', '.join(self._agents)})"

    def label(
        self, name: str, language: Language | str = "en", values: Mapping[str, Any] | None = None
    ) -> str:
        """The progress line of ``name``; a name the table lacks (a node added without a
        row) reads as its words (``error_recovery`` -> ``error recovery``), never fails."""
        agent = self._agents.get(name)
        if agent is None:
            return name.replace("_", " ")
        return agent.label_in(language, values)

    def callers(self) -> tuple[Agent, ...]:
        """The agents that call the LLM (those with a budget), as their calls name them."""
        return tuple(agent.llm for agent in self._agents.values() if agent.max_tokens)
