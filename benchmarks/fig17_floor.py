"""Figure 17: each store's cost per step beside its floor.

Figure 1's graph, retry path (8 steps, 9 saves a run: the first input and each
step), runs on new threads one after the other, variants alternating in one
process; medians of repetitions. Each store is set beside what it cannot beat:

* memory store: per step, against the same graph written by hand (``_floor``);
* file store, ``durability="none"``: per step, against the memory store;
* file store, ``durability="fsync"``: per durable save, against a raw loop of
  ``write`` + ``fdatasync`` of a line of the same size on the same disk; and its
  fsyncs per durable save (``fsync``, ``fdatasync`` and ``syncfs`` counted), one
  run at a time (on new threads: each new file's line and folder entry are synced by
  one ``syncfs`` where there is one, else by a file and a folder sync; and
  turns of one conversation) and 100 runs at once;
* PostgreSQL (``fsync=on``, a throwaway server like figure 12's; skipped without
  one): per durable save, against one ``INSERT`` of a row of the same size and its
  ``COMMIT`` in one round trip, one after another on one connection.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from research_fsm.engine import MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import FileSystem

from ._common import (
    FigureResult,
    Row,
    Sample,
    Sizes,
    alternate,
    at_most,
    fmt,
    md_table,
    median,
    temp_dir,
    timed,
)
from ._floor import hand_runs_batch
from ._graphs import STEPS, build_rfsm, question_input

TITLE = "Each store per step beside its floor"
PATH = "retry"
SAVES = STEPS[PATH] + 1  # the first input's checkpoint and one per step
GOAL_MEMORY = 3.0
GOAL_NONE = 3.0
GOAL_FSYNC = 1.5
GOAL_SYNCS_ONE = 1.05
CONCURRENT = 100
LINE_BYTES = 400  # about a step's line (changes only) in the file store and Postgres


class CountingFileSystem(FileSystem):
    """The file store's system calls, counting the syncs."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def fsync(self, fd: int) -> None:
        self.syncs += 1
        super().fsync(fd)

    def fdatasync(self, fd: int) -> None:
        self.syncs += 1
        super().fdatasync(fd)

    def syncfs(self, fd: int) -> None:
        self.syncs += 1
        super().syncfs(fd)


async def _engine_batch(store: Any, n: int, tag: str, gather: bool = False) -> Sample:
    app = build_rfsm(store)
    inputs = [question_input(PATH) for _ in range(n)]
    with timed() as sample:
        if gather:
            await asyncio.gather(*(app.run(inputs[i], thread_id=f"{tag}{i}") for i in range(n)))
        else:
            for i in range(n):
                await app.run(inputs[i], thread_id=f"{tag}{i}")
    return sample


async def _hand_batch(n: int) -> Sample:
    sample, steps = await hand_runs_batch([question_input(PATH) for _ in range(n)])
    assert steps == n * STEPS[PATH]
    return sample


