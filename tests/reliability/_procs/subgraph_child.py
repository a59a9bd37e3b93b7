"""Child program of the subgraph process tests: one command, then it exits.

Usage: ``python subgraph_child.py COMMAND_JSON``. The command names its ``store``
directory (a ``JsonFileCheckpointStore`` with durability "fsync"), or a PostgreSQL
``dsn`` and ``schema`` (a ``PostgresCheckpointStore``), the ``effects``
file where node code records what it did (one fsynced line per side effect:
``<what> <pid>``), the ``gate`` file the gated nodes wait for, and the ``op``:
  ``{"op": "run", "thread": id}`` a new run on the thread;
  ``{"op": "continue", "thread": id}`` ``run(None)``;
  ``{"op": "resume", "token": str, "value": str}`` resume the parent's token;
  ``{"op": "delete", "thread": id}`` ``delete_thread`` (``"kill_after_deletes": n``:
  SIGKILL itself once the store deleted ``n`` threads);
  optional ``"go": path`` prints ``ready`` and waits for that file before working
  (and ``"after": s`` seconds more); ``"hold": s`` makes the child's resume sleep.
It prints one JSON line: ``{"outcome": "ok" | <EngineError class name>, "pid": ...}``
plus, when ok, the run's ``status``, ``notes`` and ``token`` (when suspended).

The graphs (the test module imports this file too, so both build the same ones): the
parent runs ``plan -> research -> write``; ``research`` is the child graph
``gather -> slow -> ask -> analyse`` (``slow`` waits for the gate on its first run
in a process told ``"slow_gate": true``; ``ask`` suspends; ``analyse`` waits for the
gate when ``"analyse_gate": true``); the child's output function waits for the gate
when ``"output_gate": true``: between the child's last checkpoint and the parent's.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    EngineError,
    NodeContext,
    StateGraph,
    Suspend,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs


class Notes(BaseModel):
    """The parent's and the child's state: a topic and notes appended."""

    topic: str = ""
    notes: Annotated[list[str], append] = []


SETTINGS: dict[str, Any] = {
    "effects": None,
    "gate": None,
    "slow_gate": False,
    "analyse_gate": False,
    "output_gate": False,
    "hold": 0.0,
}


def side_effect(what: str) -> None:
    """Append ``<what> <pid>`` to the effects file (fsynced)."""
    fd = os.open(SETTINGS["effects"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{what} {os.getpid()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def gate_open() -> bool:
    return SETTINGS["gate"] is not None and Path(SETTINGS["gate"]).exists()


async def wait_for_gate() -> None:
    while not gate_open():
        await asyncio.sleep(0.005)


def step(name: str, gate: str | None = None) -> Any:
    async def node(state: Notes, ctx: NodeContext) -> dict[str, Any]:
        side_effect(name)
        if gate is not None and SETTINGS[gate]:
            await wait_for_gate()
        side_effect(f"{name}-done")
        return {"notes": [name]}

    return node


class Ask:
    async def run(self, state: Notes, ctx: NodeContext) -> Suspend:
        side_effect("ask")
        return Suspend({"question": "go on?"})

    async def resume(self, state: Notes, value: Any, ctx: NodeContext) -> dict[str, Any]:
        side_effect(f"resume:{value}")
        await asyncio.sleep(SETTINGS["hold"])
        return {"notes": [f"answer={value}"]}


def output(child: Notes) -> dict[str, Any]:
    """The child's notes after the topic's, as the parent's update (blocks the whole
    process on the gate when told: the child is saved complete, the parent not yet)."""
    side_effect("output")
    while SETTINGS["output_gate"] and not gate_open():
        time.sleep(0.005)
    return {"notes": child.notes}


def app(store: CheckpointStore) -> CompiledGraph[Notes]:
    inner = StateGraph(Notes)
    inner.add_node("gather", step("gather")).add_node("slow", step("slow", "slow_gate"))
    inner.add_node("ask", Ask()).add_node("analyse", step("analyse", "analyse_gate"))
    inner.add_edge(START, "gather").add_edge("gather", "slow").add_edge("slow", "ask")
    inner.add_edge("ask", "analyse").add_edge("analyse", END)
    outer = StateGraph(Notes)
    outer.add_node("plan", step("plan"))
    outer.add_node("research", inner.compile(store=store), input=lambda s: {}, output=output)
    outer.add_node("write", step("write"))
    outer.add_edge(START, "plan").add_edge("plan", "research")
    outer.add_edge("research", "write").add_edge("write", END)
    return outer.compile(store=store)


def kill_after(store: CheckpointStore, deletes: int | None) -> None:
    """SIGKILL this process once ``store`` deleted ``deletes`` threads (``None``: never)."""
    if deletes is None:
        return
    real = store.delete
    done = {"n": 0}

    async def delete(thread_id: str, **kwargs: Any) -> None:
        await real(thread_id, **kwargs)
        side_effect(f"deleted:{thread_id}")
        done["n"] += 1
        if done["n"] == deletes:
            os.kill(os.getpid(), signal.SIGKILL)

    store.delete = delete  # type: ignore[method-assign]


def open_store(command: dict[str, Any]) -> CheckpointStore:
    """The command's store: PostgreSQL when it names a ``dsn`` (and ``schema``), else
    the file store in ``store``."""
    if command.get("dsn"):
        from research_fsm.stores.postgres import PostgresCheckpointStore

        return PostgresCheckpointStore(command["dsn"], schema=command["schema"])
    return JsonFileCheckpointStore(Path(command["store"]), durability="fsync")


async def work(command: dict[str, Any]) -> dict[str, Any]:
    store = open_store(command)
    await store.load_latest("warm-up")  # connect (and migrate) before working
    graph = app(store)
    go = command.get("go")
    if go is not None:
        print("ready", flush=True)
        while not Path(go).exists():
            await asyncio.sleep(0.002)
        await asyncio.sleep(command.get("after", 0.0))
    try:
        if command["op"] == "delete":
            kill_after(store, command.get("kill_after_deletes"))
            await graph.delete_thread(command["thread"])
            return {"outcome": "ok", "pid": os.getpid(), "status": "deleted", "notes": []}
        if command["op"] == "run":
            result = await graph.run({"topic": "t"}, thread_id=command["thread"])
        elif command["op"] == "continue":
            result = await graph.run(None, thread_id=command["thread"])
        else:
            result = await graph.resume(command["token"], command["value"])
    except EngineError as exc:
        return {"outcome": type(exc).__name__, "pid": os.getpid(), "message": str(exc)}
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()
    token = None if result.suspension is None else str(result.suspension.token)
    return {
        "outcome": "ok",
        "pid": os.getpid(),
        "status": result.status,
        "notes": result.state.notes,
        "token": token,
    }


def main() -> None:
    command = json.loads(sys.argv[1])
    _fs.RANGE_LOCKS = command.get("range_locks", _fs.RANGE_LOCKS)
    for key in SETTINGS:
        if key in command:
            SETTINGS[key] = command[key]
    print(json.dumps(asyncio.run(work(command))), flush=True)


if __name__ == "__main__":
    main()
