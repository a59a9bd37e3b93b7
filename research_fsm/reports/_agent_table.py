"""The report graph's agents (``_graph``), each described once: its progress line in
English and Japanese, its output budget (sized for Japanese, about twice the tokens of
the same English) and default model."""

from __future__ import annotations

from typing import Final

from ..common.agents import AgentSpec, AgentTable

__all__ = ["AGENTS"]

AGENTS: Final = AgentTable(
    AgentSpec(name="researcher", label="Researching the company", label_ja="企業を調査"),
    AgentSpec(name="financial", label="Financial analysis", label_ja="財務分析", max_tokens=3072),
    AgentSpec(name="market", label="Market analysis", label_ja="市場分析", max_tokens=3072),
    AgentSpec(name="product", label="Product analysis", label_ja="製品分析", max_tokens=3072),
    AgentSpec(name="recover", label="Recovering", label_ja="失敗からの回復"),
    AgentSpec(
        name="synthesizer", label="Writing the report", label_ja="レポートの執筆", max_tokens=1536
    ),
    AgentSpec(name="quality", label="Checking the quality", label_ja="品質の確認", max_tokens=1536),
    AgentSpec(name="save", label="Saving the files", label_ja="ファイルの保存"),
)
"""The agents of the report graph, in the order a report meets them."""
