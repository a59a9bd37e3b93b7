"""Reads of a thread while a run of it is saving (issue 23, point 2): a read through the
same store, or another, never cuts, moves aside, closes or replaces what the writer holds;
only the lease holder's own run path repairs."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import Ask, ask_graph, chain

from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import FileSystem

from .test_filestore import run_script

PAUSE = 10.0
"""Seconds a paused system call waits for the test before it goes on anyway."""


class Pause:
    """Holds the store's next ``write`` (after half the bytes) or ``fdatasync`` of a
    segment until ``go`` is set: a durable save in flight, seen from outside."""

    def __init__(self, call: str) -> None:
        self.call = call
        self.armed = False
        self.paused = threading.Event()
        self.go = threading.Event()

    def _hold(self, fd: int) -> bool:
        if not self.armed or not os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            return False
        self.armed = False
        self.paused.set()
        self.go.wait(PAUSE)
        return True

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.call == "write" and self.armed and len(data) > 1:
            end = bytes(data).find(b"\n")  # half of the line, not of the zeros after it
            half = os.write(fd, data[: (len(data) if end < 0 else end) // 2])
            if self._hold(fd):
                return half
            return half + os.write(fd, data[half:])
        return os.write(fd, data)

    def fdatasync(self, fd: int) -> None:
        if self.call == "fdatasync":
            self._hold(fd)
        os.fdatasync(fd)

    def fsync(self, fd: int) -> None:
        if self.call == "fsync":
            self._hold(fd)
        os.fsync(fd)

    def syncfs(self, fd: int) -> None:  # a new segment's sync, with its folder's
        if self.call == "fsync":
            self._hold(fd)
        FileSystem().syncfs(fd)


async def history_of(store: JsonFileCheckpointStore, thread_id: str) -> list[int]:
    return [cp.seq async for cp in store.history(thread_id)]


@pytest.mark.parametrize(
    "call, turns_before",
    [
        pytest.param("write", 1, id="half-written-line"),
        pytest.param("fdatasync", 1, id="line-being-synced"),
        pytest.param("write", 0, id="half-written-first-segment"),
        pytest.param("fsync", 0, id="first-segment-being-synced"),
    ],
)
async def test_read_during_a_durable_save_changes_nothing_the_writer_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, turns_before: int
) -> None:
    """get_state/history/load_latest while a save is in flight: the save succeeds, nothing is cut or lost."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    calls: list[str] = []
    app = chain("a", "b", store=store, calls=calls)
    before = [await app.run({}, thread_id="t") for _ in range(turns_before)]
    pause = Pause(call)
    for name in ("write", "fdatasync", "fsync", "syncfs"):
        monkeypatch.setattr(store.fs, name, getattr(pause, name))
    pause.armed = True
    running = asyncio.create_task(app.run({}, thread_id="t"))
    seen: list[Any] = []
    try:
        assert await asyncio.to_thread(pause.paused.wait, PAUSE)
        snap = await app.get_state("t")
        seen.append(None if snap is None else snap.checkpoint_id)
        seen.append([s.checkpoint_id async for s in app.history("t")])
        latest = await store.load_latest("t")
        seen.append(None if latest is None else latest.checkpoint_id)
        seen.append(await history_of(store, "t"))
    finally:
        pause.go.set()
    result = await running
    monkeypatch.undo()
    saved = await history_of(store, "t")
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    ids = {cp.checkpoint_id async for cp in fresh.history("t")}
    # Each turn saves its input and one checkpoint per node; every one is on disk.
    turns = turns_before + 1
    assert (list(range(3 * turns, 0, -1)), list(range(3 * turns, 0, -1))) == (
        saved,
        await history_of(fresh, "t"),
    )
    assert {r.checkpoint_id for r in [*before, result]} <= ids
    assert ("completed", 2 * turns) == (result.status, result.state.n)
    assert Counter({"a": turns, "b": turns}) == Counter(calls)  # no node ran twice
    assert {seen[0], seen[2]} <= ids | {None}  # readers saw saved checkpoints (or none yet)
    assert [] == sorted(p.name for p in (tmp_path / "s").iterdir() if "corrupt" in p.name)
    again = await app.run({}, thread_id="t")  # the thread goes on from the newest
    assert (2 * turns + 2, 3 * turns + 3) == (again.state.n, len(await history_of(store, "t")))


