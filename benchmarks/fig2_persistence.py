"""Figure 2: cost per step with persistence.

Pairings (each batch: ``fig2_runs`` new threads one after the other, a fresh
store or database per batch, set up before the clock starts):

* ``JsonFileCheckpointStore(durability="fsync")`` vs LangGraph ``SqliteSaver``
  with ``durability="sync"`` (its defaults: WAL, ``synchronous=FULL``, so every
  commit is fsynced); LangGraph's ``SqliteSaver`` is synchronous-only, so it
  runs with ``invoke`` and plain-function nodes.
* ``JsonFileCheckpointStore(durability="none")`` vs the same ``SqliteSaver`` on a
  connection with ``PRAGMA synchronous=OFF`` (neither fsyncs).
* ``MemoryCheckpointStore`` vs ``InMemorySaver`` (``ainvoke``, ``durability="sync"``).

"With fsync, the cost per step is about one fsync": the extra cost of
``fsync`` over ``none`` per durable step (a checkpoint: one per node, one for
the run's input, as LangGraph's step -1), in units of one raw fsync: appending
a checkpoint's worth of bytes to an open file in the same directory and
``fdatasync``. Measured over the turns of one conversation (goal), and with a
new thread per run, whose first checkpoint also makes a file and syncs the
directory (reported).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
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
    at_most,
    faster_row,
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

TITLE = "Cost per step with persistence"
SCENARIOS = ("happy", "retry")

LABELS = {
    "rfsm_fsync": "research_fsm, JsonFileCheckpointStore(durability='fsync')",
    "rfsm_none": "research_fsm, JsonFileCheckpointStore(durability='none')",
    "rfsm_mem": "research_fsm, MemoryCheckpointStore",
    "rfsm_fsync_one": "research_fsm, JsonFileCheckpointStore(durability='fsync'), one thread",
    "rfsm_none_one": "research_fsm, JsonFileCheckpointStore(durability='none'), one thread",
    "lg_sqlite": "LangGraph, SqliteSaver (invoke, durability='sync', synchronous=FULL)",
    "lg_sqlite_off": "LangGraph, SqliteSaver (invoke, durability='sync', synchronous=OFF)",
    "lg_mem": "LangGraph, InMemorySaver (ainvoke, durability='sync')",
    "lg_asqlite": "LangGraph, AsyncSqliteSaver (ainvoke, durability='sync')",
}
PAIRS = (
    ("rfsm_fsync", "lg_sqlite", "JsonFile fsync vs SqliteSaver"),
    ("rfsm_none", "lg_sqlite_off", "JsonFile none vs SqliteSaver synchronous=OFF"),
    ("rfsm_mem", "lg_mem", "Memory vs InMemorySaver"),
)


async def _rfsm_batch(store: Any, scenario: str, n: int, tag: str, one: bool = False) -> Sample:
    """``n`` runs one after the other: on new threads, or (``one``) as the turns
    of one conversation."""
    app = build_rfsm(store)
    inputs = [question_input(scenario) for _ in range(n)]
    ids = [tag if one else f"{tag}-{i}" for i in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.run(inputs[i], thread_id=ids[i])
    return sample


def _lg_sqlite_batch(path: Path, scenario: str, n: int, synchronous_off: bool) -> Sample:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        if synchronous_off:
            conn.execute("PRAGMA synchronous=OFF")
        saver = SqliteSaver(conn)
        saver.setup()
        app = build_langgraph(saver, async_nodes=False)
        inputs = [lg_input(scenario) for _ in range(n)]
        configs = [lg_config(f"t{i}") for i in range(n)]
        with timed() as sample:
            for i in range(n):
                app.invoke(inputs[i], configs[i], durability="sync")
        return sample
    finally:
        conn.close()


async def _lg_mem_batch(scenario: str, n: int) -> Sample:
    from langgraph.checkpoint.memory import InMemorySaver

    app = build_langgraph(InMemorySaver())
    inputs = [lg_input(scenario) for _ in range(n)]
    configs = [lg_config(f"t{i}") for i in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.ainvoke(inputs[i], configs[i], durability="sync")
    return sample


async def _lg_asqlite_batch(path: Path, scenario: str, n: int) -> Sample:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await saver.setup()
        app = build_langgraph(saver)
        inputs = [lg_input(scenario) for _ in range(n)]
        configs = [lg_config(f"t{i}") for i in range(n)]
        with timed() as sample:
            for i in range(n):
                await app.ainvoke(inputs[i], configs[i], durability="sync")
        return sample


def raw_fsync_seconds(directory: Path, size: int, count: int = 200) -> dict[str, float]:
    """Median seconds of: appending ``size`` bytes to an open file and
    ``fdatasync`` (the least one durable write costs); write+fsync of a new file;
    the same plus link into place and a directory fsync."""
    data = os.urandom(size)
    appended, plain, full = [], [], []
    fd = os.open(directory / "raw-append.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            os.write(fd, data)
            os.fdatasync(fd)
            appended.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    for i in range(count):
        path = directory / f"raw-{i}.tmp"
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        t1 = time.perf_counter()
        os.link(path, directory / f"raw-{i}.json")
        os.unlink(path)
        dfd = os.open(directory, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        t2 = time.perf_counter()
        plain.append(t1 - t0)
        full.append(t2 - t0)
    return {
        "append_fdatasync": median(appended),
        "write_fsync": median(plain),
        "write_fsync_link_dirfsync": median(full),
    }


async def _recorded_checkpoints() -> list[Any]:
    """The checkpoints of one happy-path run, each with its step's changes."""
    checkpoints: list[Any] = []

    class Recorder(MemoryCheckpointStore):
        saves_changes = True  # so the engine hands over each step's changes

        async def save(self, checkpoint: Any) -> None:
            checkpoints.append(checkpoint)
            await super().save(checkpoint)

    await build_rfsm(Recorder()).run(question_input("happy"), thread_id="r")
    return checkpoints


