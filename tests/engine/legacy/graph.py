"""The graph that wrote the 0.1.0 threads under ``data/`` (only the public engine API,
so the same module runs on 0.1.0 and on today's code).

intake -> [ask (suspends), market, Send map over ``items``] -> synth -> review -> END;
``review`` suspends at the top level; a call may pause before ``synth``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, CheckpointStore, Send, StateGraph, Suspend, append


class Legacy(BaseModel):
    """The state of the 0.1.0 threads: an append log and a plain field."""

    log: Annotated[list[str], append] = []
    verdict: str = ""


class Asker:
    """A node that asks ``name?`` once and logs the answer it is resumed with."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, state: Legacy, ctx: Any) -> Any:
        return Suspend({"question": f"{self.name}?"}, update={"log": [f"asked {self.name}"]})

    async def resume(self, state: Legacy, value: Any, ctx: Any) -> dict[str, Any]:
        return {"log": [f"{self.name}={value}"]}


async def _intake(state: Legacy) -> dict[str, Any]:
    return {"log": ["intake"]}


async def _market(state: Legacy) -> dict[str, Any]:
    return {"log": ["market"]}


async def _item(state: Legacy, ctx: Any) -> dict[str, Any]:
    return {"log": [f"item:{ctx.item}"]}


async def _synth(state: Legacy) -> dict[str, Any]:
    return {"log": ["synth"]}


async def _review(state: Legacy, ctx: Any) -> Any:
    if ctx.resuming:
        return {"verdict": str(ctx.resume_value), "log": ["reviewed"]}
    return Suspend({"question": "approve?"})


def legacy_graph(store: CheckpointStore, **compile_args: Any) -> Any:
    """The compiled graph of the 0.1.0 threads on ``store``."""
    graph = StateGraph(Legacy)
    graph.add_node("intake", _intake)
    graph.add_node("ask", Asker("ask"))
    graph.add_node("market", _market)
    graph.add_node("item", _item)
    graph.add_node("synth", _synth)
    graph.add_node("review", _review)
    graph.add_edge(START, "intake")
    graph.add_router(
        "intake",
        lambda s: ["ask", "market", Send("item", "a"), Send("item", "b")],
        {"ask": "ask", "market": "market", "item": "item"},
        join="synth",
    )
    graph.add_edge("ask", "synth")
    graph.add_edge("market", "synth")
    graph.add_edge("item", "synth")
    graph.add_edge("synth", "review")
    graph.add_edge("review", END)
    return graph.compile(store=store, **compile_args)
