"""Figure 4: growth of one conversation.

One thread, ``fig4_turns`` turns (happy path), each adding two messages of
~300 characters (the question and the answer). research_fsm with its durable
file store (``durability="fsync"``, the assistant's default), with the
assistant's summarisation on (fold all but the last 4 messages into a summary
of at most 1,500 characters when there are more than 10) and off, each with the
assistant's ``keep=24`` and with ``keep=None``; LangGraph with ``SqliteSaver``
(``invoke``, ``durability="sync"``), summarisation off (a plain append
reducer, as LangGraph apps usually run) and on (the same fold, through a
reducer that accepts a replacement).

Per turn: wall time of the run; bytes written = the size of the checkpoint
files the turn created (research_fsm) or of the checkpoint, metadata and
write blobs it inserted (LangGraph), plus the bytes both passed to
``write(2)`` (``wchar`` of ``/proc/self/io``: SQLite's pages and WAL frames,
our files). Disk = the store's folder, which holds only this thread
(research_fsm), or the database file after closing (LangGraph, WAL
checkpointed).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from research_fsm.stores import JsonFileCheckpointStore

from ._common import (
    FigureResult,
    Row,
    Sizes,
    at_most,
    dir_bytes,
    fmt,
    io_write_bytes,
    md_table,
    median,
    temp_dir,
)
from ._graphs import build_langgraph, build_rfsm, lg_config, lg_input, question_input

TITLE = "Growth: one thread, many turns"
DEFAULT_KEEP = 24  # research_fsm.qa.DEFAULT_KEEP (not imported: keeps this light)
FILLER = (
    "Could you tell me more about the latest quarterly results, the product line-up, "
    "the leadership team and how the company compares with its closest competitors? "
    "I am especially interested in anything that changed since we last talked, and in "
    "the sources you used, so that I can read further on my own later this week. "
)


def text_of(prefix: str, chars: int = 300) -> str:
    body = f"{prefix} {FILLER * 3}"
    return body[:chars]


ANSWER_300 = text_of("Here is what I found about Apple Inc.:")


def _turns_to_report(total: int) -> list[int]:
    return sorted({1, max(1, total // 4), max(1, total // 2), total})


def _window(values: list[list[float]], turn: int) -> float:
    """Median over repetitions and the turns around ``turn`` (turn 1 alone)."""
    lo, hi = (1, 1) if turn == 1 else (max(2, turn - 2), min(len(values[0]), turn + 2))
    return median([rep[t - 1] for rep in values for t in range(lo, hi + 1)])


def _bytes_window(values: list[list[float]], turn: int) -> float:
    """Median over repetitions of the mean over turns t-9..t (turn 1 alone): the
    amortised cost, whole-state segment starts and summaries included."""
    lo = 1 if turn == 1 else max(2, turn - 9)
    return median([sum(rep[lo - 1 : turn]) / (turn - lo + 1) for rep in values])


def _snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Segment files: inode, size and a hash of their bytes, without the zeros that
    pad a segment's last disk block (the next line is written over them)."""
    out = {}
    if folder.exists():
        for entry in os.scandir(folder):
            if entry.name.endswith(".jsonl"):
                data = Path(entry.path).read_bytes().rstrip(b"\0")
                out[entry.name] = (entry.inode(), len(data), hashlib.sha256(data).hexdigest())
    return out


def _prefix_hash(path: Path, size: int) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read(size)).hexdigest()


async def _rfsm_thread(root: Path, turns: int, summarise: bool, keep: int | None) -> dict[str, Any]:
    store = JsonFileCheckpointStore(root, keep=keep)
    app = build_rfsm(store, summarise=summarise, answer=ANSWER_300)
    folder = store.directory  # the store holds this one thread
    times, written, wchar, rewrites = [], [], [], 0
    for turn in range(1, turns + 1):
        data = question_input("happy", text_of(f"Turn {turn}:"))
        before = _snapshot(folder)
        w0 = io_write_bytes()
        t0 = time.perf_counter()
        await app.run(data, thread_id="growth")
        times.append(time.perf_counter() - t0)
        w1 = io_write_bytes()
        after = _snapshot(folder)
        # Bytes the turn added: new segments whole, and what grew at the end of the
        # others. A segment counts as rewritten unless it still starts with every
        # byte it held before the turn (appending is fine; pruning deletes whole
        # segments, which is not a rewrite).
        written.append(sum(after[n][1] - (before[n][1] if n in before else 0) for n in after))
        wchar.append((w1 - w0) if w0 is not None and w1 is not None else 0)
        for name in after.keys() & before.keys():
            ino, size, digest = before[name]
            if (
                after[name][0] != ino
                or after[name][1] < size
                or (_prefix_hash(folder / name, size) != digest)
            ):
                rewrites += 1
    apparent, allocated = dir_bytes(folder)
    return {
        "times": times,
        "written": written,
        "wchar": wchar,
        "rewrites": rewrites,
        "disk": apparent,
        "disk_allocated": allocated,
        "files": len(_snapshot(folder)),
    }


