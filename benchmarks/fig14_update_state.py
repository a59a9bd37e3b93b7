"""Figure 14: editing a thread's state by hand (``update_state``) and reading a page of
its history.

A thread of the benchmark graph answers one question (the happy path); then each timed
batch calls ``update_state`` on it ``fig2_runs`` times, one after another, as node
``synthesis`` (LangGraph: ``as_node="synthesis"`` too), adding a message (``append``
reducer; LangGraph: its ``operator.add`` reducer) and setting a number. research_fsm's
call takes the thread's lease, merges through the reducers and saves one checkpoint;
LangGraph's reads the latest checkpoint, applies the update as the node's writes and
saves one (``aupdate_state`` on ``InMemorySaver``, ``update_state`` on ``SqliteSaver``,
which commits each write). After the batches the thread holds every update's
checkpoint; a page is the 10 snapshots before the checkpoint in the middle of it
(research_fsm: ``history(limit=10, before=...)``; LangGraph: ``get_state_history(limit=10,
before=...)``), the median time of ``PAGE_READS`` reads of it.
"""

from __future__ import annotations

import asyncio
import sqlite3
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
from ._graphs import build_langgraph, build_rfsm, lg_config, lg_input, question_input

TITLE = "update_state and a page of history"
LABELS = {
    "rfsm_mem": "research_fsm, MemoryCheckpointStore",
    "rfsm_file": "research_fsm, JsonFileCheckpointStore(fsync)",
    "lg_mem": "LangGraph, InMemorySaver (aupdate_state)",
    "lg_sqlite": "LangGraph, SqliteSaver (update_state)",
}
PAIRS = (
    ("rfsm_mem", "lg_mem", "memory stores"),
    ("rfsm_file", "lg_sqlite", "JsonFile fsync vs SqliteSaver"),
)
PAGE = 10
PAGE_READS = 21


def _update(i: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"note {i}"}], "confidence_score": i}


