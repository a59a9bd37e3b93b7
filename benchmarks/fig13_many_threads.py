"""Figure 13: a store that fills with threads (issue 23).

A web app keeps every conversation in one store, so the store's folder (or
database) holds thousands of threads. Nothing a run does should cost more as
it fills. Each engine gets its own store, filled with the assistant's happy
path (3 steps, 4 checkpoints) on one new thread after another: one store per
size of ``fig13_threads`` (0, 1,000, 20,000). Then ``reps`` rounds, sizes and
engines taking turns (a slower moment of the machine falls on every size
alike), of ``fig13_probes`` each:

* a run on a new thread, on the store the app keeps open (as a server does);
* a cold load of an existing thread (``get_state``; LangGraph's
  ``aget_state``) through a store object (a connection) opened for the batch,
  before the clock starts, each thread loaded once: nothing of it cached in
  the process. Batch ``i`` loads the threads run batch ``i`` made, as recent
  in every store: only the number of other threads differs, not how long ago
  the system last touched the loaded thread's files (or pages).

Pairings: ``JsonFileCheckpointStore`` with ``durability="none"`` and
``"fsync"`` against LangGraph's ``AsyncSqliteSaver`` at its defaults (WAL,
``synchronous=FULL``; ``ainvoke``, ``durability="sync"``), as in figure 5.
Loads are timed on the ``none`` store (a load reads the same files). The
batches add threads too: a store "at 20,000" holds up to a few hundred more
(the one "at 0" is made by them).

Creating ``fig13_created`` (10,000) conversations: the wall time of filling the
largest store from empty to that many threads (in chunks of ``CHUNK``, the
stores taking turns).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sizes,
    alternate,
    at_most,
    faster_row,
    fmt,
    md_table,
    median,
    temp_dir,
    timed,
)
from ._graphs import build_langgraph, build_rfsm, check_final, lg_config, lg_input, question_input

TITLE = "A store holding many threads"
FLAT = 1.2  # goal: a run or load in the largest store within 1.2x of one in an empty store
CHUNK = 500  # threads created per engine before the next one takes its turn
LABELS = {
    "rfsm_none": "research_fsm, JsonFileCheckpointStore(durability='none')",
    "rfsm_fsync": "research_fsm, JsonFileCheckpointStore(durability='fsync')",
    "lg_asqlite": "LangGraph, AsyncSqliteSaver (ainvoke, durability='sync')",
}
SHORT = {"rfsm_none": "JsonFile none", "rfsm_fsync": "JsonFile fsync"}


class _Engine:
    """One engine's store and app, kept open for the whole figure."""

    def __init__(self, variant: str, where: Path) -> None:
        self.variant = variant
        self.where = where
        self.threads: list[str] = []  # every thread made so far, in order
        self._saver_cm: Any = None
        self.app: Any = None

    async def open(self) -> None:
        if self.variant.startswith("rfsm"):
            self.app = build_rfsm(self._store())
            return
        self.where.mkdir(parents=True)
        self._saver_cm = self._saver()
        saver = await self._saver_cm.__aenter__()
        self.app = build_langgraph(saver)

    async def close(self) -> None:
        if self._saver_cm is not None:
            await self._saver_cm.__aexit__(None, None, None)

    def _store(self) -> JsonFileCheckpointStore:
        durability = "none" if self.variant == "rfsm_none" else "fsync"
        return JsonFileCheckpointStore(self.where, durability=durability)  # type: ignore[arg-type]

    def _saver(self) -> Any:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        return AsyncSqliteSaver.from_conn_string(str(self.where / "checkpoints.sqlite"))

    async def run_new(self, thread_id: str) -> Any:
        """One run of the happy path on a new thread; its final state."""
        self.threads.append(thread_id)
        if self.variant.startswith("rfsm"):
            return (await self.app.run(question_input("happy"), thread_id=thread_id)).state.__dict__
        return await self.app.ainvoke(lg_input("happy"), lg_config(thread_id), durability="sync")

    @contextlib.asynccontextmanager
    async def cold(self) -> AsyncIterator[Any]:
        """A load function on a store (connection) opened for it, closed after."""
        if self.variant.startswith("rfsm"):
            app = build_rfsm(self._store())

            async def load(thread_id: str) -> Any:
                snapshot = await app.get_state(thread_id)
                return None if snapshot is None else snapshot.state.__dict__

            yield load
            return
        async with self._saver() as saver:
            lg_app = build_langgraph(saver)

            async def lg_load(thread_id: str) -> Any:
                return (await lg_app.aget_state(lg_config(thread_id))).values

            await saver.setup()  # as the app's first call would
            yield lg_load


async def _fill(engine: _Engine, upto: int) -> float:
    """Create threads until ``engine`` holds ``upto``; seconds taken."""
    t0 = time.perf_counter()
    for i in range(len(engine.threads), upto):
        await engine.run_new(f"f{i}")
    return time.perf_counter() - t0


async def _runs(engine: _Engine, tag: str, count: int) -> float:
    """Seconds per run of ``count`` runs on new threads."""
    with timed() as sample:
        for j in range(count):
            final = await engine.run_new(f"{tag}-{j}")
    check_final(engine.variant, "happy", final)
    return sample.wall / count


async def _loads(engine: _Engine, threads: list[str]) -> float:
    """Seconds per cold load of ``threads``, each once, through a store opened for them."""
    async with engine.cold() as load:
        with timed() as sample:
            for thread_id in threads:
                state = await load(thread_id)
    check_final(engine.variant, "happy", state)
    return sample.wall / len(threads)


