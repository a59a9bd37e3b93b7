"""The deep-research graph (design 002's pipeline with design 003's verification loop)::

query_parser -> search -> relevance_filter -> deep_analysis x N (parallel, Send)
     ^            |  \\                              |
     |  retry ----+   +-- nothing found --> report   v
     +---------- verification <------------- synthesis -- nothing (new) --> report
                      |
                      +-- supported ratio >= threshold, or 2 rounds --> report -> END
"""

from __future__ import annotations

from typing import Final

from ..engine import END, START, Send, StateGraph
from ..llm import LLM
from ._model import MAX_LOOPS, MAX_SEARCH_ATTEMPTS, DeepState
from ._nodes import (
    Analyse,
    QueryParser,
    RelevanceFilter,
    Resolve,
    Search,
    Synthesis,
    Verify,
    next_sources,
)
from ._report import ReportWriter

__all__ = [
    "STAGES",
    "after_filter",
    "after_search",
    "after_synthesis",
    "after_verification",
    "build_deep_graph",
]

STAGES: Final = (
    "query_parser",
    "search",
    "relevance_filter",
    "deep_analysis",
    "synthesis",
    "verification",
    "report",
)
"""The graph's nodes, in pipeline order."""
STAGE_TIMEOUT: Final = 300.0
"""Seconds any one stage may take (the analyses have their own, shorter limit)."""


def after_search(state: DeepState) -> str:
    """``filter`` with enough results (``top_k``), ``retry`` with a broadened query while
    attempts remain, ``filter`` with what was found, else ``report`` (no sources, or a
    gap search that found nothing new: the verified draft stands)."""
    if state.outcome != "running":
        return "report"
    if len(state.candidates) >= state.top_k:
        return "filter"
    if state.attempts < MAX_SEARCH_ATTEMPTS:
        return "retry"
    return "filter" if state.candidates else "report"


def after_filter(state: DeepState) -> list[Send]:
    """One ``deep_analysis`` branch per relevant source not yet analysed (top ``top_k``);
    none (straight to synthesis, which then has nothing new) when there is no such source."""
    if state.outcome != "running":
        return []
    return [Send("deep_analysis", sid) for sid in next_sources(state)]


def after_synthesis(state: DeepState) -> str:
    """``verify`` a new draft; ``report`` when nothing was found, or when a gap round
    brought nothing new (the last verification stands)."""
    if state.outcome != "running" or state.draft is None or state.draft_round < state.round:
        return "report"
    return "verify"


def after_verification(state: DeepState) -> str:
    """``report`` when the supported ratio reaches the threshold or after ``MAX_LOOPS``
    rounds; else ``research`` the gaps."""
    final = state.verifications[-1]
    if final.passed or len(state.verifications) >= MAX_LOOPS or not state.gaps:
        return "report"
    return "research"


def build_deep_graph(*, resolve: Resolve, llm: LLM | None) -> StateGraph[DeepState]:
    """The workflow, not yet compiled; ``resolve(state)`` gives the session's search."""
    graph = StateGraph(DeepState)
    graph.add_node("query_parser", QueryParser(llm), timeout=STAGE_TIMEOUT)
    graph.add_node("search", Search(resolve), timeout=STAGE_TIMEOUT)
    graph.add_node("relevance_filter", RelevanceFilter(llm), timeout=STAGE_TIMEOUT)
    graph.add_node("deep_analysis", Analyse(llm), timeout=STAGE_TIMEOUT)
    graph.add_node("synthesis", Synthesis(llm), timeout=STAGE_TIMEOUT)
    graph.add_node("verification", Verify(llm), timeout=STAGE_TIMEOUT)
    graph.add_node("report", ReportWriter(), timeout=STAGE_TIMEOUT)
    graph.add_edge(START, "query_parser")
    graph.add_edge("query_parser", "search")
    graph.add_router(
        "search",
        after_search,
        {"filter": "relevance_filter", "retry": "query_parser", "report": "report"},
    )
    graph.add_router("relevance_filter", after_filter, ["deep_analysis"], join="synthesis")
    graph.add_edge("deep_analysis", "synthesis")
    graph.add_router("synthesis", after_synthesis, {"verify": "verification", "report": "report"})
    graph.add_router(
        "verification", after_verification, {"report": "report", "research": "query_parser"}
    )
    graph.add_edge("report", END)
    return graph
