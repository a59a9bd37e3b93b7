"""The deep-research graph's stages (``_graph``), each described once: its progress
line in English and Japanese, its output budget (sized for Japanese, about twice the
tokens of the same English: a four-section brief, eight facts with their quotes, a quote
per claim) and default model. ``indexing`` is the documents folder's, before the run."""

from __future__ import annotations

from typing import Final

from ..common.agents import AgentSpec, AgentTable

__all__ = ["AGENTS"]

AGENTS: Final = AgentTable(
    AgentSpec(name="indexing", label="Indexing the documents", label_ja="文書の索引作成"),
    AgentSpec(
        name="query_parser",
        label="Understanding the topic",
        label_ja="トピックの把握",
        max_tokens=512,
    ),
    AgentSpec(name="search", label="Searching", label_ja="検索"),
    AgentSpec(
        name="relevance_filter",
        label="Keeping the relevant sources",
        label_ja="関連する情報源の選別",
        max_tokens=2048,
    ),
    AgentSpec(
        name="deep_analysis",
        label="Analysing source",
        label_ja="情報源の分析",
        max_tokens=4096,
    ),
    AgentSpec(
        name="synthesis", label="Writing the summary", label_ja="要約の執筆", max_tokens=4096
    ),
    AgentSpec(
        name="verification",
        label="Verifying every claim",
        label_ja="すべての主張の検証",
        max_tokens=4096,
    ),
    AgentSpec(name="report", label="Saving the report", label_ja="レポートの保存"),
)
"""The stages of deep research, in pipeline order."""
