"""The Q&A graph's agents (``graph``), each described once: its progress line in
English and Japanese, its output budget and default model. The agents pass
``AGENTS[name].llm`` to their LLM calls; ``QaRunner`` labels progress from here."""

from __future__ import annotations

from typing import Final

from ..common.agents import AgentSpec, AgentTable

__all__ = ["AGENTS"]

AGENTS: Final = AgentTable(
    AgentSpec(
        name="clarity",
        label="Analyzing your question...",
        label_ja="質問を分析しています...",
        max_tokens=1024,
    ),
    AgentSpec(
        name="interrupt",
        label="Waiting for your answer...",
        label_ja="回答を待っています...",
    ),
    AgentSpec(
        name="research",
        label="Researching {company}...",
        label_ja="{company}を調査しています...",
    ),
    AgentSpec(
        name="validator",
        label="Validating findings...",
        label_ja="調査結果を検証しています...",
        max_tokens=1024,
    ),
    AgentSpec(
        name="synthesis",
        label="Writing the answer...",
        label_ja="回答を書いています...",
        max_tokens=4096,
    ),
    AgentSpec(
        name="error_recovery",
        label="Recovering from an error...",
        label_ja="エラーから回復しています...",
    ),
)
"""The agents of the Q&A graph, in the order a question meets them."""
