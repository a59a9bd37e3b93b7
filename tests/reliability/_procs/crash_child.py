"""Child program of the crash-consistency tests: works until it is SIGKILLed.

Usage: ``python crash_child.py MODE STORE_DIR LOG_FILE`` with MODE ``engine`` or
``assistant``. It builds its graph (no disk I/O yet), prints ``ready``, waits for a
line on stdin, then runs conversations forever over threads ``<mode>-0``,
``<mode>-1``... with ``JsonFileCheckpointStore(STORE_DIR, durability="fsync")``,
continuing whatever a killed predecessor left behind. Each time a ``run``,
``resume`` or ``ask`` call RETURNS it appends one JSON line to LOG_FILE and
fsyncs it, so the parent knows which calls completed before the kill.

The test module imports this file too: the graph, the script and ``advance`` (one
step of a conversation) are shared, so the parent continues a thread exactly as
the child would have.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm import ResearchAssistant
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
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore

ENGINE_TURNS = 6
"""Turns per engine thread; odd turns suspend for a resume value."""
SCRIPT = (
    "Tell me about the company",  # asks back which company
    "Apple",  # answers the clarification
    "What about their stock?",
    "Now tell me about Tesla",
)
"""One assistant conversation: 7 messages, below the folding threshold of 10."""
ASSISTANT_KEEP = 5
"""The assistant's store prunes to this many checkpoints, so kills hit pruning too."""


# -- the engine conversation -------------------------------------------------------


class Turns(BaseModel):
    """An engine thread: turn number, node counter, an append-only log, a digest chain."""

    turn: int = 0
    n: int = 0
    asked: int = 0
    digest: str = ""
    log: Annotated[list[str], append] = []


async def work(state: Turns) -> dict[str, Any]:
    """A little CPU work: extend the digest chain."""
    digest = state.digest.encode()
    for _ in range(300):
        digest = hashlib.sha256(digest + f"w{state.turn}".encode()).hexdigest().encode()
    return {"n": state.n + 1, "digest": digest.decode(), "log": [f"w{state.turn}"]}


class AskOnOddTurns:
    """Suspends on odd turns (``resume`` takes the value); passes on even ones."""

    async def run(self, state: Turns, ctx: NodeContext) -> Any:
        if state.turn % 2:
            return Suspend({"turn": state.turn}, update={"asked": state.turn})
        return {"n": state.n + 1, "log": [f"skip{state.turn}"]}

    async def resume(self, state: Turns, value: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"n": state.n + 1, "log": [f"ans{state.turn}:{value}"]}


async def finish(state: Turns) -> dict[str, Any]:
    return {"n": state.n + 1, "log": [f"done{state.turn}"]}


def engine_app(store: CheckpointStore) -> CompiledGraph[Turns]:
    """START -> work -> ask -> finish -> END."""
    graph = StateGraph(Turns)
    graph.add_node("work", work).add_node("ask", AskOnOddTurns()).add_node("finish", finish)
    graph.add_edge(START, "work").add_edge("work", "ask").add_edge("ask", "finish")
    graph.add_edge("finish", END)
    return graph.compile(store=store)


async def advance_engine(app: CompiledGraph[Turns], thread_id: str) -> dict[str, Any] | None:
    """Make one call that moves the thread on; ``None`` once it has all its turns."""
    snapshot = await app.get_state(thread_id)
    if snapshot is None:
        kind, result = "start", await app.run({"turn": 1, "log": ["in1"]}, thread_id=thread_id)
    elif snapshot.suspension is not None:
        value = f"v{snapshot.state.turn}"
        kind, result = "resume", await app.resume(snapshot.suspension.token, value)
    elif snapshot.status != "completed":  # stopped midway (killed)
        kind, result = "continue", await app.run(None, thread_id=thread_id)
    elif snapshot.state.turn >= ENGINE_TURNS:
        return None
    else:
        turn = snapshot.state.turn + 1
        kind = "turn"
        result = await app.run({"turn": turn, "log": [f"in{turn}"]}, thread_id=thread_id)
    return {
        "thread": thread_id,
        "kind": kind,
        "status": result.status,
        "checkpoint_id": result.checkpoint_id,
        "turn": result.state.turn,
    }


# -- the assistant conversation ----------------------------------------------------


def make_assistant(store: CheckpointStore) -> ResearchAssistant:
    """The real assistant, offline over the design's mock companies."""
    return ResearchAssistant(source=MockDataSource(), store=store)


async def advance_assistant(assistant: ResearchAssistant, thread_id: str) -> dict[str, Any] | None:
    """Make one call that moves the conversation on; ``None`` once SCRIPT is done.

    A question interrupted midway is finished with ``run(None)``; otherwise the
    next question is the one after those already in the messages (each question of
    SCRIPT, the clarification answer included, adds exactly one user message).
    """
    app = await assistant.graph()
    snapshot = await app.get_state(thread_id)
    if snapshot is not None and snapshot.status not in ("completed", "suspended"):
        result = await app.run(None, thread_id=thread_id)
        return {
            "thread": thread_id,
            "kind": "continue",
            "status": result.status,
            "question": None,
            "text": result.state.final_summary,
        }
    asked = 0 if snapshot is None else sum(m.role == "user" for m in snapshot.state.messages)
    if asked >= len(SCRIPT):
        return None
    reply = await assistant.ask(SCRIPT[asked], thread_id=thread_id)
    return {
        "thread": thread_id,
        "kind": "ask",
        "status": reply.status,
        "question": SCRIPT[asked],
        "text": reply.text,
    }


# -- the program -------------------------------------------------------------------


def log_line(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


async def main(mode: str, directory: Path, log: Path) -> None:
    if mode == "engine":
        app = engine_app(JsonFileCheckpointStore(directory, durability="fsync"))

        async def step(thread_id: str) -> dict[str, Any] | None:
            return await advance_engine(app, thread_id)
    else:
        store = JsonFileCheckpointStore(directory, durability="fsync", keep=ASSISTANT_KEEP)
        assistant = make_assistant(store)
        await assistant.graph()  # builds the company index: no store I/O

        async def step(thread_id: str) -> dict[str, Any] | None:
            return await advance_assistant(assistant, thread_id)

    print("ready", flush=True)
    if (await asyncio.to_thread(sys.stdin.readline)).strip() != "go":
        return  # the parent went away
    number = 0
    while True:
        thread_id = f"{mode}-{number}"
        while (record := await step(thread_id)) is not None:
            log_line(log, record)
        number += 1


if __name__ == "__main__":
    from research_fsm import configure_logging

    configure_logging("WARNING")
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
