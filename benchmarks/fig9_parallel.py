"""Figure 9: parallel branches (fan-out, join and ``Send`` map).

The same two graphs in both engines, with no-op nodes (pure state updates;
every branch appends to ``results``, an append / ``operator.add`` reducer):

* static fan-out: ``researcher -> [financial, market, product] -> synthesizer``
  (``add_edge("researcher", [...])`` and a list join ``add_edge([...],
  "synthesizer")``; LangGraph: three edges out and the same list join);
* ``Send`` map: ``plan`` -> one ``analyse`` per item (``Send("analyse",
  item)``, the item read as ``ctx.item``; LangGraph: ``Send("analyse",
  {"item": item})`` from ``add_conditional_edges``) -> ``synth``.

Measured, engines alternating, medians of repetitions:

* engine overhead per node without persistence (``MemoryCheckpointStore``
  against LangGraph without a checkpointer, ``ainvoke``): batch wall time /
  (runs x node executions); the map's node executions are ``items + 2``;
* the static fan-out with every branch awaiting 10 ms (``asyncio.sleep``):
  each run's wall time / its slowest branch (measured inside the branch);
* the ``Send`` map's durable cost per branch: (time per run with the store -
  time per run without one) / items, ``JsonFileCheckpointStore`` (``fsync``,
  and ``none``) against LangGraph's ``SqliteSaver`` (``invoke``, plain-function
  nodes, ``durability="sync"``, ``synchronous=FULL``: figure 2's pairing) and
  ``AsyncSqliteSaver`` (``ainvoke``: figure 5's pairing). research_fsm saves
  every finished branch's record as it finishes, but branches that finish
  while a save is under way go in the next save together (and the file store's
  group commit makes one durable write of them), so a map of no-op branches
  needs far fewer than one fsync per branch; LangGraph writes every task's
  writes (``put_writes``, one SQLite commit each) as it finishes.
"""

from __future__ import annotations

import asyncio
import operator
import sqlite3
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, Field

from research_fsm.engine import END, START, CompiledGraph, NodeContext, Send, StateGraph, append
from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sample,
    Sizes,
    alternate,
    at_least,
    at_most,
    both,
    faster_row,
    fmt,
    md_table,
    median,
    temp_dir,
    timed,
)
from ._graphs import lg_config

TITLE = "Parallel branches: fan-out and join, Send map"
GOAL_US = 20.0
GOAL_BRANCH_US = 10.0  # issue 40: Send map and static fan-out per branch (memory)
GOAL_FACTOR = 10.0
GOAL_IO = 1.3
IO_DELAY = 0.010
BRANCHES = ("financial", "market", "product")
FAN_NODES = len(BRANCHES) + 2
"""Node executions per run of the static fan-out: researcher, the branches, synthesizer."""

LABELS = {
    "rfsm": "research_fsm, MemoryCheckpointStore (run)",
    "hand": "the same graph written by hand (asyncio.gather; the floor)",
    "lg": "LangGraph, no checkpointer (ainvoke)",
    "lg_sync": "LangGraph, no checkpointer (invoke, sync nodes)",
    "rfsm_none": "research_fsm, JsonFileCheckpointStore(durability='none')",
    "rfsm_fsync": "research_fsm, JsonFileCheckpointStore(durability='fsync')",
    "lg_sqlite": "LangGraph, SqliteSaver (invoke, durability='sync', synchronous=FULL)",
    "lg_asqlite": "LangGraph, AsyncSqliteSaver (ainvoke, durability='sync')",
}
BASELINE = {
    "rfsm_none": "rfsm",
    "rfsm_fsync": "rfsm",
    "lg_sqlite": "lg_sync",
    "lg_asqlite": "lg",
}
"""The store-less run each durable variant's extra cost is taken over."""


# -- the graphs --------------------------------------------------------------------


class ParState(BaseModel):
    """research_fsm's state: the branches' results under an ``append`` reducer."""

    question: str = ""
    results: Annotated[list[str], append] = Field(default_factory=list)
    summary: str = ""


class LGParState(TypedDict):
    """LangGraph's state: the same fields, ``operator.add`` on results."""

    question: str
    results: Annotated[list[str], operator.add]
    summary: str


def items_of(count: int) -> list[str]:
    return [f"source-{i}" for i in range(count)]


