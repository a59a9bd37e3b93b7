"""The file store's codec reading a segment from a later line on (``scan_bytes(...,
keep_from=...)``, what a page of history reads): the same checkpoints, states and
branch records as a whole read, and the same damage found."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import END, START, NodeContext, Send, StateGraph, Suspend, append
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.logformat import scan_bytes

from .helpers import segment_data


class Log(BaseModel):
    items: Annotated[list[str], append] = []
    last: str = ""


class Ask:
    async def run(self, state: Log, ctx: NodeContext) -> Suspend:
        return Suspend("?")

    async def resume(self, state: Log, value: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"items": [f"answer {value}"]}


async def _segment(tmp_path: Path) -> tuple[bytes, str]:
    """One segment of a thread with appends, replaced fields, update_state edits, a
    lone surrogate in a string, and a fan-out whose branches suspend (branch records
    saved whole and as changes)."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    graph = StateGraph(Log)

    async def note(state: Log) -> dict[str, Any]:
        return {"items": [f"n{len(state.items)}"], "last": 'é 日本 \\ "q"'}

    async def end(state: Log) -> dict[str, Any]:
        return {"items": ["end"]}

    graph.add_node("note", note).add_node("ask", Ask()).add_node("end", end)
    graph.add_edge(START, "note")
    graph.add_router("note", lambda s: [Send("ask", None) for _ in range(3)], ["ask"])
    graph.add_edge("ask", "end").add_edge("end", END)
    app = graph.compile(store=store)
    for turn in range(4):
        result = await app.run({"items": [f"turn {turn}"]}, thread_id="t")
        for suspension in result.suspensions:
            await app.resume(suspension.token, turn)
        await app.update_state("t", {"items": ["edit"], "last": f"edit {turn}"})
    (segment,) = [p for p in store.thread_files("t") if p.name.endswith(".jsonl")]
    return segment_data(segment), "t"


async def test_a_read_from_any_line_on_gives_what_a_whole_read_gives(tmp_path: Path) -> None:
    """For every line to start keeping from: the checkpoints kept are equal, field by
    field (states, branch records, origins), to those of a whole read from there on."""
    raw, thread = await _segment(tmp_path)
    whole = scan_bytes(raw, thread)
    assert not whole.problem and len(whole.records) > 20
    assert any(cp.branches for cp in whole.records) and any(cp.origin for cp in whole.records)
    first = whole.records[0].seq
    for keep_from in range(first, whole.records[-1].seq + 2):
        part = scan_bytes(raw, thread, keep_from=keep_from)
        assert part.records == whole.records[keep_from - first :], keep_from
        assert (part.lines, part.good_size, part.tail) == (
            len(whole.records),
            whole.good_size,
            whole.tail,
        )
    until = whole.records[10].seq
    assert scan_bytes(raw, thread, until, until - 3).records == whole.records[7:11]


async def test_damage_before_the_kept_lines_is_found(tmp_path: Path) -> None:
    """A damaged line among those folded but not kept is reported as a whole read
    reports it (its line number, the intact lines after it), nothing kept past it."""
    raw, thread = await _segment(tmp_path)
    lines = raw.split(b"\n")
    lines[5] = lines[5].replace(b'"seq":', b'"seq" :', 1)
    damaged = b"\n".join(lines)
    whole = scan_bytes(damaged, thread)
    part = scan_bytes(damaged, thread, keep_from=whole.records[-1].seq + 10)
    assert whole.problem == part.problem == "damaged"
    assert whole.reason == part.reason and "line 6" in part.reason
    assert whole.intact_after == part.intact_after > 0
    assert part.records == []