# -- a segment list's temporary file left by a kill ------------------------------

LIST_KILLER = """
import asyncio, os, signal, sys
from pydantic import BaseModel
from research_fsm.engine import END, START, StateGraph
from research_fsm.stores import JsonFileCheckpointStore

class S(BaseModel):
    n: int = 0

async def bump(state):
    return {"n": state.n + 1}

graph = StateGraph(S)
graph.add_node("bump", bump)
graph.add_edge(START, "bump")
graph.add_edge("bump", END)
store = JsonFileCheckpointStore(sys.argv[1], durability="fsync", keep=1)  # a segment a save
compiled = graph.compile(store=store)
first = asyncio.run(compiled.run({}, thread_id="t"))
print(first.checkpoint_id, flush=True)
real_replace = store.fs.replace
def replace(src, dst):
    if str(dst).endswith(".idx"):  # the list's temporary file is written: die before the rename
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst)
store.fs.replace = replace
asyncio.run(compiled.run({}, thread_id="t"))
print("not killed", flush=True)
"""


def temporary_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


async def test_list_temporary_file_left_by_a_kill_is_removed_by_the_next_holder(
    tmp_path: Path,
) -> None:
    """A writer killed between writing `<thread>.idx`'s temporary file and renaming it leaves
    one file, which the thread's next lease holder removes (no folder listing needed)."""
    directory = tmp_path / "s"
    proc = run_script(tmp_path, LIST_KILLER, str(directory))
    out, _ = proc.communicate(timeout=60)
    assert -signal.SIGKILL == proc.returncode
    first_id = out.split()[0]
    left = temporary_files(directory)
    assert (1, True) == (len(left), left[0].startswith("t=idx"))  # the kill hit where intended
    store = JsonFileCheckpointStore(directory, durability="fsync", keep=1)
    latest = await store.load_latest("t")  # a read changes nothing
    assert latest is not None
    assert (first_id, 3, left) == (latest.parent_id, latest.seq, temporary_files(directory))
    calls: list[str] = []
    result = await chain("bump", store=store, calls=calls).run({}, thread_id="t")
    assert ("completed", ["bump"]) == (result.status, calls)
    assert [] == temporary_files(directory)
    assert [result.checkpoint_id] == [cp.checkpoint_id async for cp in store.history("t")]


async def test_line_landing_out_of_order_is_read_again_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader shown a save's line half landed (its first page still zeros) reads again
    instead of refusing the thread as damaged after a used suspension."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    app = ask_graph(Ask(), store=store)
    suspended = await app.run({}, thread_id="t")
    assert suspended.suspension is not None
    await app.resume(suspended.suspension.token, "Ada")
    path = store.segment_path("t", 1)
    lines = path.read_bytes().splitlines(keepends=True)
    assert 5 == len(lines)  # input, first, ask (suspended), ask resumed, after
    path.write_bytes(b"".join(lines[:4]))  # the resume's first save is the newest line
    on_disk = path.read_bytes()
    half = len(lines[3]) // 2
    landing = b"".join(lines[:3]) + bytes(half) + lines[3][half:]
    reader = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    reads: list[int] = []

    def read_all(fd: int) -> bytes:
        reads.append(fd)
        whole = FileSystem.read_all(reader.fs, fd)
        return landing if len(reads) == 1 and whole == on_disk else whole

    monkeypatch.setattr(reader.fs, "read_all", read_all)
    snap = await ask_graph(Ask(), store=reader).get_state("t")
    assert snap is not None
    assert ("running", 2) == (snap.status, len(reads))
    assert [4, 3, 2, 1] == await history_of(reader, "t")
    assert on_disk == path.read_bytes()