def rfsm_input() -> dict[str, Any]:
    return {"question": "What's happening with Apple?"}


def lg_input() -> dict[str, Any]:
    return {"question": "What's happening with Apple?", "results": [], "summary": ""}


Spans = list[float]


def _rfsm_branch(name: str, delay: float, spans: Spans | None) -> Any:
    async def node(state: ParState, ctx: NodeContext) -> dict[str, Any]:
        if delay:
            t0 = time.perf_counter()
            await asyncio.sleep(delay)
            if spans is not None:
                spans.append(time.perf_counter() - t0)
        return {"results": [name]}

    return node


async def _researcher(state: ParState, ctx: NodeContext) -> dict[str, Any]:
    return {"question": state.question.strip()}


async def _synthesizer(state: ParState, ctx: NodeContext) -> dict[str, Any]:
    return {"summary": f"{len(state.results)} results"}


async def _analyse(state: ParState, ctx: NodeContext) -> dict[str, Any]:
    return {"results": [ctx.item]}


def build_rfsm_fanout(
    store: Any = None, *, delay: float = 0.0, spans: Spans | None = None
) -> CompiledGraph[ParState]:
    g = StateGraph(ParState)
    g.add_node("researcher", _researcher)
    for name in BRANCHES:
        g.add_node(name, _rfsm_branch(name, delay, spans))
    g.add_node("synthesizer", _synthesizer)
    g.add_edge(START, "researcher")
    g.add_edge("researcher", list(BRANCHES))
    g.add_edge(list(BRANCHES), "synthesizer")
    g.add_edge("synthesizer", END)
    return g.compile(store=store)


def build_rfsm_map(items: list[str], store: Any = None) -> CompiledGraph[ParState]:
    g = StateGraph(ParState)
    g.add_node("plan", _researcher)
    g.add_node("analyse", _analyse)
    g.add_node("synth", _synthesizer)
    g.add_edge(START, "plan")
    g.add_router(
        "plan", lambda s: [Send("analyse", item) for item in items], ["analyse"], join="synth"
    )
    g.add_edge("analyse", "synth")
    g.add_edge("synth", END)
    # step_limit counts every node execution in every branch (default 50).
    return g.compile(store=store, step_limit=len(items) + 10)


def _lg_node(update: Callable[[Any], dict[str, Any]], async_nodes: bool) -> Any:
    if not async_nodes:
        return update

    async def node(state: Any) -> dict[str, Any]:
        return update(state)

    return node


def _lg_researcher(s: Any) -> dict[str, Any]:
    return {"question": s["question"].strip()}


def _lg_synthesizer(s: Any) -> dict[str, Any]:
    return {"summary": f"{len(s['results'])} results"}


def build_lg_fanout(
    checkpointer: Any = None,
    *,
    delay: float = 0.0,
    spans: Spans | None = None,
    async_nodes: bool = True,
) -> Any:
    from langgraph.graph import END as LG_END
    from langgraph.graph import START as LG_START
    from langgraph.graph import StateGraph as LGStateGraph

    def branch(name: str) -> Any:
        if not async_nodes:
            return lambda s: {"results": [name]}

        async def node(state: LGParState) -> dict[str, Any]:
            if delay:
                t0 = time.perf_counter()
                await asyncio.sleep(delay)
                if spans is not None:
                    spans.append(time.perf_counter() - t0)
            return {"results": [name]}

        return node

    g = LGStateGraph(LGParState)
    g.add_node("researcher", _lg_node(_lg_researcher, async_nodes))
    for name in BRANCHES:
        g.add_node(name, branch(name))
    g.add_node("synthesizer", _lg_node(_lg_synthesizer, async_nodes))
    g.add_edge(LG_START, "researcher")
    for name in BRANCHES:
        g.add_edge("researcher", name)
    g.add_edge(list(BRANCHES), "synthesizer")
    g.add_edge("synthesizer", LG_END)
    return g.compile(checkpointer=checkpointer)


