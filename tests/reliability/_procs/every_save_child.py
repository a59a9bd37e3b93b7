"""Child program of the SIGKILL-at-every-save test: drives one conversation and kills
itself at one of its saves.

Usage: ``python every_save_child.py COMMAND_JSON``. The command names its ``store``
directory (a ``JsonFileCheckpointStore`` with durability "fsync"), or a PostgreSQL
``dsn`` and ``schema``; the ``effects`` file where node code records each execution
(one line per execution, the node's name; ``save <n>`` lines mark the saves); and
``kill_at`` (the save to die at, counting from 1) with ``when`` (``"before"``: the
save not made; ``"after"``: made, but the caller never learns it). It prints
``not killed`` and exits 0 when the conversation ends before that save.

The graphs (the test imports this file too, so both build the same ones): the parent
runs ``plan -> research -> write`` and pauses before ``write`` (``interrupt_before``);
``research`` is the child graph ``gather -> ask -> analyse`` (compiled without a
store: it runs on the parent's), whose ``ask`` suspends. ``advance`` takes the
conversation one call further: start it, answer ``ask``, edit the paused state by
hand (``update_state``), then go on past the pause.
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
    StateGraph,
    Suspend,
    append,
)

EXPECTED_LOG = ["plan", "gather", "ask=yes", "analyse", "edited", "write"]
"""The parent's ``log`` once the conversation is over: each step's once."""


class Parent(BaseModel):
    log: Annotated[list[str], append] = []
    edited: bool = False


class Child(BaseModel):
    log: Annotated[list[str], append] = []


def app_on(store: CheckpointStore, effects: Path) -> CompiledGraph[Parent]:
    """The parent graph on ``store``, its nodes recording each execution in ``effects``."""

    def step(name: str) -> Any:
        async def node(state: BaseModel) -> dict[str, Any]:
            effect(effects, name)
            return {"log": [name]}

        return node

    async def ask(state: Child, ctx: NodeContext) -> dict[str, Any] | Suspend:
        if not ctx.resuming:
            effect(effects, "ask?")
            return Suspend("go on?")
        effect(effects, f"ask={ctx.resume_value}")
        return {"log": [f"ask={ctx.resume_value}"]}

    child = StateGraph(Child)
    child.add_node("gather", step("gather")).add_node("ask", ask)
    child.add_node("analyse", step("analyse"))
    child.add_edge(START, "gather").add_edge("gather", "ask").add_edge("ask", "analyse")
    child.add_edge("analyse", END)
    parent = StateGraph(Parent)
    parent.add_node("plan", step("plan")).add_node("research", child.compile())
    parent.add_node("write", step("write"))
    parent.add_edge(START, "plan").add_edge("plan", "research").add_edge("research", "write")
    parent.add_edge("write", END)
    return parent.compile(store=store, interrupt_before=["write"])


async def advance(app: CompiledGraph[Parent], thread: str) -> str | None:
    """Take the conversation on ``thread`` one call further; ``None`` once it is over."""
    snapshot = await app.get_state(thread)
    if snapshot is None:
        await app.run({}, thread_id=thread)
        return "run"
    if snapshot.status == "completed":
        return None
    suspension = snapshot.suspension
    if snapshot.status != "suspended" or suspension is None:
        await app.run(None, thread_id=thread)  # stopped midway: go on
        return "continue"
    if suspension.breakpoint is None:
        await app.resume(suspension.token, "yes")
        return "answer"
    if not snapshot.state.edited:
        await app.update_state(thread, {"edited": True, "log": ["edited"]})
        return "edit"
    await app.resume(suspension.token, None)
    return "go on"


async def main(command: dict[str, Any]) -> None:
    effects = Path(command["effects"])
    store = killing_store(command, effects)
    app = app_on(store, effects)
    while await advance(app, "t") is not None:
        pass
    print("not killed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
