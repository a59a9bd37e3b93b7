"""Child program: edits a thread by hand in a loop until it is killed.

Usage: ``python edit_child.py STORE_DIR LOG``. On a ``JsonFileCheckpointStore`` with
``durability="fsync"``, thread ``t`` of a two-node chain (``a -> b``) is started if
new; then, for i = the thread's ``n`` + 1, 2, ...: ``update_state("t", {"n": i,
"log": [str(i)]}, as_node="a")``, ``fork("t", None, f"f{i}")`` and, every third i,
``run(None)`` (node ``b``). A fork onto an existing thread fails the child (exit 1):
each ``f{i}`` is made once, as i follows the thread's ``n``. Each call that returned is appended to ``LOG`` (one line,
fsynced) before the next starts: ``update i``, ``fork i``, ``run i``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, CompiledGraph, StateGraph, append
from research_fsm.stores import JsonFileCheckpointStore


class Edited(BaseModel):
    n: int = 0
    log: Annotated[list[str], append] = []


def app_on(store: Any) -> CompiledGraph[Edited]:
    graph = StateGraph(Edited)

    async def a(state: Edited) -> dict[str, Any]:
        return {"log": ["a"]}

    async def b(state: Edited) -> dict[str, Any]:
        return {"log": ["b"]}

    graph.add_node("a", a).add_node("b", b)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph.compile(store=store)


def record(log: int, line: str) -> None:
    os.write(log, f"{line}\n".encode())
    os.fsync(log)


async def main(directory: Path, log_path: Path) -> None:
    app = app_on(JsonFileCheckpointStore(directory, durability="fsync"))
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    latest = await app.get_state("t")
    i = 0 if latest is None else latest.state.n
    if latest is None:
        await app.run({}, thread_id="t")
    while True:
        i += 1
        await app.update_state("t", {"n": i, "log": [str(i)]}, as_node="a")
        record(log, f"update {i}")
        await app.fork("t", None, f"f{i}")
        record(log, f"fork {i}")
        if i % 3 == 0:
            await app.run(None, thread_id="t")
            record(log, f"run {i}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