def _lg_payload(conn: sqlite3.Connection) -> int:
    a = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
    ).fetchone()[0]
    b = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(a) + int(b)


def _lg_thread(root: Path, turns: int, summarise: bool) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    root.mkdir(parents=True, exist_ok=True)
    db = root / "checkpoints.sqlite"
    conn = sqlite3.connect(str(db), check_same_thread=False)
    times, written, wchar = [], [], []
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        app = build_langgraph(saver, summarise=summarise, answer=ANSWER_300, async_nodes=False)
        config = lg_config("growth")
        payload = _lg_payload(conn)
        for turn in range(1, turns + 1):
            data = lg_input("happy", text_of(f"Turn {turn}:"), first=turn == 1)
            w0 = io_write_bytes()
            t0 = time.perf_counter()
            app.invoke(data, config, durability="sync")
            times.append(time.perf_counter() - t0)
            w1 = io_write_bytes()
            now = _lg_payload(conn)
            written.append(now - payload)
            payload = now
            wchar.append((w1 - w0) if w0 is not None and w1 is not None else 0)
        open_size = sum(p.stat().st_size for p in root.iterdir())
    finally:
        conn.close()
    apparent, allocated = dir_bytes(root)
    return {
        "times": times,
        "written": written,
        "wchar": wchar,
        "rewrites": None,
        "disk": apparent,
        "disk_allocated": allocated,
        "disk_while_open": open_size,
    }