class _Rfsm:
    """A research_fsm thread to update; ``where`` is None for the memory store."""

    def __init__(self, where: Path | None) -> None:
        store: Any = MemoryCheckpointStore() if where is None else JsonFileCheckpointStore(where)
        self.app = build_rfsm(store)
        self.done = 0

    async def start(self) -> None:
        await self.app.run(question_input("happy"), thread_id="t")

    async def batch(self, n: int) -> Sample:
        first = self.done
        with timed() as sample:
            for i in range(first, first + n):
                await self.app.update_state("t", _update(i), as_node="synthesis")
        self.done += n
        return sample

    async def page(self) -> tuple[float, float, int]:
        ids = [s.checkpoint_id async for s in self.app.history("t")]
        middle = ids[len(ids) // 2]
        times = []
        for _ in range(PAGE_READS):
            with timed() as sample:
                page = [s async for s in self.app.history("t", limit=PAGE, before=middle)]
            assert [s.checkpoint_id for s in page] == ids[len(ids) // 2 + 1 :][:PAGE]
            times.append(sample)
        return median([t.wall for t in times]), median([t.cpu for t in times]), len(ids)


class _LangGraph:
    """The same for LangGraph: ``db`` is None for ``InMemorySaver``."""

    def __init__(self, db: Path | None) -> None:
        self.conn: sqlite3.Connection | None = None
        if db is None:
            from langgraph.checkpoint.memory import InMemorySaver

            self.app = build_langgraph(InMemorySaver())
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.conn = sqlite3.connect(str(db), check_same_thread=False)
            saver = SqliteSaver(self.conn)
            saver.setup()
            self.app = build_langgraph(saver, async_nodes=False)
        self.config = lg_config("t")
        self.done = 0

    async def start(self) -> None:
        if self.conn is None:
            await self.app.ainvoke(lg_input("happy"), self.config, durability="sync")
        else:
            self.app.invoke(lg_input("happy"), self.config, durability="sync")

    async def batch(self, n: int) -> Sample:
        first = self.done
        with timed() as sample:
            for i in range(first, first + n):
                if self.conn is None:
                    await self.app.aupdate_state(self.config, _update(i), as_node="synthesis")
                else:
                    self.app.update_state(self.config, _update(i), as_node="synthesis")
        self.done += n
        return sample

    async def page(self) -> tuple[float, float, int]:
        every = list(self.app.get_state_history(self.config))
        middle = every[len(every) // 2].config
        times = []
        for _ in range(PAGE_READS):
            with timed() as sample:
                page = list(self.app.get_state_history(self.config, limit=PAGE, before=middle))
            assert len(page) == PAGE
            times.append(sample)
        return median([t.wall for t in times]), median([t.cpu for t in times]), len(every)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


async def _verify(root: Path) -> None:
    """update_state merges through the reducers and the page is the one asked for."""
    thread = _Rfsm(root / "verify")
    await thread.start()
    await thread.batch(3)
    snap = await thread.app.get_state("t")
    assert snap is not None and snap.origin == "update", snap
    assert [m["content"] for m in snap.state.messages[-3:]] == ["note 0", "note 1", "note 2"]
    assert snap.state.confidence_score == 2 and snap.status == "completed", snap


async def _measure(variants: list[str], root: Path, n: int, reps: int) -> dict[str, Any]:
    threads: dict[str, Any] = {}
    for variant in variants:
        where = root / variant
        if variant == "rfsm_mem":
            threads[variant] = _Rfsm(None)
        elif variant == "rfsm_file":
            threads[variant] = _Rfsm(where)
        elif variant == "lg_mem":
            threads[variant] = _LangGraph(None)
        else:
            where.mkdir()
            threads[variant] = _LangGraph(where / "checkpoints.sqlite")
    samples: dict[str, list[Sample]] = {v: [] for v in variants}
    pages: dict[str, tuple[float, float, int]] = {}
    try:
        for variant in variants:
            await threads[variant].start()
            await threads[variant].batch(n)  # warm-up
        for rep in range(reps):
            for variant in alternate(rep, *variants):
                samples[variant].append(await threads[variant].batch(n))
        for variant in variants:
            pages[variant] = await threads[variant].page()
    finally:
        for thread in threads.values():
            if isinstance(thread, _LangGraph):
                thread.close()
    return {"samples": samples, "pages": pages}


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(14, TITLE)
    n = sizes.fig2_runs
    variants = ["rfsm_mem", "rfsm_file"]
    if peer:
        variants += ["lg_mem", "lg_sqlite"]
    with temp_dir("fig14") as root:
        asyncio.run(_verify(root))
        measured = asyncio.run(_measure(variants, root, n, sizes.reps))
    samples: dict[str, list[Sample]] = measured["samples"]
    pages: dict[str, tuple[float, float, int]] = measured["pages"]

    def us(variant: str, attr: str = "wall") -> float | None:
        if variant not in samples:
            return None
        return median([getattr(s, attr) for s in samples[variant]]) / n * 1e6

    def page_us(variant: str, cpu: bool = False) -> float | None:
        return pages[variant][1 if cpu else 0] * 1e6 if variant in pages else None

    for ours, theirs, label in PAIRS:
        fig.rows.append(faster_row(f"update_state, {label}", "µs", us(ours), us(theirs)))
    for ours, theirs, label in PAIRS:
        depth = pages[ours][2]
        for cpu in (False, True):
            fig.rows.append(
                faster_row(
                    f"a page of {PAGE} snapshots from the middle of {depth:,} checkpoints, "
                    f"{label}{', CPU' if cpu else ''}",
                    "µs",
                    page_us(ours, cpu),
                    page_us(theirs, cpu),
                )
            )
    table = [
        [
            LABELS[v],
            fmt(us(v)),
            fmt(us(v, "cpu")),
            fmt(page_us(v)),
            fmt(page_us(v, cpu=True)),
            f"{pages[v][2]:,}",
        ]
        for v in variants
    ]
    fig.detail = {
        "updates_per_batch": n,
        "reps": sizes.reps,
        "us_per_update": {v: us(v) for v in variants},
        "cpu_us_per_update": {v: us(v, "cpu") for v in variants},
        "page_us": {v: page_us(v) for v in variants},
        "cpu_page_us": {v: page_us(v, cpu=True) for v in variants},
        "checkpoints_in_thread": {v: pages[v][2] for v in variants},
    }
    fig.detail_md = [
        f"{n} update_state calls per batch on one finished thread, {sizes.reps} repetitions, "
        f"alternating; medians. A page: the median of {PAGE_READS} reads, after the batches.",
        "",
        *md_table(
            [
                "engine / store",
                "µs per update_state",
                "CPU µs per update_state",
                f"µs per page of {PAGE}",
                f"CPU µs per page of {PAGE}",
                "checkpoints in the thread",
            ],
            table,
        ),
    ]
    return fig
