"""Custom graph: the engine on its own, without the research assistant.

Run it with ``python examples/custom_graph.py``.

A pydantic state with an ``append`` reducer, two async nodes in a loop chosen
by a router, and a node class that suspends for human approval: ``run`` asks,
``resume`` receives the answer (the code before ``Suspend`` never runs twice).
The graph is printed as Mermaid, run until it suspends, then resumed with the
token's string form. Checkpoints live in memory (the default store).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, NodeContext, StateGraph, Suspend, append


class Doc(BaseModel):
    log: Annotated[list[str], append] = []  # each update's list is appended
    draft: str = ""
    revisions: int = 0
    approved: bool = False


async def write(state: Doc) -> dict[str, Any]:
    n = state.revisions + 1
    return {"draft": f"Release notes v{n}", "revisions": n, "log": [f"wrote v{n}"]}


async def review(state: Doc) -> dict[str, Any]:
    return {"log": [f"reviewed v{state.revisions}"]}


def good_enough(state: Doc) -> str:
    return "done" if state.revisions >= 3 else "again"


class Approve:
    async def run(self, state: Doc, ctx: NodeContext) -> Suspend:
        return Suspend({"question": f"Publish {state.draft!r}?"})

    async def resume(self, state: Doc, value: str, ctx: NodeContext) -> dict[str, Any]:
        return {"approved": value == "yes", "log": [f"human said {value!r}"]}


graph = StateGraph(Doc)
graph.add_node("write", write)
graph.add_node("review", review)
graph.add_node("approve", Approve())
graph.add_edge(START, "write")
graph.add_edge("write", "review")
graph.add_router("review", good_enough, {"again": "write", "done": "approve"})
graph.add_edge("approve", END)
app = graph.compile()


async def main() -> None:
    print(app.to_mermaid())

    result = await app.run({}, thread_id="doc-1")
    print(f"status: {result.status}, path: {' -> '.join(result.path)}")
    if result.suspension is None:
        raise SystemExit("expected the approval step to suspend")
    token = str(result.suspension.token)  # a plain string, e.g. for a browser
    print(f"asks:   {result.suspension.payload['question']}")
    print(f"token:  {token}\n")

    final = await app.resume(token, "yes")
    print(f"status: {final.status}, path: {' -> '.join(final.path)}")
    print(f"final state: {final.state.model_dump()}")


if __name__ == "__main__":
    asyncio.run(main())
