"""Child program of the cross-process race tests: a worker that races on command.

Usage: ``python race_child.py``. It reads one JSON command per line on stdin, prepares (parses, builds), prints ``ready``, waits until the command's
``go`` file exists (every worker is released at once), runs it and prints one
JSON line with the outcome: ``{"outcome": "ok" | <exception class name>, "pid": ...}``. A command's optional
``after`` delays that worker's start by so many seconds past the go.

Every command but ``exit`` names its ``store`` directory (a ``JsonFileCheckpointStore``
with durability "fsync"), and may say which kind of lease it takes (``range_locks``).
Commands:
  ``{"op": "resume", "token": str, "value": str, "go": path, "effects": path, "hold": s}``
      resume the ``pay`` graph; its ``resume`` appends ``resume <pid> <value>`` to
      ``effects`` (fsynced), then holds the thread ``hold`` seconds.
  ``{"op": "suspend", "thread": id, "go": path, "effects": path}`` start the ``pay``
      graph on a thread of its own (signing the token may create the store's key).
  ``{"op": "run", "thread": id, "label": str, "go": path, "effects": path, "hold": s}``
      one new turn of the ``bump`` graph; its node appends ``bump <pid> <label>``.
  ``{"op": "ask", "thread": id, "question": str, "go": path}`` the assistant's
      ``ask``, retried on ``ThreadBusy`` until it goes through.
  ``{"op": "clarify", "token": str, "answer": str, "go": path}`` the assistant's
      ``clarify``, once.
  ``{"op": "exit"}``
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm import ResearchAssistant
from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    EngineError,
    NodeContext,
    StateGraph,
    Suspend,
    ThreadBusy,
    append,
)
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs


class Ledger(BaseModel):
    """A counter and an append-only log of who did what."""

    n: int = 0
    log: Annotated[list[str], append] = []


SETTINGS: dict[str, Any] = {"effects": None, "hold": 0.0}
"""Where node code records its side effects, and how long it holds the thread."""


def side_effect(line: str) -> None:
    """Append ``line`` to the effects file (fsynced): what must happen exactly once."""
    fd = os.open(SETTINGS["effects"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class Pay:
    """Suspends to ask for an amount; ``resume`` pays it (the side effect)."""

    async def run(self, state: Ledger, ctx: NodeContext) -> Suspend:
        side_effect(f"run {os.getpid()}")
        return Suspend({"question": "how much?"})

    async def resume(self, state: Ledger, value: Any, ctx: NodeContext) -> dict[str, Any]:
        side_effect(f"resume {os.getpid()} {value}")
        await asyncio.sleep(SETTINGS["hold"])
        return {"n": state.n + 1, "log": [f"paid {value}"]}


async def bump(state: Ledger, ctx: NodeContext) -> dict[str, Any]:
    label = state.log[-1]
    side_effect(f"bump {os.getpid()} {label}")
    await asyncio.sleep(SETTINGS["hold"])
    return {"n": state.n + 1, "log": [f"done {label}"]}


def pay_app(store: CheckpointStore) -> CompiledGraph[Ledger]:
    """START -> pay -> END."""
    graph = StateGraph(Ledger)
    graph.add_node("pay", Pay()).add_edge(START, "pay").add_edge("pay", END)
    return graph.compile(store=store)


def bump_app(store: CheckpointStore) -> CompiledGraph[Ledger]:
    """START -> bump -> END; the input's last log entry labels the turn."""
    graph = StateGraph(Ledger)
    graph.add_node("bump", bump).add_edge(START, "bump").add_edge("bump", END)
    return graph.compile(store=store)


def make_assistant(store: CheckpointStore) -> ResearchAssistant:
    return ResearchAssistant(source=MockDataSource(), store=store)


async def execute(command: dict[str, Any]) -> dict[str, Any]:
    return {**await _execute(command), "pid": os.getpid()}


async def _execute(command: dict[str, Any]) -> dict[str, Any]:
    _fs.RANGE_LOCKS = command.get("range_locks", _fs.OFD_LOCKS)  # the test's kind of lease
    store = JsonFileCheckpointStore(command["store"], durability="fsync")
    op = command["op"]
    SETTINGS.update(effects=command.get("effects"), hold=command.get("hold", 0.0))
    assistant = make_assistant(store)
    if op in ("ask", "clarify"):
        await assistant.graph()
    print("ready", flush=True)
    go = Path(command["go"])
    while not go.exists():
        time.sleep(0.0005)
    time.sleep(command.get("after", 0.0))  # a staggered start, when asked for
    try:
        if op == "resume":
            result = await pay_app(store).resume(command["token"], command["value"])
            return {"outcome": "ok", "checkpoint_id": result.checkpoint_id}
        if op == "suspend":
            result = await pay_app(store).run({}, thread_id=command["thread"])
            assert result.suspension is not None
            return {"outcome": "ok", "token": str(result.suspension.token)}
        if op == "run":
            result = await bump_app(store).run(
                {"log": [command["label"]]}, thread_id=command["thread"]
            )
            return {"outcome": "ok", "checkpoint_id": result.checkpoint_id}
        if op == "clarify":
            reply = await assistant.clarify(command["token"], command["answer"])
            return {"outcome": "ok", "text": reply.text, "company": reply.company}
        busy = 0
        deadline = time.monotonic() + 30
        while True:  # op == "ask": serialise through ThreadBusy retries
            try:
                reply = await assistant.ask(command["question"], thread_id=command["thread"])
            except ThreadBusy:
                busy += 1
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(random.uniform(0.002, 0.02))
                continue
            return {"outcome": "ok", "text": reply.text, "company": reply.company, "busy": busy}
    except EngineError as exc:
        return {"outcome": type(exc).__name__, "message": str(exc)}


def main() -> None:
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "exit":
            return
        print(json.dumps(asyncio.run(execute(command))), flush=True)


if __name__ == "__main__":
    from research_fsm import configure_logging

    configure_logging("ERROR")
    main()
