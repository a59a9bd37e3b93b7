"""The Q&A graph: its agents (``agent_table``) and three routers on the engine."""

from __future__ import annotations

from ..common.files import Clock
from ..engine import END, START, StateGraph
from ..llm import LLM
from ..sources import CompanyIndex, DataSource
from .agents import (
    ClarityAgent,
    ErrorRecoveryAgent,
    InterruptAgent,
    ResearchAgent,
    SynthesisAgent,
    ValidatorAgent,
)
from .constants import CONFIDENCE_THRESHOLD, MAX_RESEARCH_ATTEMPTS, NODE_TIMEOUT_SECONDS
from .state import ResearchState

__all__ = ["build_research_graph", "clarity_router", "research_router", "validation_router"]


def clarity_router(state: ResearchState) -> str:
    """error | needs_clarification | cancelled | off_topic | clear."""
    if state.error_context is not None:
        return "error"
    if state.clarity_status == "needs_clarification":
        return "needs_clarification"
    if state.clarity_status in ("cancelled", "off_topic"):
        return state.clarity_status
    return "clear"


def research_router(state: ResearchState) -> str:
    """error | no_findings | confident | uncertain."""
    if state.error_context is not None:
        return "error"
    if state.research_findings is None:
        return "no_findings"
    if state.confidence_score >= CONFIDENCE_THRESHOLD:
        return "confident"
    return "uncertain"


def validation_router(state: ResearchState) -> str:
    """error | retry | done. A retry happens only when it can change something: a
    source that ignores the validator's feedback would return the same findings."""
    if state.error_context is not None:
        return "error"
    if (
        state.validation_result == "insufficient"
        and state.research_attempts < MAX_RESEARCH_ATTEMPTS
        and state.research_repeatable
    ):
        return "retry"
    return "done"


def build_research_graph(
    *, source: DataSource, index: CompanyIndex, llm: LLM | None = None, clock: Clock | None = None
) -> StateGraph[ResearchState]:
    """The assistant's graph, not yet compiled (compile it with your store); ``clock``
    dates the answers' prompts (default: the system's)."""
    graph = StateGraph(ResearchState)
    # Every agent but interrupt (which only suspends) and error recovery itself
    # hands an unexpected failure to error recovery, and none may hang.
    for name, agent in (
        ("clarity", ClarityAgent(index, llm, source.describe)),
        ("research", ResearchAgent(source)),
        ("validator", ValidatorAgent(llm)),
        ("synthesis", SynthesisAgent(llm, clock)),
    ):
        graph.add_node(name, agent, timeout=NODE_TIMEOUT_SECONDS, on_error="error_recovery")
    graph.add_node("interrupt", InterruptAgent())
    graph.add_node("error_recovery", ErrorRecoveryAgent(), timeout=NODE_TIMEOUT_SECONDS)
    graph.add_edge(START, "clarity")
    graph.add_router(
        "clarity",
        clarity_router,
        {
            "needs_clarification": "interrupt",
            "clear": "research",
            "cancelled": "synthesis",
            "off_topic": "synthesis",
            "error": "error_recovery",
        },
    )
    graph.add_edge("interrupt", "clarity")
    graph.add_router(
        "research",
        research_router,
        {
            "confident": "synthesis",
            "no_findings": "synthesis",
            "uncertain": "validator",
            "error": "error_recovery",
        },
    )
    graph.add_router(
        "validator",
        validation_router,
        {"retry": "research", "done": "synthesis", "error": "error_recovery"},
    )
    graph.add_edge("synthesis", END)
    graph.add_edge("error_recovery", END)
    return graph
