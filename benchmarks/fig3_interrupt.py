"""Figure 3: interrupt + resume round trip.

One round trip = run a new thread on the clarification path until it suspends
(clarity -> interrupt), then resume it with the answer (interrupt -> clarity ->
research -> synthesis). "Fresh graph" resumes on another compiled graph object
over the same store (for the file store and SQLite: a new store object / new
connection on the same directory / database file), as after a restart; those
graph objects are built before the clock starts (building one is reported
separately). research_fsm resumes with the token's string form.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

from research_fsm.engine import MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Sample,
    Sizes,
    alternate,
    faster_row,
    fmt,
    md_table,
    median,
    temp_dir,
    timed,
)
from ._graphs import (
    CLARIFY_ANSWER,
    build_langgraph,
    build_rfsm,
    check_final,
    lg_config,
    lg_input,
    question_input,
)

TITLE = "Interrupt + resume round trip"
LABELS = {
    "rfsm_mem_same": "research_fsm, MemoryCheckpointStore, same graph",
    "rfsm_mem_fresh": "research_fsm, MemoryCheckpointStore, fresh graph object",
    "rfsm_file_same": "research_fsm, JsonFileCheckpointStore(fsync), same graph",
    "rfsm_file_fresh": "research_fsm, JsonFileCheckpointStore(fsync), fresh graph + store object",
    "lg_mem_same": "LangGraph, InMemorySaver (ainvoke), same graph",
    "lg_mem_fresh": "LangGraph, InMemorySaver (ainvoke), fresh graph object",
    "lg_sqlite_same": "LangGraph, SqliteSaver (invoke), same graph",
    "lg_sqlite_fresh": "LangGraph, SqliteSaver (invoke), fresh graph + connection",
}
PAIRS = (
    ("rfsm_mem_same", "lg_mem_same", "memory stores, same graph"),
    ("rfsm_mem_fresh", "lg_mem_fresh", "memory stores, fresh graph"),
    ("rfsm_file_same", "lg_sqlite_same", "JsonFile fsync vs SqliteSaver, same graph"),
    ("rfsm_file_fresh", "lg_sqlite_fresh", "JsonFile fsync vs SqliteSaver, fresh graph"),
)


async def _rfsm_batch(variant: str, where: Path, n: int) -> Sample:
    file_store = variant.startswith("rfsm_file")
    store: Any = JsonFileCheckpointStore(where) if file_store else MemoryCheckpointStore()
    app = build_rfsm(store)
    if variant.endswith("fresh"):
        others = [
            build_rfsm(JsonFileCheckpointStore(where) if file_store else store) for _ in range(n)
        ]
    else:
        others = [app] * n
    inputs = [question_input("clarify") for _ in range(n)]
    ids = [f"t{i}" for i in range(n)]
    with timed() as sample:
        for i in range(n):
            first = await app.run(inputs[i], thread_id=ids[i])
            assert first.suspension is not None
            await others[i].resume(str(first.suspension.token), CLARIFY_ANSWER)
    return sample


async def _lg_mem_batch(variant: str, n: int) -> Sample:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    saver = InMemorySaver()
    app = build_langgraph(saver)
    others = [build_langgraph(saver) for _ in range(n)] if variant.endswith("fresh") else [app] * n
    inputs = [lg_input("clarify") for _ in range(n)]
    configs = [lg_config(f"t{i}") for i in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.ainvoke(inputs[i], configs[i], durability="sync")
            await others[i].ainvoke(Command(resume=CLARIFY_ANSWER), configs[i], durability="sync")
    return sample


def _lg_sqlite_batch(variant: str, db: Path, n: int) -> Sample:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    conns = [sqlite3.connect(str(db), check_same_thread=False)]
    try:
        saver = SqliteSaver(conns[0])
        saver.setup()
        app = build_langgraph(saver, async_nodes=False)
        if variant.endswith("fresh"):
            others = []
            for _ in range(n):
                conns.append(sqlite3.connect(str(db), check_same_thread=False))
                others.append(build_langgraph(SqliteSaver(conns[-1]), async_nodes=False))
        else:
            others = [app] * n
        inputs = [lg_input("clarify") for _ in range(n)]
        configs = [lg_config(f"t{i}") for i in range(n)]
        with timed() as sample:
            for i in range(n):
                app.invoke(inputs[i], configs[i], durability="sync")
                others[i].invoke(Command(resume=CLARIFY_ANSWER), configs[i], durability="sync")
        return sample
    finally:
        for conn in conns:
            conn.close()


async def _verify(root: Path, peer: bool) -> None:
    store = JsonFileCheckpointStore(root / "verify")
    first = await build_rfsm(store).run(question_input("clarify"), thread_id="v")
    assert first.status == "suspended" and first.suspension is not None, first
    done = await build_rfsm(JsonFileCheckpointStore(root / "verify")).resume(
        str(first.suspension.token), CLARIFY_ANSWER
    )
    check_final("research_fsm", "clarify", done.state.__dict__)
    if peer:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.types import Command

        saver = InMemorySaver()
        out = await build_langgraph(saver).ainvoke(lg_input("clarify"), lg_config("v"))
        assert "__interrupt__" in out, out
        out = await build_langgraph(saver).ainvoke(Command(resume=CLARIFY_ANSWER), lg_config("v"))
        check_final("LangGraph", "clarify", out)


def _compile_us(peer: bool) -> dict[str, float | None]:
    def best(fn: Any, count: int = 20) -> float:
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return median(times) * 1e6

    return {
        "research_fsm": best(lambda: build_rfsm(MemoryCheckpointStore())),
        "langgraph": best(lambda: build_langgraph(None)) if peer else None,
    }


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(3, TITLE)
    n = sizes.fig3_trips
    variants = ["rfsm_mem_same", "rfsm_mem_fresh", "rfsm_file_same", "rfsm_file_fresh"]
    if peer:
        variants += ["lg_mem_same", "lg_mem_fresh", "lg_sqlite_same", "lg_sqlite_fresh"]
    samples: dict[str, list[Sample]] = {v: [] for v in variants}
    counter = [0]
    with temp_dir("fig3") as root:

        def measure(variant: str) -> Sample:
            counter[0] += 1
            where = root / f"{variant}-{counter[0]}"
            if variant.startswith("rfsm"):
                return asyncio.run(_rfsm_batch(variant, where, n))
            if variant.startswith("lg_mem"):
                return asyncio.run(_lg_mem_batch(variant, n))
            where.mkdir()
            return _lg_sqlite_batch(variant, where / "checkpoints.sqlite", n)

        asyncio.run(_verify(root, peer))
        for variant in variants:
            measure(variant)  # warm-up
        for rep in range(sizes.reps):
            for variant in alternate(rep, *variants):
                samples[variant].append(measure(variant))
    compile_us = _compile_us(peer)

    def ms(variant: str, attr: str = "wall") -> float | None:
        if variant not in samples:
            return None
        return median([getattr(s, attr) for s in samples[variant]]) / n * 1e3

    for ours, theirs, label in PAIRS:
        mine, peer_ms = ms(ours), ms(theirs)
        fig.rows.append(faster_row(f"round trip, {label}", "ms", mine, peer_ms))
    table = [[LABELS[v], fmt(ms(v)), fmt(ms(v, "cpu"))] for v in variants]
    fig.detail = {
        "trips_per_batch": n,
        "reps": sizes.reps,
        "ms_per_trip": {v: ms(v) for v in variants},
        "cpu_ms_per_trip": {v: ms(v, "cpu") for v in variants},
        "compile_us": compile_us,
    }
    fig.detail_md = [
        f"{n} round trips per batch (6 node executions each: 2 before the suspension, 4 after), "
        f"{sizes.reps} repetitions, alternating; medians.",
        "",
        *md_table(["engine / store", "ms per round trip", "CPU ms per round trip"], table),
        "",
        f"Building (compiling) one graph object: research_fsm {fmt(compile_us['research_fsm'], 'µs')}, "
        f"LangGraph {fmt(compile_us['langgraph'], 'µs')}.",
    ]
    return fig
