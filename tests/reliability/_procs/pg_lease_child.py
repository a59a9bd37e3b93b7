"""Child program of the PostgreSQL lease-loss tests: resume one token until its thread ends.

Usage: ``python pg_lease_child.py DSN SCHEMA LOG_FILE``. Prints ``ready`` once its
store is open, then reads commands from stdin, one per line: ``go THREAD TOKEN``
resumes TOKEN (then, once it is stale, continues the thread with ``run(None)``)
until a call returns, retrying after ``ThreadBusy``, ``LeaseLost`` and (while the
server restarts) ``StoreUnavailable``; it then prints ``done`` (``timeout`` after
``DEADLINE`` seconds). Every record goes to LOG_FILE as one JSON line:

* ``{"exec": id, "call": c, "node": n, "prev": p}``: node ``n`` ran in call ``c``
  after the node execution ``p`` (the last id in the state's log; ``None``: none);
  the node adds ``id`` to the log;
* ``{"saved": checkpoint_id, "call": c}``: a save returned (the store acknowledged it);
* ``{"call": c, "op": "resume" | "run", "outcome": "completed" | error class name,
  "checkpoint": id}``: a call ended.

The test module imports this file too, so the parent builds the very same graph.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    Checkpoint,
    CompiledGraph,
    EngineError,
    LeaseLost,
    NodeContext,
    StaleResumeToken,
    StateGraph,
    Suspend,
    ThreadBusy,
    ThreadSuspended,
    append,
)

STEPS = 6
"""Nodes after the resumed one."""
DEADLINE = 60.0
"""Seconds one ``go`` may take."""


class Trail(BaseModel):
    """The ids of the node executions the thread's state went through."""

    log: Annotated[list[str], append] = []


class Recorder:
    """Where node code and the store's saves write their records (LOG_FILE)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.call = ""

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def ran(self, node: str, state: Trail) -> str:
        exec_id = secrets.token_hex(6)
        prev = state.log[-1] if state.log else None
        self.write({"exec": exec_id, "call": self.call, "node": node, "prev": prev})
        return exec_id


def build(store: Any, recorder: Recorder | None) -> CompiledGraph[Trail]:
    """START -> ask (suspends; its resume records) -> s1 -> ... -> s{STEPS} -> END."""

    class Ask:
        async def run(self, state: Trail, ctx: NodeContext) -> Suspend:
            return Suspend({"question": "go?"})

        async def resume(self, state: Trail, value: Any, ctx: NodeContext) -> Any:
            return await work("ask", state)

    async def work(node: str, state: Trail) -> dict[str, Any]:
        exec_id = recorder.ran(node, state) if recorder is not None else node
        await asyncio.sleep(random.uniform(0.002, 0.03))
        return {"log": [exec_id]}

    def step(name: str) -> Any:
        async def node(state: Trail) -> dict[str, Any]:
            return await work(name, state)

        return node

    graph = StateGraph(Trail)
    graph.add_node("ask", Ask())
    graph.add_edge(START, "ask")
    previous = "ask"
    for number in range(1, STEPS + 1):
        graph.add_node(f"s{number}", step(f"s{number}"))
        graph.add_edge(previous, f"s{number}")
        previous = f"s{number}"
    graph.add_edge(previous, END)
    return graph.compile(store=store)


async def follow(app: CompiledGraph[Trail], recorder: Recorder, thread: str, token: str) -> bool:
    """Resume ``token`` (then continue the thread) until a call returns; False at the deadline."""
    from research_fsm.stores.postgres import StoreUnavailable

    op = "resume"
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        recorder.call = f"{os.getpid()}-{secrets.token_hex(4)}"
        record: dict[str, Any] = {"call": recorder.call, "op": op, "checkpoint": None}
        try:
            if op == "resume":
                result = await app.resume(token, "yes")
            else:
                result = await app.run(None, thread_id=thread)
        except (ThreadBusy, LeaseLost, StoreUnavailable) as exc:
            record["outcome"] = type(exc).__name__
            recorder.write(record)
            await asyncio.sleep(random.uniform(0.005, 0.02))
            continue
        except (StaleResumeToken, ThreadSuspended) as exc:
            record["outcome"] = type(exc).__name__
            recorder.write(record)
            op = "run" if isinstance(exc, StaleResumeToken) else "resume"
            continue
        except EngineError as exc:  # recorded: the test says which are allowed
            record["outcome"] = type(exc).__name__
            record["message"] = str(exc)
            recorder.write(record)
            await asyncio.sleep(0.02)
            continue
        record.update(outcome=result.status, checkpoint=result.checkpoint_id)
        recorder.write(record)
        return True
    return False


async def main(dsn: str, schema: str, log: Path) -> None:
    from research_fsm.stores.postgres import PostgresCheckpointStore

    store = PostgresCheckpointStore(dsn, schema=schema, pool_size=2)
    recorder = Recorder(log)
    save = store.save

    async def acknowledged(checkpoint: Checkpoint) -> None:
        await save(checkpoint)
        recorder.write({"saved": checkpoint.checkpoint_id, "call": recorder.call})

    store.save = acknowledged  # type: ignore[method-assign]
    app = build(store, recorder)
    await store.load_latest("warm-up")  # connect and migrate before the first command
    print("ready", flush=True)
    while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
        _, thread, token = line.split()
        print("done" if await follow(app, recorder, thread, token) else "timeout", flush=True)
    await store.aclose()


if __name__ == "__main__":
    from research_fsm import configure_logging

    configure_logging("ERROR")
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