def build_lg_map(items: list[str], checkpointer: Any = None, *, async_nodes: bool = True) -> Any:
    from langgraph.graph import END as LG_END
    from langgraph.graph import START as LG_START
    from langgraph.graph import StateGraph as LGStateGraph
    from langgraph.types import Send as LGSend

    g = LGStateGraph(LGParState)
    g.add_node("plan", _lg_node(_lg_researcher, async_nodes))
    g.add_node("analyse", _lg_node(lambda s: {"results": [s["item"]]}, async_nodes))
    g.add_node("synth", _lg_node(_lg_synthesizer, async_nodes))
    g.add_edge(LG_START, "plan")
    g.add_conditional_edges(
        "plan", lambda s: [LGSend("analyse", {"item": item}) for item in items], ["analyse"]
    )
    g.add_edge("analyse", "synth")
    g.add_edge("synth", LG_END)
    return g.compile(checkpointer=checkpointer)


def check(engine: str, state: Any, expected: list[str]) -> None:
    """Raise unless every branch ran once and the join saw all of them, in order."""
    results = list(state["results"])
    if results != expected or state["summary"] != f"{len(expected)} results":
        raise AssertionError(
            f"{engine}: results {results[:5]}... ({len(results)}), summary {state['summary']!r}; "
            f"expected {expected[:5]}... ({len(expected)})"
        )


# -- batches -----------------------------------------------------------------------


async def _rfsm_batch(app: CompiledGraph[ParState], n: int, expected: list[str]) -> Sample:
    inputs = [rfsm_input() for _ in range(n)]
    ids = [f"t{i}" for i in range(n)]
    with timed() as sample:
        for i in range(n):
            result = await app.run(inputs[i], thread_id=ids[i])
    check("research_fsm", result.state.__dict__, expected)
    return sample


async def _lg_batch(app: Any, n: int, expected: list[str], durable: bool = False) -> Sample:
    inputs = [lg_input() for _ in range(n)]
    configs = [lg_config(f"t{i}") for i in range(n)]
    kwargs: dict[str, Any] = {"durability": "sync"} if durable else {}
    with timed() as sample:
        for i in range(n):
            out = await app.ainvoke(inputs[i], configs[i], **kwargs)
    check("LangGraph", out, expected)
    return sample


def _lg_sync_batch(app: Any, n: int, expected: list[str], durable: bool = False) -> Sample:
    inputs = [lg_input() for _ in range(n)]
    configs = [lg_config(f"t{i}") for i in range(n)]
    kwargs: dict[str, Any] = {"durability": "sync"} if durable else {}
    with timed() as sample:
        for i in range(n):
            out = app.invoke(inputs[i], configs[i], **kwargs)
    check("LangGraph (invoke)", out, expected)
    return sample


async def _io_batch(variant: str, n: int) -> list[float]:
    """``n`` runs of the fan-out with 10 ms per branch: each run's wall time / its
    slowest branch."""
    spans: Spans = []
    app: Any
    if variant == "rfsm":
        app = build_rfsm_fanout(delay=IO_DELAY, spans=spans)

        async def call(i: int) -> None:
            await app.run(rfsm_input(), thread_id=f"io{i}")
    else:
        app = build_lg_fanout(delay=IO_DELAY, spans=spans)

        async def call(i: int) -> None:
            await app.ainvoke(lg_input())

    ratios = []
    for i in range(n):
        spans.clear()
        t0 = time.perf_counter()
        await call(i)
        wall = time.perf_counter() - t0
        assert len(spans) == len(BRANCHES), spans
        ratios.append(wall / max(spans))
    return ratios


async def _lg_asqlite_batch(path: Path, items: list[str], n: int) -> Sample:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await saver.setup()
        return await _lg_batch(build_lg_map(items, saver), n, items, durable=True)


def _lg_sqlite_batch(path: Path, items: list[str], n: int) -> Sample:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        return _lg_sync_batch(build_lg_map(items, saver, async_nodes=False), n, items, durable=True)
    finally:
        conn.close()


def _lines_per_run(directory: Path, runs: int) -> float:
    """Checkpoint lines (saves) the file store wrote per run."""
    lines = sum(len(path.read_bytes().splitlines()) for path in directory.rglob("*.jsonl"))
    return lines / runs


# -- the figure --------------------------------------------------------------------


