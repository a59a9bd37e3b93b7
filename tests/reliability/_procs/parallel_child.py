"""Child program of the parallel-branch process tests: one command, then it exits.

Usage: ``python parallel_child.py COMMAND_JSON``. The command names its ``store``
directory (a ``JsonFileCheckpointStore`` with durability "fsync"), the ``effects``
file where node code records what it did (one fsynced line per side effect:
``<what> <branch> <pid>``), the ``graph`` (``specialists``, ``failing``,
``askers`` or ``mapper``, see below) and the ``op``:
  ``{"op": "run", "thread": id}`` a new run on the thread;
  ``{"op": "continue", "thread": id}`` ``run(None)``: continue an interrupted run;
  ``{"op": "advance", "thread": id}`` ``run({})`` on a new thread, else ``run(None)``;
  ``{"op": "resume", "token": str, "value": str}`` resume one branch;
  optional ``"tokens": path`` writes the suspensions' tokens there (JSON list, in
  order) before printing; optional ``"go": path`` prints ``ready`` and waits for that
  file before working (to release several children at once); optional ``"gate":
  path`` is the file the blocking nodes wait for; ``"broken": true`` makes the
  ``failing`` graph's ``market`` raise; ``"hold": s`` makes each ``resume`` sleep;
  ``"after": s`` delays the start past the go by so many seconds; ``"range_locks"``
  says which kind of lease the store takes.
It prints one JSON line: ``{"outcome": "ok" | <EngineError class name>, "pid": ...}``
plus, when ok, the run's ``status``, ``log``, ``summary``, ``path`` and suspended
``branches``.

The test module imports this file too, so the parent builds the very same graphs.
"""

from __future__ import annotations

import asyncio
import json
import os
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
    RetryPolicy,
    RunResult,
    Send,
    StateGraph,
    Suspend,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs


class Findings(BaseModel):
    """What the branches found (merged at the join) and the join's summary."""

    log: Annotated[list[str], append] = []
    summary: str = ""


SETTINGS: dict[str, Any] = {"effects": None, "gate": None, "broken": False, "hold": 0.0}
"""Where node code records its side effects, what the blocking nodes wait for, whether
``market`` of the failing graph is broken, how long each resume holds the thread."""

BRANCHES = ("financial", "market", "product", "news")
"""The fan-out of ``specialists`` and ``failing``, in declared order."""


