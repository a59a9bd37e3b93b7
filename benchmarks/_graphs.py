"""The same graph in both engines.

Six no-op agents (pure state updates, optionally awaiting simulated I/O) with
the assistant's three routers and a state of the assistant's shape: a messages
list with an append reducer, fifteen scalar fields and ``findings``, a dict of
four short strings. The node logic and the routers are written once, over a
mapping (``model.__dict__`` for research_fsm, the state dict for LangGraph), so
both engines run exactly the same code per step.

Paths, chosen by the input's ``scenario``:

* ``happy``: clarity -> research -> synthesis (3 steps)
* ``retry``: clarity -> (research -> validator) x3 -> synthesis (8 steps)
* ``clarify``: clarity -> interrupt (suspends) | resume -> interrupt -> clarity ->
  research -> synthesis (2 steps, then 4)

LangGraph's state is a ``TypedDict`` (its fastest and most common form), ours a
pydantic model (the engine's only form).
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Hashable, Mapping
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, Field

from research_fsm.engine import (
    END,
    START,
    CompiledGraph,
    NodeContext,
    Replace,
    StateGraph,
    Suspend,
    append,
)
from research_fsm.qa.constants import (
    CONFIDENCE_THRESHOLD,
    MAX_RESEARCH_ATTEMPTS,
    MESSAGE_THRESHOLD,
    MESSAGES_TO_KEEP,
    SUMMARY_MAX_CHARS,
)

SCENARIOS = ("happy", "retry", "clarify")
STEPS = {"happy": 3, "retry": 8, "clarify": 6}
"""Node executions per path (for ``clarify``: 2 before the suspension, 4 after)."""

QUESTION = "What's happening with Apple?"
ANSWER = "Here's what I found about Apple Inc.: a short, fixed answer."
CLARIFY_QUESTION = "Tell me about the company"
CLARIFY_ANSWER = "Apple"
FINDINGS = {
    "overview": "Apple designs phones, computers and services.",
    "recent_news": "Apple announced new products this quarter.",
    "stock_info": "AAPL trades on NASDAQ.",
    "key_developments": "Services revenue keeps growing.",
}


# -- the state -----------------------------------------------------------------


class BenchState(BaseModel):
    """research_fsm's state: pydantic, ``append`` reducer on messages."""

    messages: Annotated[list[dict[str, str]], append] = Field(default_factory=list)
    conversation_summary: str | None = None
    detected_company: str | None = None
    original_query: str = ""
    clarity_status: str = "pending"
    clarification_attempts: int = 0
    clarification_question: str | None = None
    query_intent: str = "overview"
    confidence_score: int = 0
    research_attempts: int = 0
    validation_result: str = "pending"
    validation_feedback: str | None = None
    final_summary: str | None = None
    current_agent: str | None = None
    error: str | None = None
    scenario: str = "happy"
    findings: dict[str, str] = Field(default_factory=dict)


def lg_messages(old: list[dict[str, str]], new: Any) -> list[dict[str, str]]:
    """LangGraph's messages reducer: ``operator.add``, or a replacement
    (``{"replace": [...]}``) for the summarising variant."""
    if isinstance(new, dict) and "replace" in new:
        return list(new["replace"])
    merged: list[dict[str, str]] = operator.add(old, new)
    return merged


class LGState(TypedDict):
    """LangGraph's state: the same fields as ``BenchState``."""

    messages: Annotated[list[dict[str, str]], lg_messages]
    conversation_summary: str | None
    detected_company: str | None
    original_query: str
    clarity_status: str
    clarification_attempts: int
    clarification_question: str | None
    query_intent: str
    confidence_score: int
    research_attempts: int
    validation_result: str
    validation_feedback: str | None
    final_summary: str | None
    current_agent: str | None
    error: str | None
    scenario: str
    findings: dict[str, str]


RESETS: dict[str, Any] = {
    "clarity_status": "pending",
    "clarification_attempts": 0,
    "clarification_question": None,
    "query_intent": "overview",
    "confidence_score": 0,
    "research_attempts": 0,
    "validation_result": "pending",
    "validation_feedback": None,
    "final_summary": None,
    "error": None,
    "findings": {},
}


def question_input(scenario: str, text: str | None = None) -> dict[str, Any]:
    """A run's input: the user's message and every per-question reset."""
    if text is None:
        text = CLARIFY_QUESTION if scenario == "clarify" else QUESTION
    return {
        "messages": [{"role": "user", "content": text}],
        "original_query": text,
        **RESETS,
        "scenario": scenario,
    }


def lg_input(scenario: str, text: str | None = None, *, first: bool = True) -> dict[str, Any]:
    """``question_input``; for a new thread (``first``) also the fields that
    persist across questions, so every key of the TypedDict exists."""
    data = question_input(scenario, text)
    if first:
        data = {
            "conversation_summary": None,
            "detected_company": None,
            "current_agent": None,
            **data,
        }
    return data


