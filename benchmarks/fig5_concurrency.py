"""Figure 5: many threads at once.

``fig5_threads`` new threads started together (``asyncio.gather``), every node
awaiting 10 ms of simulated I/O (``asyncio.sleep``), happy and retry paths.
research_fsm with ``MemoryCheckpointStore`` ("no store": the engine always
checkpoints, this is its cheapest form) and ``JsonFileCheckpointStore``
(``durability="none"`` and ``"fsync"``); LangGraph without a checkpointer and
with ``AsyncSqliteSaver`` (``ainvoke``, ``durability="sync"``, the same
guarantee as ours: a step is saved before the next one starts).

Reported: wall time against the critical path (steps x 10 ms), runs per
second, CPU per run (``time.process_time``: the whole process, worker threads
included), and peak memory per in-flight thread: the ``tracemalloc`` peak of
Python allocations during a separate, untimed batch, above the level before
it, divided by the number of threads (inputs are built before tracing starts).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path
from typing import Any

from research_fsm.engine import MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sample,
    Sizes,
    alternate,
    at_least,
    at_most,
    fmt,
    md_table,
    median,
    temp_dir,
    timed,
)
from ._graphs import (
    STEPS,
    build_langgraph,
    build_rfsm,
    check_final,
    lg_config,
    lg_input,
    question_input,
)

TITLE = "Concurrency: many threads at once, 10 ms of I/O per node"
IO_DELAY = 0.010
SCENARIOS = ("happy", "retry")
LABELS = {
    "rfsm_mem": "research_fsm, MemoryCheckpointStore",
    "rfsm_none": "research_fsm, JsonFileCheckpointStore(durability='none')",
    "rfsm_fsync": "research_fsm, JsonFileCheckpointStore(durability='fsync')",
    "lg_none": "LangGraph, no checkpointer",
    "lg_asqlite": "LangGraph, AsyncSqliteSaver (durability='sync')",
}
PAIRS = (
    ("rfsm_mem", "lg_none", "no store"),
    ("rfsm_none", "lg_asqlite", "JsonFile none vs AsyncSqliteSaver"),
    ("rfsm_fsync", "lg_asqlite", "JsonFile fsync vs AsyncSqliteSaver"),
)


async def _batch(variant: str, where: Path, scenario: str, n: int, memory: bool) -> Sample:
    """Run ``n`` threads at once; with ``memory``, return the tracemalloc peak
    above the starting level (bytes) in ``Sample.wall`` instead of times."""
    saver_cm: Any = None
    if variant.startswith("rfsm"):
        store: Any
        if variant == "rfsm_mem":
            store = MemoryCheckpointStore()
        else:
            store = JsonFileCheckpointStore(
                where, durability="none" if variant == "rfsm_none" else "fsync"
            )
        app = build_rfsm(store, io_delay=IO_DELAY)
        inputs = [question_input(scenario) for _ in range(n)]
        ids = [f"t{i}" for i in range(n)]

        def calls() -> list[Any]:
            return [app.run(inputs[i], thread_id=ids[i]) for i in range(n)]
    else:
        saver = None
        if variant == "lg_asqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            where.mkdir(parents=True, exist_ok=True)
            saver_cm = AsyncSqliteSaver.from_conn_string(str(where / "checkpoints.sqlite"))
            saver = await saver_cm.__aenter__()
            await saver.setup()
        app = build_langgraph(saver, io_delay=IO_DELAY)
        inputs = [lg_input(scenario) for _ in range(n)]
        configs = [lg_config(f"t{i}") for i in range(n)]
        kwargs: dict[str, Any] = {"durability": "sync"} if saver is not None else {}

        def calls() -> list[Any]:
            return [app.ainvoke(inputs[i], configs[i], **kwargs) for i in range(n)]

    try:
        if memory:
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            results = await asyncio.gather(*calls())
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            sample = Sample(float(peak - base), 0.0)
        else:
            with timed() as sample:
                results = await asyncio.gather(*calls())
        last = results[-1]
        check_final(variant, scenario, last if isinstance(last, dict) else last.state.__dict__)
        return sample
    finally:
        if saver_cm is not None:
            await saver_cm.__aexit__(None, None, None)


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(5, TITLE)
    n = sizes.fig5_threads
    variants = ["rfsm_mem", "rfsm_none", "rfsm_fsync"] + (["lg_none", "lg_asqlite"] if peer else [])
    samples: dict[str, dict[str, list[Sample]]] = {s: {v: [] for v in variants} for s in SCENARIOS}
    memory: dict[str, float] = {}
    counter = [0]
    with temp_dir("fig5") as root:

        def measure(variant: str, scenario: str, threads: int, mem: bool = False) -> Sample:
            counter[0] += 1
            where = root / f"{variant}-{counter[0]}"
            return asyncio.run(_batch(variant, where, scenario, threads, mem))

        for variant in variants:  # warm-up, small
            measure(variant, "happy", min(n, 20))
        for rep in range(sizes.fig5_reps):
            for scenario in SCENARIOS:
                for variant in alternate(rep, *variants):
                    samples[scenario][variant].append(measure(variant, scenario, n))
        for variant in variants:
            memory[variant] = measure(variant, "happy", n, mem=True).wall / n

    def stat(scenario: str, variant: str) -> dict[str, float] | None:
        if variant not in samples[scenario]:
            return None
        wall = median([s.wall for s in samples[scenario][variant]])
        cpu = median([s.cpu for s in samples[scenario][variant]])
        critical = STEPS[scenario] * IO_DELAY
        return {
            "wall_ms": wall * 1e3,
            "critical_ms": critical * 1e3,
            "x_critical": wall / critical,
            "runs_per_s": n / wall,
            "cpu_ms_per_run": cpu / n * 1e3,
        }

    for scenario in SCENARIOS:
        for ours, theirs, label in PAIRS:
            mine, other = stat(scenario, ours), stat(scenario, theirs)
            row = Row(
                metric=f"runs/s, {scenario} path, {label}",
                unit="runs/s",
                research_fsm=None if mine is None else mine["runs_per_s"],
                langgraph=None if other is None else other["runs_per_s"],
                goal="≥ 10x LangGraph",
            )
            row.holds, row.margin = at_least(row.ratio, 10.0)
            fig.rows.append(row)
    for ours, theirs, label in PAIRS:
        row = Row(
            metric=f"memory per in-flight thread, happy path, {label}",
            unit="KB",
            research_fsm=memory[ours] / 1e3,
            langgraph=memory[theirs] / 1e3 if theirs in memory else None,
            goal="≤ 1/4 of LangGraph",
        )
        row.holds, row.margin = (None, "n/a") if row.ratio is None else at_most(row.ratio, 0.25)
        fig.rows.append(row)

    table = []
    detail: dict[str, Any] = {
        "threads": n,
        "reps": sizes.fig5_reps,
        "io_delay_s": IO_DELAY,
        "memory_bytes_per_thread": memory,
        "paths": {},
    }
    for scenario in SCENARIOS:
        detail["paths"][scenario] = {}
        for variant in variants:
            s = stat(scenario, variant)
            assert s is not None
            detail["paths"][scenario][variant] = s
            table.append(
                [
                    scenario,
                    LABELS[variant],
                    fmt(s["wall_ms"]),
                    fmt(s["critical_ms"]),
                    f"{s['x_critical']:.1f}x",
                    fmt(s["runs_per_s"]),
                    fmt(s["cpu_ms_per_run"]),
                    fmt(memory[variant] / 1e3) if scenario == "happy" else "",
                ]
            )
    fig.detail = detail
    fig.detail_md = [
        f"{n} threads at once, {sizes.fig5_reps} repetition(s), engines alternating; medians. "
        "Memory: tracemalloc peak above the starting level / threads, in a separate untimed "
        "batch (happy path).",
        "",
        *md_table(
            [
                "path",
                "engine / store",
                "wall ms",
                "critical path ms",
                "wall / critical",
                "runs/s",
                "CPU ms/run",
                "KB per thread",
            ],
            table,
        ),
    ]
    return fig