async def durable_save_vs_raw(directory: Path, count: int) -> dict[str, float]:
    """Side by side, alternating, on one disk: median seconds of a durable
    ``save`` (``durability="fsync"``, appended to a held thread's segment) and of
    appending the same number of bytes to an open file and ``fdatasync``."""
    import dataclasses
    import secrets

    from research_fsm.stores._codec.logformat import encode_line

    recorded = await _recorded_checkpoints()
    template = next(cp for cp in recorded if cp.changes)
    store = JsonFileCheckpointStore(directory / "store", durability="fsync")
    lease = await store.acquire("t")
    parent = dataclasses.replace(recorded[0], thread_id="t")
    await store.save(parent)
    data = os.urandom(len(encode_line(template, template.changes, {})))
    fd = os.open(directory / "raw-append.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saves, raws = [], []
    try:
        for i in range(count):
            cp = dataclasses.replace(
                template,
                thread_id="t",
                checkpoint_id=secrets.token_hex(12),
                parent_id=parent.checkpoint_id,
                seq=parent.seq + 1,
            )
            for turn in (i % 2, 1 - i % 2):  # alternate which goes first
                t0 = time.perf_counter()
                if turn:
                    await store.save(cp)
                else:
                    os.write(fd, data)
                    os.fdatasync(fd)
                (saves if turn else raws).append(time.perf_counter() - t0)
            parent = cp
    finally:
        os.close(fd)
        await lease.release()
    return {"save": median(saves), "raw": median(raws), "bytes": float(len(data))}


def _checkpoint_size(directory: Path) -> int:
    """Median bytes of one checkpoint line in the store's segments."""
    sizes = [
        len(line)
        for path in directory.rglob("*.jsonl")
        for line in path.read_bytes().splitlines(keepends=True)
    ]
    return int(median(sizes)) if sizes else 2000


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(2, TITLE)
    n = sizes.fig2_runs
    variants = ["rfsm_fsync", "rfsm_none", "rfsm_mem", "rfsm_fsync_one", "rfsm_none_one"]
    if peer:
        variants += ["lg_sqlite", "lg_sqlite_off", "lg_mem", "lg_asqlite"]
    samples: dict[str, dict[str, list[Sample]]] = {s: {v: [] for v in variants} for s in SCENARIOS}
    counter = [0]

    with temp_dir("fig2") as root:

        def measure(variant: str, scenario: str) -> Sample:
            counter[0] += 1
            where = root / f"{variant}-{counter[0]}"
            if variant.startswith("rfsm"):
                store: Any
                if variant == "rfsm_mem":
                    store = MemoryCheckpointStore()
                else:
                    durability = "fsync" if variant.startswith("rfsm_fsync") else "none"
                    store = JsonFileCheckpointStore(where, durability=durability)  # type: ignore[arg-type]
                one = variant.endswith("_one")
                return asyncio.run(_rfsm_batch(store, scenario, n, "t", one))
            where.mkdir()
            db = where / "checkpoints.sqlite"
            if variant == "lg_sqlite":
                return _lg_sqlite_batch(db, scenario, n, synchronous_off=False)
            if variant == "lg_sqlite_off":
                return _lg_sqlite_batch(db, scenario, n, synchronous_off=True)
            if variant == "lg_asqlite":
                return asyncio.run(_lg_asqlite_batch(db, scenario, n))
            return asyncio.run(_lg_mem_batch(scenario, n))

        asyncio.run(_verify(root, peer))
        for scenario in SCENARIOS:  # warm-up
            for variant in variants:
                measure(variant, scenario)
        for rep in range(sizes.reps):
            for scenario in SCENARIOS:
                for variant in alternate(rep, *variants):
                    samples[scenario][variant].append(measure(variant, scenario))
        size = _checkpoint_size(next(root.glob("rfsm_fsync-*")))
        raw_dir = root / "raw-fsync"
        raw_dir.mkdir()
        raw = raw_fsync_seconds(raw_dir, size)
        side_dir = root / "save-vs-raw"
        side_dir.mkdir()
        side = asyncio.run(durable_save_vs_raw(side_dir, max(100, 4 * n)))

    def per_step(scenario: str, variant: str, attr: str = "wall") -> float | None:
        if variant not in samples[scenario]:
            return None
        return (
            median([getattr(s, attr) for s in samples[scenario][variant]])
            / (n * STEPS[scenario])
            * 1e6
        )

    for ours, theirs, label in PAIRS:
        mine, peer_us = per_step("happy", ours), per_step("happy", theirs)
        fig.rows.append(faster_row(f"per step, happy path, {label}", "µs", mine, peer_us))

    raw_us = raw["append_fdatasync"] * 1e6

    def extra_per_step(scenario: str, ours: str, theirs: str) -> float:
        """fsync's extra cost per durable step: per checkpoint, each node's and
        the input's (LangGraph's step -1), in raw fsyncs."""
        fsync_us, none_us = per_step(scenario, ours), per_step(scenario, theirs)
        assert fsync_us is not None and none_us is not None
        steps = STEPS[scenario]
        return (fsync_us - none_us) * steps / (steps + 1) / raw_us

    extra = {s: extra_per_step(s, "rfsm_fsync_one", "rfsm_none_one") for s in SCENARIOS}
    extra_new = {s: extra_per_step(s, "rfsm_fsync", "rfsm_none") for s in SCENARIOS}
    lg_extra = None
    full_us, off_us = per_step("happy", "lg_sqlite"), per_step("happy", "lg_sqlite_off")
    if full_us is not None and off_us is not None:
        lg_extra = (full_us - off_us) / raw_us
    holds, margin = at_most(extra["happy"], 1.5)
    fig.rows.append(
        Row(
            metric="fsync's extra cost per durable step (a checkpoint: each node's and the "
            "input's), one conversation, fsync minus none, in raw fsyncs",
            unit="fsyncs",
            research_fsm=extra["happy"],
            goal="≈ 1 fsync (≤ 1.5)",
            holds=holds,
            margin=margin,
        )
    )
    fig.rows.append(
        Row(
            metric="the same with a new thread per run (its first checkpoint also makes a "
            "file and syncs the folder)",
            unit="fsyncs",
            research_fsm=extra_new["happy"],
            langgraph=lg_extra,
        )
    )

    side_ratio = side["save"] / side["raw"]
    holds, margin = at_most(side_ratio, 1.3)
    fig.rows.append(
        Row(
            metric="a durable checkpoint (save with durability='fsync', one step's changes "
            "appended) over one append + fdatasync of the same bytes, side by side",
            unit="x",
            research_fsm=side_ratio,
            goal="≤ 1.3x",
            holds=holds,
            margin=margin,
        )
    )

    table = []
    detail: dict[str, Any] = {
        "durable_save_us": side["save"] * 1e6,
        "durable_save_raw_append_fdatasync_us": side["raw"] * 1e6,
        "durable_save_bytes": side["bytes"],
        "runs_per_batch": n,
        "reps": sizes.reps,
        "checkpoint_bytes": size,
        "raw_fsync_us": raw_us,
        "raw_new_file_fsync_us": raw["write_fsync"] * 1e6,
        "raw_durable_save_us": raw["write_fsync_link_dirfsync"] * 1e6,
        "fsync_extra_in_fsyncs": extra,
        "fsync_extra_in_fsyncs_new_threads": extra_new,
        "langgraph_fsync_extra_in_fsyncs": lg_extra,
        "steps": {},
    }
    for scenario in SCENARIOS:
        detail["steps"][scenario] = {}
        for variant in variants:
            wall, cpu = per_step(scenario, variant), per_step(scenario, variant, "cpu")
            detail["steps"][scenario][variant] = {"us_per_step": wall, "cpu_us_per_step": cpu}
            table.append(
                [
                    scenario,
                    LABELS[variant],
                    fmt(wall),
                    fmt(cpu),
                    fmt(None if wall is None else wall * STEPS[scenario]),
                ]
            )
    fig.detail = detail
    fig.detail_md = [
        f"{n} runs per batch (new threads), {sizes.reps} repetitions, alternating; medians. "
        f"A checkpoint line here is ~{size:,} bytes; one raw fsync (append that many bytes to "
        f"an open file, fdatasync) costs {raw_us:.0f} µs; a new file written and fsynced "
        f"{raw['write_fsync'] * 1e6:.0f} µs, plus a link and a directory fsync "
        f"{raw['write_fsync_link_dirfsync'] * 1e6:.0f} µs. fsync's extra cost per durable step (checkpoint) over "
        f"'none': {extra['happy']:.2f} raw fsyncs (happy), {extra['retry']:.2f} (retry) in one "
        f"conversation; {extra_new['happy']:.2f} and {extra_new['retry']:.2f} with a new thread "
        "per run"
        + (f"; SqliteSaver FULL over OFF: {lg_extra:.2f}." if lg_extra is not None else ".")
        + f" A durable save of a {side['bytes']:.0f}-byte line: {side['save'] * 1e6:.0f} µs, "
        f"against {side['raw'] * 1e6:.0f} µs for appending those bytes and fdatasync, "
        f"alternating in the same run ({side_ratio:.2f}x).",
        "",
        *md_table(["path", "engine / store", "µs/step", "CPU µs/step", "µs/run"], table),
    ]
    return fig


async def _verify(root: Path, peer: bool) -> None:
    for scenario in SCENARIOS:
        store = JsonFileCheckpointStore(root / "verify", durability="none")
        result = await build_rfsm(store).run(question_input(scenario), thread_id=f"v-{scenario}")
        check_final("research_fsm", scenario, result.state.__dict__)
    if peer:
        from langgraph.checkpoint.memory import InMemorySaver

        app = build_langgraph(InMemorySaver())
        for scenario in SCENARIOS:
            out = await app.ainvoke(lg_input(scenario), lg_config(scenario), durability="sync")
            check_final("LangGraph", scenario, out)