VARIANTS = {
    "rfsm_on_24": (
        "research_fsm, summarisation on, keep=24 (the assistant's default)",
        True,
        DEFAULT_KEEP,
    ),
    "rfsm_on_all": ("research_fsm, summarisation on, keep=None", True, None),
    "rfsm_off_24": ("research_fsm, summarisation off, keep=24", False, DEFAULT_KEEP),
    "rfsm_off_all": ("research_fsm, summarisation off, keep=None", False, None),
    "lg_off": ("LangGraph SqliteSaver, summarisation off", False, None),
    "lg_on": ("LangGraph SqliteSaver, summarisation on", True, None),
}


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(4, TITLE)
    turns = sizes.fig4_turns
    names = [v for v in VARIANTS if peer or not v.startswith("lg")]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in names}
    with temp_dir("fig4") as root:
        for rep in range(sizes.fig4_reps):
            order = names if rep % 2 == 0 else names[::-1]
            for variant in order:
                _label, summarise, keep = VARIANTS[variant]
                where = root / f"{variant}-{rep}"
                if variant.startswith("lg"):
                    runs[variant].append(_lg_thread(where, turns, summarise))
                else:
                    runs[variant].append(asyncio.run(_rfsm_thread(where, turns, summarise, keep)))

    report = _turns_to_report(turns)
    summary: dict[str, Any] = {}
    for variant in names:
        reps = runs[variant]
        times = [r["times"] for r in reps]
        summary[variant] = {
            "ms_at_turn": {t: _window(times, t) * 1e3 for t in report},
            "bytes_written_at_turn": {
                t: _bytes_window([r["written"] for r in reps], t) for t in report
            },
            "wchar_at_turn": {t: median([r["wchar"][t - 1] for r in reps]) for t in report},
            "disk_bytes": median([r["disk"] for r in reps]),
            "disk_allocated_bytes": median([r["disk_allocated"] for r in reps]),
            "total_ms": median([sum(r["times"]) for r in reps]) * 1e3,
            "rewrites": None if reps[0]["rewrites"] is None else sum(r["rewrites"] for r in reps),
            "ms_per_turn_all": [median([r["times"][i] for r in reps]) * 1e3 for i in range(turns)],
            "bytes_written_per_turn_all": [
                median([r["written"][i] for r in reps]) for i in range(turns)
            ],
        }
    last = turns
    ours = summary["rfsm_on_24"]
    lg_on, lg_off = summary.get("lg_on"), summary.get("lg_off")

    def growth(entry: dict[str, Any] | None, key: str) -> float | None:
        if entry is None:
            return None
        return entry[key][last] / entry[key][1] if entry[key][1] else None

    for what, key in (("time of", "ms_at_turn"), ("bytes written,", "bytes_written_at_turn")):
        ratio = growth(ours, key)
        holds, margin = at_most(ratio, 1.5)
        fig.rows.append(
            Row(
                metric=f"{what} turn {last} / turn 1, summarisation on",
                unit="x",
                research_fsm=ratio,
                langgraph=growth(lg_on, key),
                goal="≤ 1.5",
                holds=holds,
                margin=margin,
            )
        )
    fig.rows.append(
        Row(
            metric=f"time of turn {last}, summarisation off",
            unit="ms",
            research_fsm=summary["rfsm_off_all"]["ms_at_turn"][last],
            langgraph=None if lg_off is None else lg_off["ms_at_turn"][last],
        )
    )
    fig.rows.append(
        Row(
            metric=f"bytes written at turn {last}, summarisation off",
            unit="KB",
            research_fsm=summary["rfsm_off_all"]["bytes_written_at_turn"][last] / 1e3,
            langgraph=None if lg_off is None else lg_off["bytes_written_at_turn"][last] / 1e3,
        )
    )
    rewrites = sum(summary[v]["rewrites"] or 0 for v in names if v.startswith("rfsm"))
    fig.rows.append(
        Row(
            metric="segment files whose earlier bytes a later save changed",
            unit="files",
            research_fsm=float(rewrites),
            goal="0 (a save never rewrites history)",
            holds=rewrites == 0,
            margin="yes" if rewrites == 0 else "no",
        )
    )
    disk_ours = ours["disk_bytes"] / 1e3
    disk_lg = None if lg_off is None else lg_off["disk_bytes"] / 1e3
    row = Row(
        metric=f"disk after {last} turns: defaults (summarisation on, keep=24) vs "
        "LangGraph SqliteSaver",
        unit="KB",
        research_fsm=disk_ours,
        langgraph=disk_lg,
        goal="≤ 1/10 of LangGraph",
    )
    row.holds, row.margin = (None, "n/a") if row.ratio is None else at_most(row.ratio, 0.1)
    fig.rows.append(row)

    table_turns = []
    for variant in names:
        entry = summary[variant]
        for t in report:
            table_turns.append(
                [
                    VARIANTS[variant][0],
                    t,
                    fmt(entry["ms_at_turn"][t]),
                    f"{entry['bytes_written_at_turn'][t]:,.0f}",
                    f"{entry['wchar_at_turn'][t]:,.0f}",
                ]
            )
    table_disk = [
        [
            VARIANTS[v][0],
            f"{summary[v]['disk_bytes']:,.0f}",
            f"{summary[v]['disk_allocated_bytes']:,.0f}",
            fmt(summary[v]["total_ms"]),
            "-" if summary[v]["rewrites"] is None else summary[v]["rewrites"],
        ]
        for v in names
    ]
    fig.detail = {"turns": turns, "reps": sizes.fig4_reps, "variants": summary}
    fig.detail_md = [
        f"{turns} turns, {sizes.fig4_reps} repetition(s). Time at a turn: median over "
        "repetitions and turns t-2..t+2 (turn 1 alone). Bytes written at a turn: median over "
        "repetitions of the mean over turns t-9..t (turn 1 alone), so whole-state segment "
        "starts and summaries are counted at their amortised cost; research_fsm = bytes the "
        "turn appended to its segment files (new segments whole); LangGraph = checkpoint + "
        "metadata + writes blobs inserted; wchar = bytes passed to write(2) by the process "
        "during the turn (one turn, median over repetitions).",
        "",
        *md_table(["variant", "turn", "ms", "bytes written", "wchar bytes"], table_turns),
        "",
        *md_table(
            [
                "variant",
                f"disk after {turns} turns (bytes)",
                "allocated (bytes)",
                "total ms",
                "files rewritten",
            ],
            table_disk,
        ),
    ]
    quarter = report[-3] if len(report) >= 3 else 1
    growth_rows = []
    for variant in names:
        entry = summary[variant]
        ms, written = entry["ms_at_turn"], entry["bytes_written_at_turn"]
        growth_rows.append(
            [
                VARIANTS[variant][0],
                f"{ms[last] / ms[1]:.2f}x",
                f"{written[last] / max(1, written[1]):.2f}x",
                f"{ms[last] / ms[quarter]:.2f}x",
                f"{written[last] / max(1, written[quarter]):.2f}x",
            ]
        )
    fig.detail_md += [
        "",
        *md_table(
            [
                "variant",
                f"time, turn {last} / 1",
                f"bytes, turn {last} / 1",
                f"time, turn {last} / {quarter}",
                f"bytes, turn {last} / {quarter}",
            ],
            growth_rows,
        ),
    ]
    if lg_off is not None:
        growth_per_turn = (
            lg_off["bytes_written_at_turn"][last] - lg_off["bytes_written_at_turn"][1]
        ) / max(1, last - 1)
        fig.notes.append(
            f"LangGraph without summarisation writes {growth_per_turn / 1e3:.1f} KB more per turn "
            f"for every turn of history; its database was {lg_off['disk_bytes'] / 1e6:.1f} MB "
            f"after {turns} turns."
        )
    return fig
