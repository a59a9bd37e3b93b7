"""Figure 15: a page of ``history()`` as a thread grows: 100, 1,000 and 10,000 checkpoints.

One thread of the benchmark graph answers a question (the happy path), then grows by
``update_state`` calls as node ``synthesis`` (each sets two fields, so the state keeps
its size and only the number of checkpoints grows), with a new line of history every
``LINE_EVERY`` checkpoints (``run(None, checkpoint_id=...)`` from ``LINE_BACK``
checkpoints before: the re-runs a thread inspector pages through). At each size three
pages of ``PAGE`` snapshots are read: the newest (``history(limit=10)``), the middle
(``before=`` the checkpoint in the middle) and the oldest; each the median of 21 reads
(5 with ``--quick``) after ``WARM`` untimed ones. A page costs the same at every size
when it reads no more than the page needs. Stores: memory, the JSON file store (a thread grown with ``durability=
"none"``, read through a ``"fsync"`` store: the files are the same), and PostgreSQL
(a throwaway server, when its binaries and the ``postgres`` extra are there).
LangGraph's ``SqliteSaver`` (``get_state_history(limit=10, before=...)``) at the same
sizes when it is installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

from research_fsm.engine import CompiledGraph, MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sizes,
    at_most,
    faster_row,
    fmt,
    md_table,
    median,
    postgres_server,
    temp_dir,
    timed,
)
from ._graphs import build_langgraph, build_rfsm, lg_config, lg_input, question_input

TITLE = "a page of history as the thread grows"
PAGE = 10
LINE_EVERY = 100
LINE_BACK = 50
POSITIONS = ("newest", "middle", "oldest")
FULL_SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (100, 300)
WARM = 3  # untimed reads of each page first
SAME = 1.5
"""A page "costs the same" at the largest size when it costs at most this many times
its cost at the smallest (timing noise on a shared machine)."""
LABELS = {
    "memory": "research_fsm, MemoryCheckpointStore",
    "file": "research_fsm, JsonFileCheckpointStore(fsync)",
    "postgres": "research_fsm, PostgresCheckpointStore",
    "sqlite": "LangGraph, SqliteSaver",
}


def _update(i: int) -> dict[str, Any]:
    return {"conversation_summary": f"note {i}", "confidence_score": i % 100}


async def _grow(app: CompiledGraph[Any], size: int) -> list[str]:
    """Grow thread ``t`` to ``size`` checkpoints; their ids, newest first."""
    await app.run(question_input("happy"), thread_id="t")
    count = len([s async for s in app.history("t")])
    while count < size:
        if count % LINE_EVERY == 0 and count > LINE_BACK:
            back = [s async for s in app.history("t", limit=LINE_BACK)][-1]
            await app.run(None, thread_id="t", checkpoint_id=back.checkpoint_id)
        else:
            await app.update_state("t", _update(count), as_node="synthesis")
        count += 1
    ids = [s.checkpoint_id async for s in app.history("t")]
    assert len(ids) == size, (len(ids), size)
    return ids


def _befores(ids: list[str]) -> dict[str, str | None]:
    """Where each position's page starts (``before=``), for ids newest first."""
    return {"newest": None, "middle": ids[len(ids) // 2], "oldest": ids[-PAGE - 1]}


async def _rfsm_pages(
    app: CompiledGraph[Any], ids: list[str], reads: int
) -> dict[str, dict[str, float]]:
    """The median wall and CPU µs of ``reads`` reads of each position's page."""
    out: dict[str, dict[str, float]] = {"wall": {}, "cpu": {}}
    for position, before in _befores(ids).items():
        start = 0 if before is None else ids.index(before) + 1
        for _ in range(WARM):
            [s async for s in app.history("t", limit=PAGE, before=before)]
        samples = []
        for _ in range(reads):
            with timed() as sample:
                page = [s async for s in app.history("t", limit=PAGE, before=before)]
            samples.append(sample)
            assert [s.checkpoint_id for s in page] == ids[start : start + PAGE], position
        out["wall"][position] = median([s.wall for s in samples]) * 1e6
        out["cpu"][position] = median([s.cpu for s in samples]) * 1e6
    return out


async def _rfsm(
    kind: str, root: Path, size: int, reads: int, dsn: str | None
) -> dict[str, dict[str, float]]:
    store: Any
    reader: Any
    if kind == "memory":
        store = reader = MemoryCheckpointStore()
    elif kind == "file":
        store = JsonFileCheckpointStore(root / f"file-{size}", durability="none")
        reader = JsonFileCheckpointStore(root / f"file-{size}", durability="fsync")
    else:
        from research_fsm.stores.postgres import PostgresCheckpointStore

        assert dsn is not None
        store = reader = PostgresCheckpointStore(dsn, schema=f"pages_{size}")
    try:
        ids = await _grow(build_rfsm(store), size)
        return await _rfsm_pages(build_rfsm(reader), ids, reads)
    finally:
        for made in {id(store): store, id(reader): reader}.values():
            close = getattr(made, "aclose", None)
            if close is not None:
                await close()


def _sqlite(root: Path, size: int, reads: int) -> dict[str, dict[str, float]]:
    """The same thread on LangGraph's ``SqliteSaver`` (the re-runs as
    ``update_state`` from a past config, LangGraph's fork of a line)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(root / f"lg-{size}.sqlite"), check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        app = build_langgraph(saver, async_nodes=False)
        config = lg_config("t")
        app.invoke(lg_input("happy"), config, durability="sync")
        count = len(list(app.get_state_history(config)))
        while count < size:
            app.update_state(config, _update(count), as_node="synthesis")
            count += 1
        every = list(app.get_state_history(config))
        assert len(every) >= size
        befores: dict[str, Any] = {
            "newest": None,
            "middle": every[len(every) // 2].config,
            "oldest": every[-PAGE - 1].config,
        }
        out: dict[str, dict[str, float]] = {"wall": {}, "cpu": {}}
        for position, before in befores.items():
            for _ in range(WARM):
                list(app.get_state_history(config, limit=PAGE, before=before))
            samples = []
            for _ in range(reads):
                with timed() as sample:
                    page = list(app.get_state_history(config, limit=PAGE, before=before))
                samples.append(sample)
                assert len(page) == PAGE
            out["wall"][position] = median([s.wall for s in samples]) * 1e6
            out["cpu"][position] = median([s.cpu for s in samples]) * 1e6
        return out
    finally:
        conn.close()


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(15, TITLE)
    counts = QUICK_SIZES if sizes.name == "quick" else FULL_SIZES
    reads = 5 if sizes.name == "quick" else 21
    peer = peer and importlib.util.find_spec("langgraph.checkpoint.sqlite") is not None
    server, why = postgres_server()
    kinds = ["memory", "file"] + (["postgres"] if server is not None else [])
    if why is not None:
        fig.notes.append(f"PostgreSQL left out: {why}")
    pages: dict[str, dict[int, dict[str, dict[str, float]]]] = {k: {} for k in kinds}
    if peer:
        pages["sqlite"] = {}
    try:
        with temp_dir("fig15") as root:
            for size in counts:
                for kind in kinds:
                    dsn = None if server is None else server.dsn
                    pages[kind][size] = asyncio.run(_rfsm(kind, root, size, reads, dsn))
                if peer:
                    pages["sqlite"][size] = _sqlite(root, size, reads)
    finally:
        if server is not None:
            server.stop()
    small, large = counts[0], counts[-1]
    for kind in kinds:
        cpu = {n: pages[kind][n]["cpu"] for n in (small, large)}
        worst = max(cpu[large][p] / cpu[small][p] for p in POSITIONS)
        holds, margin = at_most(worst, SAME)
        fig.rows.append(
            Row(
                metric=f"CPU of a page of {PAGE} at {large:,} vs {small:,} checkpoints, "
                f"{LABELS[kind]} (worst position)",
                unit="x",
                research_fsm=worst,
                goal=f"at most {SAME}x",
                holds=holds,
                margin=margin,
            )
        )
    if peer:
        for size in counts:
            for what in ("wall", "cpu"):
                fig.rows.append(
                    faster_row(
                        f"a page of {PAGE} from the middle of {size:,} checkpoints, "
                        f"JsonFile fsync vs SqliteSaver{', CPU' if what == 'cpu' else ''}",
                        "µs",
                        pages["file"][size][what]["middle"],
                        pages["sqlite"][size][what]["middle"],
                    )
                )
    header = ["store", *(f"{p} page, {n:,} cps (µs)" for n in counts for p in POSITIONS)]

    def cells(kind: str, what: str) -> list[str]:
        return [fmt(pages[kind][n][what][p]) for n in counts for p in POSITIONS]

    fig.detail = {
        "page": PAGE,
        "reads": reads,
        "sizes": list(counts),
        "line_every": LINE_EVERY,
        "page_us": {k: {str(n): v for n, v in by.items()} for k, by in pages.items()},
    }
    fig.detail_md = [
        f"A page of {PAGE} snapshots at each position of a thread of each size (a new "
        f"line of history every {LINE_EVERY} checkpoints); the median of {reads} reads. "
        "CPU: this process's (threads included; not the PostgreSQL server's), the "
        "measure of what a page reads and parses, which the machine's load does not "
        "change; wall: what a caller waits.",
        "",
        "CPU µs:",
        "",
        *md_table(header, [[LABELS[k], *cells(k, "cpu")] for k in pages]),
        "",
        "Wall µs:",
        "",
        *md_table(header, [[LABELS[k], *cells(k, "wall")] for k in pages]),
    ]
    return fig
