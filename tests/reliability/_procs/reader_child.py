"""Child program of the read-load test: reads threads another process is running.

Usage: ``python reader_child.py '<json>'`` with ``{"store": dir, "threads": [ids],
"stop": path, "seconds": s, "range_locks": bool}``. Until the ``stop`` file exists (or
``seconds`` pass) it reads a random thread of ``threads`` through a
``JsonFileCheckpointStore(durability="fsync")``: ``get_state``, ``history`` and
``load_latest`` (once it has read one, it prints ``ready``). Then it prints one JSON line: ``{"reads": n, "seen": [checkpoint
ids], "backwards": [...], "errors": [...]}``: every checkpoint it was shown, each
time a thread's newest checkpoint went back to an older seq, and every error.
The test imports it too, for the graph (``build``).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    NodeContext,
    StateGraph,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs

NODES = ("a", "b", "c")


class Tally(BaseModel):
    """A counter and the nodes that ran, in order."""

    n: int = 0
    log: Annotated[list[str], append] = []


def counted(name: str, executed: Counter[tuple[str, str, int]]) -> Any:
    """Node ``name``: bumps ``n``, logs its name, counts its run in ``executed``."""

    async def node(state: Tally, ctx: NodeContext) -> dict[str, Any]:
        executed[(ctx.thread_id, name, state.n)] += 1
        await asyncio.sleep(0)
        return {"n": state.n + 1, "log": [name]}

    node.__name__ = f"node_{name}"
    return node


def build(store: CheckpointStore, executed: Counter[tuple[str, str, int]]) -> CompiledGraph[Tally]:
    """START -> a -> b -> c -> END; each node counts its run in ``executed`` under
    (thread, node, n seen): a node run twice on the same state counts 2."""
    graph = StateGraph(Tally)
    previous = START
    for name in NODES:
        graph.add_node(name, counted(name, executed))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(store=store)


async def read(command: dict[str, Any]) -> dict[str, Any]:
    store = JsonFileCheckpointStore(command["store"], durability="fsync")
    app = build(store, Counter())
    stop = Path(command["stop"])
    threads: list[str] = command["threads"]
    deadline = time.monotonic() + command["seconds"]
    seen: set[str] = set()
    newest: dict[str, int] = {}
    backwards: list[str] = []
    errors: list[str] = []
    reads = 0
    await app.get_state(threads[0])
    print("ready", flush=True)
    while time.monotonic() < deadline and not stop.exists():
        thread = random.choice(threads)
        try:
            snap = await app.get_state(thread)
            if snap is not None:
                seen.add(snap.checkpoint_id)
            seen.update([cp.checkpoint_id async for cp in store.history(thread)])
            latest = await store.load_latest(thread)
            if latest is not None:
                seen.add(latest.checkpoint_id)
                if latest.seq < newest.get(thread, 0):
                    backwards.append(f"{thread}: seq {newest[thread]} -> {latest.seq}")
                newest[thread] = max(latest.seq, newest.get(thread, 0))
        except Exception as exc:  # reported to the test, which fails on any
            errors.append(f"{thread}: {exc!r}")
        reads += 1
    return {"reads": reads, "seen": sorted(seen), "backwards": backwards, "errors": errors}


def main() -> None:
    command = json.loads(sys.argv[1])
    _fs.RANGE_LOCKS = command["range_locks"]
    print(json.dumps(asyncio.run(read(command))), flush=True)


if __name__ == "__main__":
    main()
