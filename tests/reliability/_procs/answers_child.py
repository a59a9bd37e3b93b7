"""Child program of the SIGKILL-at-every-save test of ``interrupt()``'s answers: drives
one node that asks three questions (and a fan-out of two branches that ask two each)
and kills itself at one of its saves.

Usage: ``python answers_child.py COMMAND_JSON``. The command names its ``store``
directory (a ``JsonFileCheckpointStore`` with durability "fsync"), or a PostgreSQL
``dsn`` and ``schema``; the ``effects`` file where a node records each return (one
line per return; ``save <n>`` lines mark the saves); ``kill_at`` (the save to die at,
counting from 1) with ``when`` (``"before"``: the save not made; ``"after"``: made,
but the caller never learns it). It prints ``not killed`` and exits 0 when the
conversation ends before that save. Each question's answer is derived from it
(``answer_to``), so a resume after a kill gives the same answer the killed one did.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

from _killing import effect, killing_store
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    NodeContext,
    Send,
    StateGraph,
    append,
    interrupt,
)

EXPECTED = ["ask:a1,a2,a3", "x:x-ab1,x-ab2", "y:y-ab1,y-ab2"]
"""The ``got`` list once the conversation is over: each node's answers once, in order."""


class State(BaseModel):
    got: Annotated[list[str], append] = []


def answer_to(question: str) -> str:
    return question.replace("q", "a").replace("?", "")


def app_on(store: CheckpointStore, effects: Path) -> CompiledGraph[State]:
    """``ask`` (three questions), then a fan-out whose two branches ask two each."""

    async def ask(state: State) -> dict[str, Any]:
        answers = [interrupt("q1?"), interrupt("q2?"), interrupt("q3?")]
        effect(effects, "ask")
        return {"got": ["ask:" + ",".join(answers)]}

    async def branch(state: State, ctx: NodeContext) -> dict[str, Any]:
        answers = [interrupt(f"{ctx.item}-qb1?"), interrupt(f"{ctx.item}-qb2?")]
        effect(effects, f"branch {ctx.item}")
        return {"got": [f"{ctx.item}:" + ",".join(sorted(answers))]}

    async def meet(state: State) -> dict[str, Any]:
        return {}

    builder = StateGraph(State).add_node("ask", ask).add_node("branch", branch)
    builder.add_node("meet", meet)
    builder.add_edge(START, "ask")
    builder.add_router("ask", lambda s: [Send("branch", "x"), Send("branch", "y")], ["branch"])
    builder.add_edge("branch", "meet").add_edge("meet", END)
    return builder.compile(store=store)


async def advance(app: CompiledGraph[State], thread: str, effects: Path) -> str | None:
    """Take the conversation one call further (its first open question answered,
    recorded as ``answered <question>`` once the resume returns); ``None`` once it is
    over."""
    snapshot = await app.get_state(thread)
    if snapshot is None:
        await app.run({}, thread_id=thread)
        return "run"
    if snapshot.status == "completed":
        return None
    if snapshot.status != "suspended" or not snapshot.suspensions:
        await app.run(None, thread_id=thread)  # stopped midway: go on
        return "continue"
    first = min(snapshot.suspensions, key=lambda s: str(s.payload))
    await app.resume(first.token, answer_to(str(first.payload)))
    effect(effects, f"answered {first.payload}")
    return "answer"


async def main(command: dict[str, Any]) -> None:
    effects = Path(command["effects"])
    store = killing_store(command, effects)
    app = app_on(store, effects)
    while await advance(app, "t", effects) is not None:
        pass
    print("not killed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