def side_effect(what: str, ctx: NodeContext | None) -> None:
    """Append ``<what> <branch> <pid>`` to the effects file (fsynced): what must happen
    exactly once."""
    branch = ctx.branch if ctx is not None and ctx.branch else "-"
    fd = os.open(SETTINGS["effects"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{what} {branch} {os.getpid()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def effects(path: Path) -> list[str]:
    """The side effects recorded so far: ``<what> <branch>`` (pids dropped)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.rsplit(" ", 1)[0] for line in lines]


async def wait_for_gate() -> None:
    """Block until the gate file exists (for ever, in a child that is to be killed)."""
    while SETTINGS["gate"] is None or not Path(SETTINGS["gate"]).exists():
        await asyncio.sleep(0.005)


def fast(name: str) -> Any:
    async def node(state: Findings, ctx: NodeContext) -> dict[str, Any]:
        side_effect(name, ctx)
        return {"log": [name]}

    return node


def gated(name: str) -> Any:
    """Records that it started, waits for the gate, records ``<name>-finally`` on the
    way out (a kill skips that, a cancellation does not)."""

    async def node(state: Findings, ctx: NodeContext) -> dict[str, Any]:
        side_effect(name, ctx)
        try:
            await wait_for_gate()
        finally:
            side_effect(f"{name}-finally", ctx)
        return {"log": [name]}

    return node


async def synthesizer(state: Findings, ctx: NodeContext) -> dict[str, Any]:
    side_effect("synthesizer", ctx)
    return {"summary": ",".join(state.log)}


def specialists_app(store: CheckpointStore) -> CompiledGraph[Findings]:
    """researcher -> [financial, market, product -> product_review, news] -> synthesizer.

    ``market`` and ``product_review`` wait for the gate file; the others return at once.
    """
    graph = StateGraph(Findings)
    graph.add_node("researcher", fast("researcher"))
    graph.add_node("financial", fast("financial")).add_node("market", gated("market"))
    graph.add_node("product", fast("product"))
    graph.add_node("product_review", gated("product_review"))
    graph.add_node("news", fast("news")).add_node("synthesizer", synthesizer)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", list(BRANCHES))
    graph.add_edge("product", "product_review")
    graph.add_edge(["financial", "market", "product_review", "news"], "synthesizer")
    graph.add_edge("synthesizer", END)
    return graph.compile(store=store)


async def broken_market(state: Findings, ctx: NodeContext) -> dict[str, Any]:
    """Fails (every attempt) while broken, once ``financial`` and ``news`` have
    finished; otherwise reports."""
    side_effect("market", ctx)
    if SETTINGS["broken"]:
        done = {"financial financial[0]", "news news[3]"}
        while not done <= set(effects(Path(SETTINGS["effects"]))):
            await asyncio.sleep(0.005)
        # they have returned (nothing awaits between their side effect and their
        # return); their checkpoints may still be under way
        raise ConnectionError("market data feed down")
    return {"log": ["market"]}


async def slow_product(state: Findings, ctx: NodeContext) -> dict[str, Any]:
    """Still running when ``market`` fails (while broken): its ``finally`` records the
    cancellation."""
    side_effect("product", ctx)
    try:
        if SETTINGS["broken"]:
            await asyncio.sleep(30)
    finally:
        side_effect("product-finally", ctx)
    return {"log": ["product"]}


def failing_app(store: CheckpointStore) -> CompiledGraph[Findings]:
    """researcher -> [financial, market, product, news] -> synthesizer; ``market``
    retries once and has no on_error."""
    graph = StateGraph(Findings)
    graph.add_node("researcher", fast("researcher"))
    graph.add_node("financial", fast("financial"))
    graph.add_node("market", broken_market, retry=RetryPolicy(max_attempts=2, backoff=0))
    graph.add_node("product", slow_product).add_node("news", fast("news"))
    graph.add_node("synthesizer", synthesizer)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", list(BRANCHES))
    graph.add_edge(list(BRANCHES), "synthesizer")
    graph.add_edge("synthesizer", END)
    return graph.compile(store=store)


class Asker:
    """A branch node that asks a question; its ``resume`` records the answer."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, state: Findings, ctx: NodeContext) -> Suspend:
        side_effect(f"ask-{self.name}", ctx)
        return Suspend({"question": f"{self.name}?"})

    async def resume(self, state: Findings, value: Any, ctx: NodeContext) -> dict[str, Any]:
        side_effect(f"resume-{self.name}:{value}", ctx)
        await asyncio.sleep(SETTINGS["hold"])
        return {"log": [f"{self.name}={value}"]}


def askers_app(store: CheckpointStore) -> CompiledGraph[Findings]:
    """researcher -> [financial, market (asks), product (asks)] -> synthesizer."""
    graph = StateGraph(Findings)
    graph.add_node("researcher", fast("researcher"))
    graph.add_node("financial", fast("financial"))
    graph.add_node("market", Asker("market")).add_node("product", Asker("product"))
    graph.add_node("synthesizer", synthesizer)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", ["financial", "market", "product"])
    graph.add_edge(["financial", "market", "product"], "synthesizer")
    graph.add_edge("synthesizer", END)
    return graph.compile(store=store)


ITEMS = 12
"""How many ``analyse`` branches the ``mapper`` graph sends."""


async def plan(state: Findings, ctx: NodeContext) -> dict[str, Any]:
    side_effect("plan", ctx)
    return {"log": ["plan"]}


async def analyse(state: Findings, ctx: NodeContext) -> dict[str, Any]:
    """Records ``analyse:<item>``, then works a little (longer for some items)."""
    side_effect(f"analyse:{ctx.item}", ctx)
    await asyncio.sleep(0.01 * (1 + ctx.item % 3))
    return {"log": [f"a{ctx.item}"]}


def mapper_app(store: CheckpointStore) -> CompiledGraph[Findings]:
    """plan -> Send("analyse", i) for i in range(ITEMS), 3 at a time -> synthesizer."""
    graph = StateGraph(Findings)
    graph.add_node("plan", plan).add_node("analyse", analyse)
    graph.add_node("synthesizer", synthesizer)
    graph.add_edge(START, "plan")
    graph.add_router(
        "plan",
        lambda s: [Send("analyse", i) for i in range(ITEMS)],
        ["analyse"],
        join="synthesizer",
    )
    graph.add_edge("analyse", "synthesizer")
    graph.add_edge("synthesizer", END)
    return graph.compile(store=store, max_concurrency=3)


APPS = {
    "specialists": specialists_app,
    "failing": failing_app,
    "askers": askers_app,
    "mapper": mapper_app,
}


def report(result: RunResult[Findings]) -> dict[str, Any]:
    return {
        "outcome": "ok",
        "status": result.status,
        "log": result.state.log,
        "summary": result.state.summary,
        "path": result.path,
        "branches": [s.branch for s in result.suspensions],
    }


async def execute(command: dict[str, Any]) -> dict[str, Any]:
    SETTINGS.update(
        effects=command["effects"],
        gate=command.get("gate"),
        broken=command.get("broken", False),
        hold=command.get("hold", 0.0),
    )
    _fs.RANGE_LOCKS = command.get("range_locks", _fs.OFD_LOCKS)  # the test's kind of lease
    app = APPS[command["graph"]](JsonFileCheckpointStore(command["store"], durability="fsync"))
    if "go" in command:
        print("ready", flush=True)
        go = Path(command["go"])
        deadline = time.monotonic() + 30
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(command.get("after", 0.0))  # a staggered start, when asked for
    op = command["op"]
    try:
        if op == "run":
            result = await app.run({}, thread_id=command["thread"])
        elif op == "continue":
            result = await app.run(None, thread_id=command["thread"])
        elif op == "advance":  # start the thread, or continue what a kill left
            snapshot = await app.get_state(command["thread"])
            result = await app.run(None if snapshot else {}, thread_id=command["thread"])
        else:
            result = await app.resume(command["token"], command["value"])
    except EngineError as exc:
        return {"outcome": type(exc).__name__, "message": str(exc)}
    if "tokens" in command:
        tokens = [str(s.token) for s in result.suspensions]
        Path(command["tokens"]).write_text(json.dumps(tokens))
    return report(result)


def main() -> None:
    command = json.loads(sys.argv[1])
    outcome = asyncio.run(asyncio.wait_for(execute(command), command.get("timeout", 60)))
    print(json.dumps({**outcome, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    from research_fsm import configure_logging

    configure_logging("ERROR")
    main()