def raw_append_fdatasync(directory: Path, size: int, count: int) -> float:
    """Seconds per ``write`` + ``fdatasync`` of ``size`` bytes appended to one file."""
    data = os.urandom(size)
    fd = os.open(directory / "raw.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        t0 = time.perf_counter()
        for _ in range(count):
            os.write(fd, data)
            os.fdatasync(fd)
        return (time.perf_counter() - t0) / count
    finally:
        os.close(fd)


def _syncs_per_save(root: Path, runs: int, gather: bool, same_thread: bool = False) -> float:
    """Syncs per durable save of ``runs`` runs on new threads (``same_thread``: turns
    of one conversation, one after the other)."""
    fs = CountingFileSystem()
    store = JsonFileCheckpointStore(root, durability="fsync", fs=fs)
    asyncio.run(_engine_batch(store, 1, "w"))  # the folder made, the key written
    fs.syncs = 0
    if same_thread:

        async def turns() -> None:
            app = build_rfsm(store)
            for _ in range(runs):
                await app.run(question_input(PATH), thread_id="w0")

        asyncio.run(turns())
    else:
        asyncio.run(_engine_batch(store, runs, "s", gather=gather))
    return fs.syncs / (runs * SAVES)


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(17, TITLE)
    n = sizes.fig1_runs
    n_file = sizes.fig2_runs
    samples: dict[str, list[Sample]] = {k: [] for k in ("hand", "memory", "none", "fsync")}
    raw: list[float] = []
    with temp_dir("fig16") as root:
        counter = [0]

        def measure(variant: str) -> Sample:
            counter[0] += 1
            where = root / f"{variant}-{counter[0]}"
            if variant == "hand":
                return asyncio.run(_hand_batch(n))
            if variant == "memory":
                return asyncio.run(_engine_batch(MemoryCheckpointStore(), n, "m"))
            store = JsonFileCheckpointStore(where, durability=variant)  # type: ignore[arg-type]
            asyncio.run(store.secret())  # the folder and key made before the clock starts
            return asyncio.run(_engine_batch(store, n if variant == "none" else n_file, "f"))

        for variant in samples:  # warm-up
            measure(variant)
        for rep in range(sizes.reps):
            for variant in alternate(rep, *samples):
                samples[variant].append(measure(variant))
            raw_dir = root / f"raw-{rep}"
            raw_dir.mkdir()
            raw.append(raw_append_fdatasync(raw_dir, LINE_BYTES, max(20, n_file)))
        syncs_one = _syncs_per_save(root / "syncs-one", max(3, n_file // 4), gather=False)
        syncs_many = _syncs_per_save(root / "syncs-many", CONCURRENT, gather=True)
        syncs_turns = _syncs_per_save(root / "syncs-turns", 30, gather=False, same_thread=True)

    def us(variant: str, per: int, attr: str = "wall") -> float:
        runs = n_file if variant == "fsync" else n
        return median([getattr(s, attr) for s in samples[variant]]) / (runs * per) * 1e6

    hand, memory, none = us("hand", STEPS[PATH]), us("memory", STEPS[PATH]), us("none", STEPS[PATH])
    fsync_save, raw_us = us("fsync", SAVES), median(raw) * 1e6
    pg = _postgres(sizes) if _postgres_missing() is None else None

    def ratio_row(metric: str, mine: float, floor: float, goal: float) -> Row:
        ratio = mine / floor if floor else None
        holds, margin = at_most(ratio, goal)
        return Row(
            metric=f"{metric} ({fmt(mine)} / {fmt(floor)} µs)",
            unit="x",
            research_fsm=ratio,
            goal=f"≤ {goal:g}x",
            holds=holds,
            margin=margin,
        )

    fig.rows.append(
        ratio_row("memory store per step / hand-written loop", memory, hand, GOAL_MEMORY)
    )
    fig.rows.append(ratio_row("file store none per step / memory store", none, memory, GOAL_NONE))
    fig.rows.append(
        ratio_row(
            "file store fsync per durable save / raw write+fdatasync",
            fsync_save,
            raw_us,
            GOAL_FSYNC,
        )
    )
    holds, margin = at_most(syncs_one, GOAL_SYNCS_ONE)
    fig.rows.append(
        Row(
            metric="file store fsync: syncs per durable save, one run at a time, new threads",
            unit="syncs",
            research_fsm=syncs_one,
            goal=f"≤ {GOAL_SYNCS_ONE}",
            holds=holds,
            margin=margin,
        )
    )
    holds, margin = at_most(syncs_turns, GOAL_SYNCS_ONE)
    fig.rows.append(
        Row(
            metric="file store fsync: syncs per durable save, turns of one conversation",
            unit="syncs",
            research_fsm=syncs_turns,
            goal=f"≤ {GOAL_SYNCS_ONE}",
            holds=holds,
            margin=margin,
        )
    )
    fig.rows.append(
        Row(
            metric=f"file store fsync: syncs per durable save, {CONCURRENT} runs at once",
            unit="syncs",
            research_fsm=syncs_many,
            goal="well below 1",
            holds=syncs_many < 0.5,
            margin=f"{syncs_many:.3f}",
        )
    )
    table = [
        [
            "hand-written loop (the floor)",
            "per step",
            fmt(hand),
            fmt(us("hand", STEPS[PATH], "cpu")),
        ],
        ["MemoryCheckpointStore", "per step", fmt(memory), fmt(us("memory", STEPS[PATH], "cpu"))],
        ["JsonFile none", "per step", fmt(none), fmt(us("none", STEPS[PATH], "cpu"))],
        ["JsonFile fsync", "per durable save", fmt(fsync_save), fmt(us("fsync", SAVES, "cpu"))],
        [f"raw write({LINE_BYTES} B)+fdatasync", "per write", fmt(raw_us), ""],
    ]
    detail: dict[str, Any] = {
        "runs_per_batch": n,
        "file_fsync_runs_per_batch": n_file,
        "reps": sizes.reps,
        "us": {
            "hand_per_step": hand,
            "memory_per_step": memory,
            "none_per_step": none,
            "fsync_per_save": fsync_save,
            "raw_write_fdatasync": raw_us,
        },
        "syncs_per_save": {"one": syncs_one, "turns": syncs_turns, "concurrent": syncs_many},
    }
    if pg is not None:
        fig.rows.append(
            ratio_row(
                "PostgreSQL per durable save / one INSERT+COMMIT round trip",
                pg["save_us"],
                pg["insert_us"],
                1.5,
            )
        )
        table.append(["PostgresCheckpointStore", "per durable save", fmt(pg["save_us"]), ""])
        table.append(
            [
                f"INSERT ({LINE_BYTES} B) + COMMIT, one round trip",
                "per row",
                fmt(pg["insert_us"]),
                "",
            ]
        )
        detail["postgres"] = pg
    else:
        fig.notes.append(f"PostgreSQL not measured: {_postgres_missing() or 'no server'}")
    cpu = {v: us(v, STEPS[PATH], "cpu") for v in ("hand", "memory", "none")}
    detail["cpu_ratios"] = {
        "memory_vs_hand": cpu["memory"] / cpu["hand"] if cpu["hand"] else None,
        "none_vs_memory": cpu["none"] / cpu["memory"] if cpu["memory"] else None,
    }
    fig.detail = detail
    fig.detail_md = [
        f"Figure 1's graph, {PATH} path ({STEPS[PATH]} steps, {SAVES} saves a run); {n} runs "
        f"per batch ({n_file} with fsync), {sizes.reps} repetitions, variants alternating; "
        "medians. Syncs counted on the store's file system calls. In CPU time (what a loaded "
        f"machine distorts least): memory / hand {fmt(detail['cpu_ratios']['memory_vs_hand'])}x, "
        f"file none / memory {fmt(detail['cpu_ratios']['none_vs_memory'])}x.",
        "",
        *md_table(["what", "per", "µs (median)", "CPU µs"], table),
    ]
    return fig


# -- PostgreSQL -------------------------------------------------------------------------


def _postgres_missing() -> str | None:
    for module in ("psycopg", "psycopg_pool"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'research-fsm[postgres]')"
    return None


def _postgres(sizes: Sizes) -> dict[str, float] | None:
    from . import postgres as bench

    try:
        server = bench.throwaway_server()
    except RuntimeError:
        return None
    try:
        dbs = bench.Databases(server.dsn)
        runs = max(5, sizes.fig2_runs)
        saves, inserts = [], []
        for rep in range(sizes.reps):
            db = dbs.new("f")
            for what in alternate(rep, "store", "insert"):
                if what == "store":
                    threads = [f"t{rep}-{i}" for i in range(runs)]
                    seconds = asyncio.run(bench.rfsm_runs(db, threads, gather=False))
                    saves.append(seconds / (runs * (STEPS[bench.SCENARIO] + 1)))
                else:
                    inserts.append(asyncio.run(_insert_commit(db, runs * 4)))
        return {"save_us": median(saves) * 1e6, "insert_us": median(inserts) * 1e6}
    finally:
        server.stop()


async def _insert_commit(dsn: str, count: int) -> float:
    """Seconds per ``INSERT`` of one row and its ``COMMIT``, in one round trip."""
    import psycopg

    body = os.urandom(LINE_BYTES)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_rows (thread text, seq int, body bytea, "
            "PRIMARY KEY (thread, seq))"
        )
        t0 = time.perf_counter()
        for i in range(count):
            await conn.execute("INSERT INTO floor_rows VALUES (%s, %s, %s)", (f"t{i % 7}", i, body))
        return (time.perf_counter() - t0) / count