def run(sizes: Sizes, peer: bool) -> FigureResult:
    from .fig2_persistence import raw_fsync_seconds

    fig = FigureResult(9, TITLE)
    n_fan = sizes.fig9_runs
    n_map = max(1, sizes.fig9_runs // 10)
    n_io = sizes.fig9_io_runs
    n_durable = sizes.fig9_durable_runs
    items = items_of(sizes.fig9_items)
    map_nodes = len(items) + 2
    fan_expected = list(BRANCHES)

    # Part 1: overhead, no store.
    apps: dict[str, dict[str, Any]] = {  # research_fsm's: a new graph and store per batch
        "fan": {"rfsm": build_rfsm_fanout, "hand": None},
        "map": {"rfsm": lambda: build_rfsm_map(items), "hand": None},
    }
    if peer:
        apps["fan"]["lg"] = build_lg_fanout()
        apps["fan"]["lg_sync"] = build_lg_fanout(async_nodes=False)
        apps["map"]["lg"] = build_lg_map(items)
        apps["map"]["lg_sync"] = build_lg_map(items, async_nodes=False)
    overhead: dict[str, dict[str, list[Sample]]] = {
        g: {v: [] for v in apps[g]} for g in ("fan", "map")
    }

    def measure(graph: str, variant: str) -> Sample:
        app = apps[graph][variant]
        n = n_fan if graph == "fan" else n_map
        expected = fan_expected if graph == "fan" else items
        if variant == "rfsm":
            return asyncio.run(_rfsm_batch(app(), n, expected))
        if variant == "hand":
            if graph == "fan":
                return asyncio.run(hand_fanout_batch(n, BRANCHES))
            return asyncio.run(hand_map_batch(n, items))
        if variant == "lg":
            return asyncio.run(_lg_batch(app, n, expected))
        return _lg_sync_batch(app, n, expected)

    for graph in overhead:  # warm-up
        for variant in overhead[graph]:
            measure(graph, variant)
    for rep in range(sizes.reps):
        for graph in overhead:
            for variant in alternate(rep, *overhead[graph]):
                overhead[graph][variant].append(measure(graph, variant))

    # Part 2: 10 ms of I/O per branch.
    io_variants = ["rfsm"] + (["lg"] if peer else [])
    io: dict[str, list[float]] = {v: [] for v in io_variants}
    for variant in io_variants:  # warm-up
        asyncio.run(_io_batch(variant, 2))
    for rep in range(sizes.reps):
        for variant in alternate(rep, *io_variants):
            io[variant].extend(asyncio.run(_io_batch(variant, n_io)))

    # Part 3: the Send map with durable stores.
    durable_variants = ["rfsm_none", "rfsm_fsync"] + (["lg_sqlite", "lg_asqlite"] if peer else [])
    durable: dict[str, list[Sample]] = {v: [] for v in durable_variants}
    lines: dict[str, list[float]] = {v: [] for v in durable_variants if v.startswith("rfsm")}
    counter = [0]
    with temp_dir("fig9") as root:

        def measure_durable(variant: str) -> Sample:
            counter[0] += 1
            where = root / f"{variant}-{counter[0]}"
            if variant.startswith("rfsm"):
                store = JsonFileCheckpointStore(
                    where, durability="fsync" if variant == "rfsm_fsync" else "none"
                )
                sample = asyncio.run(_rfsm_batch(build_rfsm_map(items, store), n_durable, items))
                lines[variant].append(_lines_per_run(where, n_durable))
                return sample
            where.mkdir()
            db = where / "checkpoints.sqlite"
            if variant == "lg_sqlite":
                return _lg_sqlite_batch(db, items, n_durable)
            return asyncio.run(_lg_asqlite_batch(db, items, n_durable))

        for variant in durable_variants:  # warm-up
            measure_durable(variant)
        for variant in lines:
            lines[variant].clear()
        for rep in range(sizes.reps):
            for variant in alternate(rep, *durable_variants):
                durable[variant].append(measure_durable(variant))
        raw_dir = root / "raw-fsync"
        raw_dir.mkdir()
        raw_us = raw_fsync_seconds(raw_dir, 1000)["append_fdatasync"] * 1e6

    # -- results --
    def per_run_us(samples: list[Sample], n: int, attr: str = "wall") -> float:
        return median([getattr(s, attr) for s in samples]) / n * 1e6

    def per_node(graph: str, variant: str, attr: str = "wall") -> float | None:
        if variant not in overhead[graph]:
            return None
        n, nodes = (n_fan, FAN_NODES) if graph == "fan" else (n_map, map_nodes)
        return per_run_us(overhead[graph][variant], n, attr) / nodes

    graph_labels = {
        "fan": f"per node, static fan-out, no store ({FAN_NODES} nodes: 1 -> 3 branches -> join)",
        "map": f"per node, Send map over {len(items)} items, no store ({map_nodes} nodes)",
    }
    for graph in ("fan", "map"):
        ours, theirs = per_node(graph, "rfsm"), per_node(graph, "lg")
        speedup = theirs / ours if (theirs and ours) else None
        holds, margin = both(at_most(ours, GOAL_US), at_least(speedup, GOAL_FACTOR))
        fig.rows.append(
            Row(
                metric=graph_labels[graph],
                unit="µs",
                research_fsm=ours,
                langgraph=theirs,
                goal=f"≤ {GOAL_US:.0f} µs and ≥ {GOAL_FACTOR:.0f}x faster",
                holds=holds,
                margin=margin,
            )
        )

    for graph in ("fan", "map"):
        ours, floor = per_node(graph, "rfsm"), per_node(graph, "hand")
        ratio = ours / floor if (ours and floor) else None
        holds, margin = at_most(ours, GOAL_BRANCH_US)
        fig.rows.append(
            Row(
                metric=f"{graph_labels[graph]}: vs the hand-written loop "
                f"({fmt(floor)} µs/node; ratio in the last column)",
                unit="µs",
                research_fsm=ours,
                ratio=ratio,
                goal=f"≤ {GOAL_BRANCH_US:.0f} µs per branch",
                holds=holds,
                margin=margin,
            )
        )

    io_stat = {v: median(io[v]) for v in io_variants}
    holds, margin = at_most(io_stat["rfsm"], GOAL_IO)
    fig.rows.append(
        Row(
            metric=f"3-way fan-out, {IO_DELAY * 1e3:.0f} ms of I/O per branch: "
            "wall time / slowest branch",
            unit="x",
            research_fsm=io_stat["rfsm"],
            langgraph=io_stat.get("lg"),
            goal=f"≤ {GOAL_IO}x",
            holds=holds,
            margin=margin,
        )
    )

    def map_total_ms(variant: str) -> float | None:
        if variant not in overhead["map"]:
            return None
        return per_run_us(overhead["map"][variant], n_map) / 1e3

    fig.rows.append(
        Row(
            metric=f"Send map over {len(items)} items: whole run, no store (engine overhead)",
            unit="ms",
            research_fsm=map_total_ms("rfsm"),
            langgraph=map_total_ms("lg"),
        )
    )

    def durable_per_branch(variant: str) -> float | None:
        if variant not in durable:
            return None
        base = overhead["map"][BASELINE[variant]]
        extra = per_run_us(durable[variant], n_durable) - per_run_us(base, n_map)
        return extra / len(items)

    for our_store, their_store, label in (
        ("rfsm_fsync", "lg_sqlite", "JsonFile fsync vs SqliteSaver"),
        ("rfsm_fsync", "lg_asqlite", "JsonFile fsync vs AsyncSqliteSaver"),
    ):
        if their_store == "lg_asqlite" and not peer:
            continue
        fig.rows.append(
            faster_row(
                f"Send map over {len(items)} items: durable cost per branch, {label}",
                "µs",
                durable_per_branch(our_store),
                durable_per_branch(their_store),
            )
        )
    saves = median(lines["rfsm_fsync"])
    fig.rows.append(
        Row(
            metric=f"Send map over {len(items)} items, JsonFile fsync: checkpoints saved per run "
            "(branches finishing together share one save)",
            unit="saves",
            research_fsm=saves,
        )
    )

    # -- detail --
    table = []
    detail: dict[str, Any] = {
        "fanout_runs_per_batch": n_fan,
        "map_runs_per_batch": n_map,
        "map_items": len(items),
        "io_runs_per_batch": n_io,
        "durable_runs_per_batch": n_durable,
        "reps": sizes.reps,
        "raw_fsync_us": raw_us,
        "overhead": {},
        "io_wall_over_slowest_branch": {v: {"median": io_stat[v], "all": io[v]} for v in io},
        "durable": {},
    }
    for graph in ("fan", "map"):
        detail["overhead"][graph] = {}
        n = n_fan if graph == "fan" else n_map
        for variant, samples in overhead[graph].items():
            wall, cpu = per_node(graph, variant), per_node(graph, variant, "cpu")
            run_us = per_run_us(samples, n)
            detail["overhead"][graph][variant] = {
                "us_per_node": wall,
                "cpu_us_per_node": cpu,
                "us_per_run": run_us,
                "us_per_node_all_reps": [
                    s.wall / n * 1e6 / (FAN_NODES if graph == "fan" else map_nodes) for s in samples
                ],
            }
            table.append(
                [
                    "static fan-out" if graph == "fan" else f"Send map ({len(items)})",
                    LABELS[variant],
                    fmt(wall),
                    fmt(cpu),
                    fmt(run_us / 1e3),
                    "",
                    "",
                ]
            )
    for variant, samples in durable.items():
        run_us = per_run_us(samples, n_durable)
        cost = durable_per_branch(variant)
        detail["durable"][variant] = {
            "us_per_run": run_us,
            "cpu_us_per_run": per_run_us(samples, n_durable, "cpu"),
            "durable_us_per_branch": cost,
            "durable_raw_fsyncs_per_branch": None if cost is None else cost / raw_us,
            "saves_per_run": median(lines[variant]) if variant in lines else None,
        }
        table.append(
            [
                f"Send map ({len(items)})",
                LABELS[variant],
                "",
                "",
                fmt(run_us / 1e3),
                fmt(cost),
                fmt(None if cost is None else cost / raw_us),
            ]
        )
    fig.detail = detail
    io_text = ", ".join(f"{LABELS[v]} {io_stat[v]:.3f}x" for v in io_variants)
    fig.detail_md = [
        f"Overhead: {n_fan} runs of the static fan-out / {n_map} runs of the Send map per batch "
        f"(new threads), {sizes.reps} repetitions, engines alternating; medians. "
        f"Fan-out with {IO_DELAY * 1e3:.0f} ms of I/O per branch, wall / slowest branch "
        f"(median of {n_io} x {sizes.reps} runs): {io_text}. Durable: {n_durable} runs of the "
        f"map per batch, a fresh store per batch; cost per branch = (ms/run - the same engine's "
        f"ms/run without a store) / {len(items)}; one raw fsync here costs {raw_us:.0f} µs.",
        "",
        *md_table(
            [
                "graph",
                "engine / store",
                "µs/node",
                "CPU µs/node",
                "ms/run",
                "durable µs/branch",
                "in raw fsyncs",
            ],
            table,
        ),
    ]
    fig.notes.append(
        "research_fsm checkpoints every finished branch's record, but coalesces: branches "
        "that finish while a save is under way share the next save, and the file store's group "
        "commit makes one durable write of saves queued together. LangGraph commits every "
        "finished task's writes (put_writes) to SQLite on its own."
    )
    return fig


# -- the floor: figure 9's graphs written by hand (``_floor`` has figure 1's) ----------------------------------------------------------------


async def hand_fanout_batch(n: int, branches: tuple[str, ...]) -> Sample:
    """Figure 9's static fan-out written by hand ``n`` times: researcher, the branches
    gathered, their results appended in order, synthesizer."""
    nodes = [_rfsm_branch(name, 0.0, None) for name in branches]
    with timed() as sample:
        for _ in range(n):
            state = ParState(question="What's happening with Apple?")
            state = state.model_copy(update=await _researcher(state, None))  # type: ignore[arg-type]
            outs = await asyncio.gather(*(node(state, None) for node in nodes))
            results = [*state.results, *(r for out in outs for r in out["results"])]
            state = state.model_copy(update={"results": results})
            state = state.model_copy(update=await _synthesizer(state, None))  # type: ignore[arg-type]
    assert state.summary == f"{len(branches)} results", state.summary
    return sample


async def hand_map_batch(n: int, items: list[str]) -> Sample:
    """Figure 9's ``Send`` map written by hand ``n`` times: plan, one ``analyse`` per
    item gathered (the item as ``ctx.item``), synth."""
    contexts = [types.SimpleNamespace(item=item) for item in items]
    with timed() as sample:
        for _ in range(n):
            state = ParState(question="What's happening with Apple?")
            state = state.model_copy(update=await _researcher(state, None))  # type: ignore[arg-type]
            outs = await asyncio.gather(*(_analyse(state, ctx) for ctx in contexts))  # type: ignore[arg-type]
            results = [*state.results, *(r for out in outs for r in out["results"])]
            state = state.model_copy(update={"results": results})
            state = state.model_copy(update=await _synthesizer(state, None))  # type: ignore[arg-type]
    assert state.results == items
    return sample