# -- node logic, shared ------------------------------------------------------------


def fold_messages(s: Mapping[str, Any]) -> tuple[str, list[dict[str, str]]] | None:
    """The assistant's summarisation: with more than ``MESSAGE_THRESHOLD``
    messages, fold all but the last ``MESSAGES_TO_KEEP`` into a bounded summary."""
    messages = s["messages"]
    if len(messages) <= MESSAGE_THRESHOLD:
        return None
    old, recent = messages[:-MESSAGES_TO_KEEP], messages[-MESSAGES_TO_KEEP:]
    lines = [line for line in (s["conversation_summary"] or "").splitlines() if line.strip()]
    for message in old:
        text = " ".join(message["content"].split())[:160]
        lines.append(
            f"- User asked: {text}" if message["role"] == "user" else f"  Answered: {text}"
        )
    while lines and len("\n".join(lines)) > SUMMARY_MAX_CHARS:
        lines.pop(0)
    return "\n".join(lines), list(recent)


def clarity_update(s: Mapping[str, Any]) -> dict[str, Any]:
    if s["scenario"] == "clarify" and s["clarification_attempts"] == 0:
        return {
            "current_agent": "clarity",
            "clarity_status": "needs_clarification",
            "clarification_question": "Which company would you like me to research?",
            "clarification_attempts": s["clarification_attempts"] + 1,
        }
    return {
        "current_agent": "clarity",
        "clarity_status": "clear",
        "detected_company": "Apple Inc.",
        "query_intent": "news",
        "clarification_question": None,
    }


def interrupt_payload(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "clarification_needed",
        "question": s["clarification_question"],
        "original_query": s["original_query"],
        "attempt": s["clarification_attempts"],
    }


def interrupt_resume_update(value: Any) -> dict[str, Any]:
    answer = str(value)
    return {
        "messages": [{"role": "user", "content": answer}],
        "original_query": answer,
        "clarity_status": "pending",
        "current_agent": "interrupt",
    }


def research_update(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "current_agent": "research",
        "research_attempts": s["research_attempts"] + 1,
        "findings": dict(FINDINGS),
        "confidence_score": 3 if s["scenario"] == "retry" else 8,
    }


def validator_update(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "current_agent": "validator",
        "validation_result": "insufficient",
        "validation_feedback": "no recent news; search for the latest news",
    }


def synthesis_update(s: Mapping[str, Any], answer: str) -> dict[str, Any]:
    return {
        "current_agent": "synthesis",
        "final_summary": answer,
        "messages": [{"role": "assistant", "content": answer}],
    }


def error_recovery_update(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "current_agent": "error_recovery",
        "error": None,
        "final_summary": "Something went wrong.",
    }


def clarity_route(s: Mapping[str, Any]) -> str:
    if s["error"] is not None:
        return "error"
    if s["clarity_status"] == "needs_clarification":
        return "needs_clarification"
    if s["clarity_status"] == "cancelled":
        return "cancelled"
    return "clear"


def research_route(s: Mapping[str, Any]) -> str:
    if s["error"] is not None:
        return "error"
    if not s["findings"]:
        return "no_findings"
    if s["confidence_score"] >= CONFIDENCE_THRESHOLD:
        return "confident"
    return "uncertain"


def validation_route(s: Mapping[str, Any]) -> str:
    if s["error"] is not None:
        return "error"
    if s["validation_result"] == "insufficient" and s["research_attempts"] < MAX_RESEARCH_ATTEMPTS:
        return "retry"
    return "done"


CLARITY_TARGETS: dict[Hashable, str] = {
    "needs_clarification": "interrupt",
    "clear": "research",
    "cancelled": "synthesis",
    "error": "error_recovery",
}
RESEARCH_TARGETS: dict[Hashable, str] = {
    "confident": "synthesis",
    "no_findings": "synthesis",
    "uncertain": "validator",
    "error": "error_recovery",
}
VALIDATION_TARGETS: dict[Hashable, str] = {
    "retry": "research",
    "done": "synthesis",
    "error": "error_recovery",
}


# -- research_fsm ----------------------------------------------------------------------


class _Agent:
    """An agent as the assistant writes them: an object with ``async run(state, ctx)``."""

    def __init__(self, update: Any, delay: float, summarise: bool = False) -> None:
        self.update = update
        self.delay = delay
        self.summarise = summarise

    async def run(self, state: BenchState, ctx: NodeContext) -> dict[str, Any]:
        if self.delay:
            await asyncio.sleep(self.delay)
        s = state.__dict__
        update: dict[str, Any] = self.update(s)
        if self.summarise:
            folded = fold_messages(s)
            if folded is not None:
                update["conversation_summary"] = folded[0]
                update["messages"] = Replace(folded[1])
        return update


