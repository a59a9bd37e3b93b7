"""Two subgraphs run in parallel and meeting at a report, and agents handing off with
``Command``: ported word for word and in this engine's idiom."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel

from research_fsm.engine import END, START, Command, CompiledGraph, StateGraph, append

from .conftest import recorded


class Logs(BaseModel):
    logs: Annotated[list[str], append] = []
    report: str = ""


def checker(prefix: str) -> CompiledGraph[Logs]:
    async def read(state: Logs) -> dict[str, Any]:
        return {"logs": [f"{prefix} read"]}

    async def judge(state: Logs) -> dict[str, Any]:
        return {"logs": [f"{prefix} judged {len(state.logs)}"]}

    child = StateGraph(Logs).add_node("read", read).add_node("judge", judge)
    child.add_edge(START, "read").add_edge("read", "judge").add_edge("judge", END)
    return child.compile()


async def report(state: Logs) -> dict[str, Any]:
    return {"report": f"{len(state.logs)} lines"}


async def subgraphs(idiomatic: bool) -> dict[str, Any]:
    builder = StateGraph(Logs)
    builder.add_node("errors", checker("errors")).add_node("latency", checker("latency"))
    builder.add_node("report", report)
    if idiomatic:  # one list edge out, one list edge in
        builder.add_edge(START, ["errors", "latency"])
        builder.add_edge(["errors", "latency"], "report")
    else:  # two plain edges out of START and into report, as LangGraph writes them
        builder.add_edge(START, "errors").add_edge(START, "latency")
        builder.add_edge("errors", "report").add_edge("latency", "report")
    builder.add_edge("report", END)
    final = (await builder.compile().run({"logs": []}, thread_id="t")).state.model_dump()
    return {"final": {**final, "logs": sorted(final["logs"])}}


async def test_parallel_subgraphs_word_for_word() -> None:
    """Two plain edges out of START are a fan-out and `report` runs once after both
    children: LangGraph's logs and report."""
    assert await subgraphs(idiomatic=False) == recorded("subgraphs")


async def test_parallel_subgraphs_idiomatic() -> None:
    """List edges out and in: the same."""
    assert await subgraphs(idiomatic=True) == recorded("subgraphs")


class Desk(BaseModel):
    request: str = ""
    trail: Annotated[list[str], append] = []


async def triage(state: Desk) -> Command[Literal["billing", "tech", "__end__"]]:
    if len(state.trail) >= 3:
        return Command(goto=END, update={"trail": ["triage: done"]})
    target = "billing" if "refund" in state.request else "tech"
    return Command(goto=target, update={"trail": [f"triage -> {target}"]})


async def billing(state: Desk) -> Command[Literal["triage"]]:
    return Command(goto="triage", update={"trail": ["billing: refunded"]})


async def tech(state: Desk) -> Command[Literal["billing", "triage"]]:
    return Command(goto="billing", update={"trail": ["tech: needs a refund"]})


async def handoffs(idiomatic: bool) -> dict[str, Any]:
    builder = StateGraph(Desk)
    if idiomatic:  # destinations declared, labelled on the drawing
        builder.add_node(
            "triage", triage, destinations={"billing": "money", "tech": "bugs", END: "done"}
        )
        builder.add_node("billing", billing, destinations=["triage"])
        builder.add_node("tech", tech, destinations=["billing", "triage"])
    else:  # the destinations read from -> Command[Literal[...]]
        builder.add_node("triage", triage).add_node("billing", billing).add_node("tech", tech)
    builder.add_edge(START, "triage")
    app = builder.compile()
    out = {}
    for name, request in [("refund", "refund please"), ("broken", "it is broken")]:
        result = await app.run({"request": request, "trail": []}, thread_id=name)
        out[name] = result.state.model_dump()
    return out


async def test_handoffs_word_for_word() -> None:
    """`-> Command[Literal[...]]` gives each agent's destinations: LangGraph's trails."""
    assert await handoffs(idiomatic=False) == recorded("handoffs")


async def test_handoffs_idiomatic() -> None:
    """Destinations declared with labels: the same trails."""
    assert await handoffs(idiomatic=True) == recorded("handoffs")