async def _measure(sizes: Sizes, variants: list[str], root: Path) -> dict[str, Any]:
    counts = sorted(sizes.fig13_threads)
    engines = {(n, v): _Engine(v, root / f"{v}-{n}") for n in counts for v in variants}
    for engine in engines.values():
        await engine.open()
    probes, reps = sizes.fig13_probes, sizes.reps
    runs: dict[int, dict[str, list[float]]] = {n: {v: [] for v in variants} for n in counts}
    loads: dict[int, dict[str, list[float]]] = {
        n: {v: [] for v in variants if v != "rfsm_fsync"} for n in counts
    }
    created = dict.fromkeys(variants, 0.0)
    try:
        for v in variants:  # warm-up, in a store of its own
            warm = _Engine(v, root / f"warm-{v}")
            await warm.open()
            await _runs(warm, "w", 3)
            await _loads(warm, warm.threads)
            await warm.close()
        behind = [key for key in engines if key[0]]
        while behind:  # fill in chunks, stores taking turns
            for n, v in behind:
                engine = engines[n, v]
                made = len(engine.threads)
                seconds = await _fill(engine, min(n, made + CHUNK))
                if n == counts[-1] and made < sizes.fig13_created:
                    created[v] += seconds
            behind = [key for key in behind if len(engines[key].threads) < key[0]]
        # Every store, every engine, in turn: a slower moment of the machine falls
        # on all sizes alike.
        for rep in range(reps):
            for n in counts[rep % len(counts) :] + counts[: rep % len(counts)]:
                for v in alternate(rep, *variants):
                    runs[n][v].append(await _runs(engines[n, v], f"n{rep}", probes))
        for rep in range(reps):
            for n in counts[rep % len(counts) :] + counts[: rep % len(counts)]:
                for v in alternate(rep, *loads[n]):
                    threads = [f"n{rep}-{j}" for j in range(probes)]
                    loads[n][v].append(await _loads(engines[n, v], threads))
    finally:
        for engine in engines.values():
            await engine.close()
    return {
        "runs_ms": {n: {v: median(s) * 1e3 for v, s in by.items()} for n, by in runs.items()},
        "loads_ms": {n: {v: median(s) * 1e3 for v, s in by.items()} for n, by in loads.items()},
        "created_s": created,
    }


def _flat_row(metric: str, by_size: dict[int, dict[str, float]], ours: str) -> Row:
    """The largest store's time over the empty one's, ours and the peer's; goal ``FLAT``."""
    first, last = min(by_size), max(by_size)

    def spread(variant: str) -> float | None:
        if variant not in by_size[first]:
            return None
        return by_size[last][variant] / by_size[first][variant]

    mine = spread(ours)
    holds, margin = at_most(mine, FLAT)
    return Row(
        metric=metric,
        unit="x",
        research_fsm=mine,
        langgraph=spread("lg_asqlite"),
        goal=f"flat: ≤ {FLAT}x",
        holds=holds,
        margin=margin,
    )


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(13, TITLE)
    if not 0 < sizes.fig13_created <= max(sizes.fig13_threads):
        raise ValueError("fig13_created must be within the largest of fig13_threads")
    variants = ["rfsm_none", "rfsm_fsync"] + (["lg_asqlite"] if peer else [])
    with temp_dir("fig13") as root:
        data = asyncio.run(_measure(sizes, variants, root))
    runs, loads, created = data["runs_ms"], data["loads_ms"], data["created_s"]
    counts = sorted(runs)
    largest = f"{counts[-1]:,}"

    def peer_of(table: dict[str, float]) -> float | None:
        return table.get("lg_asqlite")

    for ours in ("rfsm_none", "rfsm_fsync"):
        for n in counts:
            fig.rows.append(
                faster_row(
                    f"run on a new thread, {n:,} threads in the store, {SHORT[ours]} vs "
                    "AsyncSqliteSaver",
                    "ms",
                    runs[n][ours],
                    peer_of(runs[n]),
                )
            )
        fig.rows.append(
            _flat_row(
                f"run on a new thread, {SHORT[ours]}: {largest} threads in the store over 0",
                runs,
                ours,
            )
        )
    for n in counts:
        fig.rows.append(
            faster_row(
                f"cold load of an existing thread, {n:,} threads in the store, JsonFile vs "
                "AsyncSqliteSaver",
                "ms",
                loads[n]["rfsm_none"],
                peer_of(loads[n]),
            )
        )
    fig.rows.append(
        _flat_row(
            f"cold load of an existing thread, JsonFile: {largest} threads in the store over 0",
            loads,
            "rfsm_none",
        )
    )
    for ours in ("rfsm_none", "rfsm_fsync"):
        fig.rows.append(
            faster_row(
                f"creating {sizes.fig13_created:,} conversations (a run on a new thread each, one "
                f"after another), {SHORT[ours]} vs AsyncSqliteSaver",
                "s",
                created[ours],
                created.get("lg_asqlite"),
            )
        )

    table = []
    for n in counts:
        for v in variants:
            load = loads[n].get(v)
            table.append([f"{n:,}", LABELS[v], fmt(runs[n][v]), fmt(load)])
    fig.detail = {
        "threads": list(sizes.fig13_threads),
        "created": sizes.fig13_created,
        "probes": sizes.fig13_probes,
        "reps": sizes.reps,
        **data,
    }
    fig.detail_md = [
        f"Threads in the store: {', '.join(f'{n:,}' for n in counts)}; at each, {sizes.reps} "
        f"alternating batches of {sizes.fig13_probes} runs on new threads and of "
        f"{sizes.fig13_probes} cold loads (a store or connection opened for the batch); "
        "medians. Creating "
        f"{sizes.fig13_created:,} conversations: "
        + ", ".join(f"{LABELS[v]} {created[v]:.1f} s" for v in variants)
        + ".",
        "",
        *md_table(["threads in the store", "engine / store", "ms per run", "ms per load"], table),
    ]
    return fig