class _Interrupt:
    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def run(self, state: BenchState, ctx: NodeContext) -> Suspend:
        if self.delay:
            await asyncio.sleep(self.delay)
        return Suspend(interrupt_payload(state.__dict__), update={"current_agent": "interrupt"})

    async def resume(self, state: BenchState, value: Any, ctx: NodeContext) -> dict[str, Any]:
        if self.delay:
            await asyncio.sleep(self.delay)
        return interrupt_resume_update(value)


def build_rfsm(
    store: Any = None,
    *,
    io_delay: float = 0.0,
    summarise: bool = False,
    answer: str = ANSWER,
    guarded: bool = False,
) -> CompiledGraph[BenchState]:
    """research_fsm's graph; ``guarded`` adds the assistant's per-node timeout
    and ``on_error`` (not used for the side-by-side numbers: LangGraph has neither)."""
    g = StateGraph(BenchState)
    kw: dict[str, Any] = {"timeout": 120.0, "on_error": "error_recovery"} if guarded else {}
    g.add_node("clarity", _Agent(clarity_update, io_delay, summarise), **kw)
    g.add_node("interrupt", _Interrupt(io_delay))
    g.add_node("research", _Agent(research_update, io_delay), **kw)
    g.add_node("validator", _Agent(validator_update, io_delay), **kw)
    g.add_node("synthesis", _Agent(lambda s: synthesis_update(s, answer), io_delay), **kw)
    g.add_node(
        "error_recovery",
        _Agent(error_recovery_update, io_delay),
        timeout=120.0 if guarded else None,
    )
    g.add_edge(START, "clarity")
    g.add_router("clarity", lambda st: clarity_route(st.__dict__), CLARITY_TARGETS)
    g.add_edge("interrupt", "clarity")
    g.add_router("research", lambda st: research_route(st.__dict__), RESEARCH_TARGETS)
    g.add_router("validator", lambda st: validation_route(st.__dict__), VALIDATION_TARGETS)
    g.add_edge("synthesis", END)
    g.add_edge("error_recovery", END)
    return g.compile(store=store)


# -- LangGraph -------------------------------------------------------------------------


def build_langgraph(
    checkpointer: Any = None,
    *,
    io_delay: float = 0.0,
    summarise: bool = False,
    answer: str = ANSWER,
    async_nodes: bool = True,
) -> Any:
    """LangGraph's graph: async nodes for ``ainvoke``, plain functions for ``invoke``."""
    from langgraph.graph import END as LG_END
    from langgraph.graph import START as LG_START
    from langgraph.graph import StateGraph as LGStateGraph
    from langgraph.types import interrupt

    def agent(update: Any, fold: bool = False) -> Any:
        def apply(state: Mapping[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = update(state)
            if fold:
                folded = fold_messages(state)
                if folded is not None:
                    out["conversation_summary"] = folded[0]
                    out["messages"] = {"replace": folded[1]}
            return out

        if not async_nodes:
            return apply

        async def node(state: LGState) -> dict[str, Any]:
            if io_delay:
                await asyncio.sleep(io_delay)
            return apply(state)

        return node

    def interrupt_sync(state: LGState) -> dict[str, Any]:
        return interrupt_resume_update(interrupt(interrupt_payload(state)))

    async def interrupt_async(state: LGState) -> dict[str, Any]:
        if io_delay:
            await asyncio.sleep(io_delay)
        return interrupt_resume_update(interrupt(interrupt_payload(state)))

    g = LGStateGraph(LGState)
    g.add_node("clarity", agent(clarity_update, summarise))
    g.add_node("interrupt", interrupt_async if async_nodes else interrupt_sync)
    g.add_node("research", agent(research_update))
    g.add_node("validator", agent(validator_update))
    g.add_node("synthesis", agent(lambda s: synthesis_update(s, answer)))
    g.add_node("error_recovery", agent(error_recovery_update))
    g.add_edge(LG_START, "clarity")
    g.add_conditional_edges("clarity", clarity_route, CLARITY_TARGETS)
    g.add_edge("interrupt", "clarity")
    g.add_conditional_edges("research", research_route, RESEARCH_TARGETS)
    g.add_conditional_edges("validator", validation_route, VALIDATION_TARGETS)
    g.add_edge("synthesis", LG_END)
    g.add_edge("error_recovery", LG_END)
    return g.compile(checkpointer=checkpointer)


def lg_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


# -- checks: both engines take the same path -------------------------------------------


def expected_final(scenario: str) -> dict[str, Any]:
    return {
        "research_attempts": 3 if scenario == "retry" else 1,
        "validation_result": "insufficient" if scenario == "retry" else "pending",
        "current_agent": "synthesis",
        "clarification_attempts": 1 if scenario == "clarify" else 0,
    }


def check_final(engine: str, scenario: str, state: Mapping[str, Any]) -> None:
    """Raise if a run did not take ``scenario``'s path."""
    for key, value in expected_final(scenario).items():
        if state.get(key) != value:
            raise AssertionError(
                f"{engine}, {scenario} path: {key} = {state.get(key)!r}, expected {value!r}"
            )
