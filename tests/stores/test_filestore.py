"""JsonFileCheckpointStore: crash safety, processes, corruption, paths, permissions, format."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from engine.helpers import Ask, Counter, ask_graph, chain, recorder
from pydantic import BaseModel, ConfigDict, Field
from structlog.testing import capture_logs

from research_fsm.engine import (
    END,
    START,
    Checkpoint,
    CheckpointConflict,
    CheckpointStore,
    CorruptCheckpoint,
    InvalidResumeToken,
    MemoryCheckpointStore,
    NodeContext,
    NodeFailed,
    Replace,
    StateGraph,
    StateSerializationError,
    StoreWriteError,
    Suspend,
    ThreadBusy,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs
from research_fsm.stores.file import store as _filestore

from .helpers import segment_data

REPO = Path(__file__).resolve().parents[2]
MOVED_ASIDE = "corrupt checkpoint moved aside; using the one before it"


def segment(store: JsonFileCheckpointStore, first_seq: int, thread_id: str = "t") -> Path:
    """The segment file of ``thread_id`` whose first checkpoint is ``first_seq``."""
    return store.segment_path(thread_id, first_seq)


def aside(path: Path, offset: int | None = None) -> Path:
    """Where the store moves damaged lines of ``path``: ``.corrupt``, or ``.<offset>.corrupt``."""
    return path.with_name(
        f"{path.name}.corrupt" if offset is None else f"{path.name}.{offset}.corrupt"
    )


def segments(store: JsonFileCheckpointStore, thread_id: str = "t") -> list[int]:
    """The first seqs of the thread's segment files, oldest first."""
    names = [p.name for p in store.thread_files(thread_id) if p.name.endswith(".jsonl")]
    return sorted(int(name[-18:-6]) for name in names)


def corrupt_files(store: JsonFileCheckpointStore, thread_id: str = "t") -> list[str]:
    return sorted(p.name for p in store.thread_files(thread_id) if p.name.endswith(".corrupt"))


def snapshot(store: JsonFileCheckpointStore, thread_id: str = "t") -> dict[str, bytes]:
    """The thread's checkpoint data: its segments and moved-aside lines, with their bytes
    (lock and index files are left out: hints that may name segments no longer there)."""
    data = [p for p in store.thread_files(thread_id) if p.name.endswith((".jsonl", ".corrupt"))]
    return {p.name: segment_data(p) for p in data}


def checksum(body: bytes) -> bytes:
    return hashlib.sha256(body).hexdigest()[:32].encode()


def seal(body: bytes) -> bytes:
    """A line as the store writes it: body, tab, checksum, newline."""
    return body + b"\t" + checksum(body) + b"\n"


def compact(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def lines_of(path: Path) -> list[bytes]:
    return segment_data(path).splitlines(keepends=True)


def parse_line(line: bytes) -> dict[str, Any]:
    """The JSON body of a whole line, after checking its layout and checksum."""
    match = re.fullmatch(rb"(\{.*\})\t([0-9a-f]{32})\n", line, re.DOTALL)
    assert match is not None, line
    assert checksum(match[1]) == match[2]
    data: dict[str, Any] = json.loads(match[1])
    return data


def disk_seqs(store: JsonFileCheckpointStore, thread_id: str = "t") -> list[int]:
    """The seq of every line of every segment, oldest first (each line checked whole)."""
    return [
        parse_line(line)["seq"]
        for first in segments(store, thread_id)
        for line in lines_of(segment(store, first, thread_id))
    ]


def restarted(store: JsonFileCheckpointStore) -> JsonFileCheckpointStore:
    """A new store object on the same files, as after a restart (nothing cached).

    A store that wrote a line trusts it while the file's size and last bytes are
    unchanged, so damage made behind its back is read by a new store object.
    """
    return JsonFileCheckpointStore(store.directory, durability=store.durability, keep=store.keep)


def corrupt_events(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if "corrupt" in e["event"]]


async def seqs(store: CheckpointStore, thread_id: str) -> list[int]:
    return [cp.seq async for cp in store.history(thread_id)]


def run_script(tmp_path: Path, source: str, *args: str, **popen: Any) -> subprocess.Popen[str]:
    """Run ``source`` in a new process, its stores taking this test's kind of lease."""
    script = tmp_path / f"script_{abs(hash(source))}.py"
    kind = f"from research_fsm.stores.file import fs as _fs\n_fs.RANGE_LOCKS = {_fs.RANGE_LOCKS}\n"
    script.write_text(kind + source)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(script), *args], env=env, text=True, stdout=subprocess.PIPE, **popen
    )


def inject(
    monkeypatch: pytest.MonkeyPatch, store: JsonFileCheckpointStore, **calls: Callable[..., Any]
) -> None:
    """Replace some system calls of ``store`` (its ``fs`` seam) until ``monkeypatch.undo()``."""
    for name, call in calls.items():
        monkeypatch.setattr(store.fs, name, call)


def is_regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


# -- crash safety ----------------------------------------------------------------

CRASH_WRITER = """
import asyncio, os, signal, sys
from pydantic import BaseModel
from research_fsm.engine import END, START, StateGraph
from research_fsm.stores import JsonFileCheckpointStore

class S(BaseModel):
    n: int = 0

async def bump(state):
    return {"n": state.n + 1}

point = sys.argv[2]
keep = 1 if point == "mid-new-segment" else None  # keep=1: every save starts a segment
graph = StateGraph(S)
graph.add_node("bump", bump)
graph.add_edge(START, "bump")
graph.add_edge("bump", END)
store = JsonFileCheckpointStore(sys.argv[1], durability="fsync", keep=keep)
compiled = graph.compile(store=store)
first = asyncio.run(compiled.run({}, thread_id="t"))
print(first.checkpoint_id, flush=True)

real_write = os.write
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
def half_write(fd, data):
    line = bytes(data).rstrip(b"\\0")  # without the zeros padding its disk block
    real_write(fd, line[: len(line) // 2])
    die()
if point in ("mid-line", "mid-new-segment"):
    os.write = half_write
elif point == "before-sync":
    os.fdatasync = die
asyncio.run(compiled.run({"n": 100}, thread_id="t"))
print("not killed", flush=True)
"""


@pytest.mark.parametrize("point", ["mid-line", "mid-new-segment", "before-sync"])
async def test_process_killed_while_saving_leaves_old_or_new_checkpoint(
    tmp_path: Path, point: str
) -> None:
    """SIGKILL during a save leaves the previous (or the complete new) checkpoint; the next run cuts the torn line."""
    directory = tmp_path / "store"
    proc = run_script(tmp_path, CRASH_WRITER, str(directory), point)
    out, _ = proc.communicate(timeout=60)
    assert -signal.SIGKILL == proc.returncode
    previous_id = out.split()[0]
    store = JsonFileCheckpointStore(directory)
    newest = segment(store, segments(store)[-1])
    torn = point != "before-sync"
    assert torn == (not segment_data(newest).endswith(b"\n"))  # the kill hit where intended
    on_disk = snapshot(store)
    with capture_logs() as logs:
        latest = await store.load_latest("t")
        readable = await seqs(store, "t")
    assert latest is not None
    assert [] == corrupt_events(logs)
    assert on_disk == snapshot(store)  # a reader without the lease changes nothing
    if torn:
        assert (previous_id, 2, {"n": 1}) == (latest.checkpoint_id, latest.seq, latest.state)
        assert ([2] if point == "mid-new-segment" else [2, 1]) == readable
    else:  # the whole line was written before the kill: the new checkpoint made it
        assert (3, "running", {"n": 100}) == (latest.seq, latest.status, latest.state)
        assert (previous_id, [3, 2, 1]) == (latest.parent_id, readable)
    graph = StateGraph(Counter)
    graph.add_node("bump", recorder("bump"))
    graph.add_edge(START, "bump")
    graph.add_edge("bump", END)
    with capture_logs() as logs:
        result = await graph.compile(store=store).run({} if torn else None, thread_id="t")
    assert ("completed", 2 if torn else 101) == (result.status, result.state.n)
    assert [] == corrupt_events(logs)
    assert [] == corrupt_files(store)
    assert ([2, 3, 4] if point == "mid-new-segment" else [1, 2, 3, 4]) == disk_seqs(store)


TORN = b'{"v":2,"thread_id":"t","checkpoint_id":"0123456789ab'

TORN_AT = ["end-of-segment", "new-segment"]


def tear(store: JsonFileCheckpointStore, where: str) -> None:
    """Leave what a writer killed mid-line leaves: an unfinished last line."""
    if where == "end-of-segment":
        with segment(store, 1).open("ab") as file:
            file.write(TORN)
    else:  # killed while writing the first line of a new segment
        segment(store, 3).write_bytes(TORN)


@pytest.mark.parametrize("where", TORN_AT)
async def test_unfinished_last_line_is_invisible_to_readers_without_the_lease(
    file_store: JsonFileCheckpointStore, where: str
) -> None:
    """Readers without the lease skip an unfinished last line and do not modify the files."""
    compiled = chain("a", store=file_store)
    done = await compiled.run({}, thread_id="t")
    tear(file_store, where)
    on_disk = snapshot(file_store)
    fresh = JsonFileCheckpointStore(file_store.directory)
    for store in (file_store, fresh):  # the writer (which remembers its head) and a stranger
        with capture_logs() as logs:
            snap = await chain("a", store=store).get_state("t")
            history = await seqs(store, "t")
        assert snap is not None
        assert (done.checkpoint_id, "completed", [2, 1]) == (
            snap.checkpoint_id,
            snap.status,
            history,
        )
        assert [] == corrupt_events(logs)
    assert on_disk == snapshot(file_store)


@pytest.mark.parametrize("where", TORN_AT)
async def test_unfinished_last_line_is_cut_off_by_the_next_lease_holder(
    file_store: JsonFileCheckpointStore, where: str
) -> None:
    """The next run silently cuts off an unfinished last line (no 'corrupt' log, nothing moved aside)."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    whole = segment_data(segment(file_store, 1))
    tear(file_store, where)
    with capture_logs() as logs:
        result = await compiled.run({}, thread_id="t")
    assert ("completed", ["a"], 2) == (result.status, result.path, result.state.n)
    assert [] == corrupt_events(logs)
    assert [] == corrupt_files(file_store)
    assert [1] == segments(file_store)
    assert whole == segment_data(segment(file_store, 1))[: len(whole)]
    assert [1, 2, 3, 4] == disk_seqs(file_store)


@pytest.mark.parametrize(
    "fault, keep",
    [
        pytest.param("write", None, id="disk-full-mid-line"),
        pytest.param("open", None, id="read-only"),
        pytest.param("fdatasync", None, id="fdatasync-error"),
        # keep=2: two checkpoints a segment, so the failing save starts a new one
        pytest.param("write", 2, id="new-segment-disk-full"),
        pytest.param("open", 2, id="new-segment-read-only"),
        pytest.param("fsync", 2, id="new-segment-fsync-error"),
        # keep=1: the new segment would make the previous one prunable, had it been written
        pytest.param("fsync", 1, id="new-segment-fsync-error-keep-1"),
    ],
)
async def test_write_errors_raise_store_write_error_and_keep_previous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, keep: int | None
) -> None:
    """A failing write (disk full, read-only, I/O error) raises StoreWriteError and leaves no partial line."""
    store = JsonFileCheckpointStore(tmp_path / "store", durability="fsync", keep=keep)
    compiled = chain("a", store=store)
    before = await compiled.run({}, thread_id="t")
    on_disk = snapshot(store)
    code = {"write": errno.ENOSPC, "open": errno.EROFS}.get(fault, errno.EIO)
    real = getattr(os, fault)
    written: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        if fault == "open" and not (str(args[0]).endswith(".jsonl") and args[1] & os.O_WRONLY):
            return real(*args, **kwargs)  # the lock file, and segments opened for reading
        if fault == "fsync" and not is_regular_file(args[0]):
            return real(*args, **kwargs)
        if fault == "write" and not written:  # half the line lands, then the disk is full
            written.append(real(args[0], bytes(args[1])[: len(args[1]) // 2]))
            return written[0]
        raise OSError(code, os.strerror(code))

    inject(monkeypatch, store, **{fault: failing})
    if fault == "fsync":  # a new segment is synced with its folder by one syncfs, then by fsync

        def failing_syncfs(fd: int) -> None:
            raise OSError(errno.EIO, "injected syncfs failure")

        inject(monkeypatch, store, syncfs=failing_syncfs)
    with pytest.raises(StoreWriteError, match="the previous checkpoint is intact") as info:
        await compiled.run({"log": ["lost"]}, thread_id="t")
    monkeypatch.undo()
    assert (code, "t") == (info.value.cause.errno, info.value.thread_id)
    assert isinstance(info.value, OSError)
    assert (fault == "write") == bool(written)  # a partial line did land before the error
    assert on_disk == snapshot(store)  # ... and was cut off; no new segment either
    snapshot_ = await compiled.get_state("t")
    assert snapshot_ is not None
    assert (before.checkpoint_id, before.state) == (snapshot_.checkpoint_id, snapshot_.state)
    result = await compiled.run({}, thread_id="t")
    assert ("completed", ["a", "a"]) == (result.status, result.state.log)
    assert ([4] if keep == 1 else [1, 2, 3, 4]) == disk_seqs(store)


# The segment's first line and the folder naming it: one syncfs where there is one,
# else the file, then the folder.
NEW_SEGMENT = ["syncfs file"] if _fs.FileSystem().has_syncfs() else ["fsync file", "fsync dir"]


@pytest.mark.parametrize(
    "durability, keep, new_folder, first_run, second_run",
    [
        # a new segment, then one fdatasync per line appended to it
        (
            "fsync",
            None,
            False,
            [*NEW_SEGMENT, "fdatasync file", "fdatasync file"],
            ["fdatasync file"] * 3,
        ),
        # three checkpoints a segment: the second run starts a new one, then replaces the
        # thread's segment list (<thread>.idx, written to a synced temporary file)
        (
            "fsync",
            3,
            False,
            [*NEW_SEGMENT, "fdatasync file", "fdatasync file"],
            [*NEW_SEGMENT, "fsync file", "fdatasync file", "fdatasync file"],
        ),
        # the store's folder is made by the first run: its parent is synced too
        (
            "fsync",
            None,
            True,
            ["fsync dir", *NEW_SEGMENT, "fdatasync file", "fdatasync file"],
            ["fdatasync file"] * 3,
        ),
        ("none", None, False, [], []),
        ("none", None, True, [], []),
    ],
    ids=["fsync", "fsync-rotating", "fsync-new-folder", "none", "none-new-folder"],
)
async def test_durability_controls_fsync(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durability: Literal["fsync", "none"],
    keep: int | None,
    new_folder: bool,
    first_run: list[str],
    second_run: list[str],
) -> None:
    """durability='fsync' fdatasyncs each appended line and syncs new segments with their folder; 'none' never syncs."""
    synced: list[str] = []

    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability, keep=keep)

    def spy(name: str) -> Callable[[int], None]:
        real = getattr(store.fs, name)

        def sync(fd: int) -> None:
            synced.append(f"{name} {'file' if is_regular_file(fd) else 'dir'}")
            real(fd)

        return sync

    if not new_folder:
        await store.secret()  # makes the folder (and syncs the key) before counting
    inject(monkeypatch, store, fsync=spy("fsync"), fdatasync=spy("fdatasync"), syncfs=spy("syncfs"))
    compiled = chain("a", "b", store=store)
    await compiled.run({}, thread_id="t")
    assert first_run == synced
    synced.clear()
    await compiled.run({}, thread_id="t")
    assert second_run == synced


async def test_cancelled_run_finishes_its_write_before_releasing(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling a run mid-save waits for the write, so the lease is never released mid-write."""
    entered, gate = threading.Event(), threading.Event()

    def slow_fdatasync(fd: int) -> None:  # the line of step `a`, after the segment's first
        if is_regular_file(fd):
            entered.set()
            gate.wait()
        os.fdatasync(fd)

    inject(monkeypatch, file_store, fdatasync=slow_fdatasync)
    task = asyncio.create_task(chain("a", store=file_store).run({}, thread_id="t"))
    try:
        await asyncio.to_thread(entered.wait)
        task.cancel()
        for _ in range(20):
            await asyncio.sleep(0)
        assert not task.done()  # still holding the thread while its write is in flight
    finally:
        gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.undo()
    latest = await file_store.load_latest("t")
    assert latest is not None and 2 == latest.seq
    assert [1, 2] == disk_seqs(file_store)
    lease = await file_store.acquire("t")
    await lease.release()


async def test_run_cancelled_while_taking_the_lease_does_not_leak_it(
    lock_kind: str, file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling a run while it takes the file lock never leaves the lock held by an orphan."""
    entered, gate, finished = threading.Event(), threading.Event(), threading.Event()
    real_lock = JsonFileCheckpointStore._lock

    def slow_lock(self: JsonFileCheckpointStore, thread_id: str) -> int:
        if threading.current_thread() is not threading.main_thread():
            entered.set()  # taken in a worker thread: hold it there until cancelled
            gate.wait()
        try:
            return real_lock(self, thread_id)
        finally:
            finished.set()

    monkeypatch.setattr(JsonFileCheckpointStore, "_lock", slow_lock)
    compiled = chain("a", store=file_store)
    task = asyncio.create_task(compiled.run({}, thread_id="t"))
    await asyncio.sleep(0)  # the run starts taking the lease
    task.cancel()
    gate.set()
    await asyncio.wait({task})
    await asyncio.to_thread(finished.wait)  # whatever took the lock has returned
    monkeypatch.undo()
    assert "completed" == (await compiled.run({}, thread_id="t")).status


# -- processes -------------------------------------------------------------------

HOLDER = """
import asyncio, sys
from pydantic import BaseModel
from research_fsm.engine import END, START, StateGraph
from research_fsm.stores import JsonFileCheckpointStore

class S(BaseModel):
    n: int = 0
    log: list[str] = []

async def wait_for_parent(state):
    print("in-node", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    return {"log": ["child"]}

graph = StateGraph(S)
graph.add_node("wait", wait_for_parent)
graph.add_edge(START, "wait")
graph.add_edge("wait", END)
store = JsonFileCheckpointStore(sys.argv[1], durability="none")
asyncio.run(graph.compile(store=store).run({"n": 7}, thread_id="shared"))
"""


async def test_run_in_another_process_makes_thread_busy_until_it_dies(
    lock_kind: str, tmp_path: Path
) -> None:
    """While another process runs a thread, this one gets ThreadBusy at once; once it is killed, the kernel frees it."""
    directory = tmp_path / "store"
    proc = run_script(tmp_path, HOLDER, str(directory), stdin=subprocess.PIPE)
    try:
        assert "in-node" == (await asyncio.to_thread(proc.stdout.readline)).strip()  # type: ignore[union-attr]
        calls: list[str] = []
        graph = StateGraph(Counter)
        graph.add_node("wait", recorder("wait", calls))
        graph.add_edge(START, "wait")
        graph.add_edge("wait", END)
        compiled = graph.compile(store=JsonFileCheckpointStore(directory, durability="none"))
        with pytest.raises(ThreadBusy):
            await compiled.run({}, thread_id="shared")
        with pytest.raises(ThreadBusy):
            await compiled.run(None, thread_id="shared")
        assert [] == calls
    finally:
        proc.kill()
        proc.wait(timeout=30)
    result = await compiled.run(None, thread_id="shared")  # continues the dead process's run
    assert (["wait"], ["wait"], 8) == (result.path, calls, result.state.n)
    assert (lock_kind == "flock") == (directory / "shared.lock").exists()  # the kind taken


RACER = """
import asyncio, sys
from research_fsm.engine import Checkpoint, CheckpointConflict
from research_fsm.stores import JsonFileCheckpointStore

async def main():
    store = JsonFileCheckpointStore(sys.argv[1], durability="fsync")
    cp = Checkpoint(
        thread_id="t", checkpoint_id=sys.argv[2], parent_id=None, seq=1, run_id="r",
        step=0, status="running", next="a", state={"n": 1}, created_at="2024-01-01T00:00:00Z",
    )
    try:
        await store.save(cp)
    except CheckpointConflict:
        print("conflict", flush=True)
    else:
        print("ok", flush=True)

asyncio.run(main())
"""


async def test_two_processes_saving_the_same_slot_have_one_winner(
    lock_kind: str, tmp_path: Path
) -> None:
    """Two processes saving seq 1 of one thread: exactly one succeeds, the other gets CheckpointConflict."""
    directory = tmp_path / "store"
    procs = [run_script(tmp_path, RACER, str(directory), f"writer{i}") for i in range(2)]
    outputs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert ["conflict", "ok"] == sorted(outputs)
    winner = f"writer{outputs.index('ok')}"
    store = JsonFileCheckpointStore(directory)
    latest = await store.load_latest("t")
    assert latest is not None and winner == latest.checkpoint_id
    proc = run_script(tmp_path, RACER, str(directory), "late")
    assert "conflict" == proc.communicate(timeout=60)[0].strip()
    latest = await store.load_latest("t")
    assert latest is not None and winner == latest.checkpoint_id


# -- corruption ------------------------------------------------------------------


def _edit(line: bytes, drop: str = "", **changes: Any) -> bytes:
    """The line with some body keys changed (or dropped) and a valid checksum."""
    data = json.loads(line[: line.rindex(b"\t")])
    data.update(changes)
    data.pop(drop, None)
    return seal(compact(data))


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "cut-short": lambda line: line[: len(line) // 2] + b"\n",
    "empty": lambda line: b"\n",
    "flipped-byte": lambda line: line[:40] + bytes([line[40] ^ 0x01]) + line[41:],
    "wrong-checksum": lambda line: line[: line.rindex(b"\t") + 1] + b"0" * 32 + b"\n",
    "no-checksum": lambda line: line[: line.rindex(b"\t")] + b"\n",
    "valid-checksum-not-json": lambda line: seal(b"{ this is not json"),
    "other-thread": lambda line: _edit(line, thread_id="u"),
    "wrong-parent": lambda line: _edit(line, parent_id="0" * 24),
    "wrong-seq": lambda line: _edit(line, seq=7),
    "no-state": lambda line: _edit(line, drop="set"),
}


def damage_line(path: Path, index: int, damage: Callable[[bytes], bytes]) -> list[bytes]:
    """Damage one line of a segment; returns the lines as they were."""
    lines = lines_of(path)
    path.write_bytes(b"".join([*lines[:index], damage(lines[index]), *lines[index + 1 :]]))
    return lines


@pytest.mark.parametrize("kind", list(DAMAGE))
async def test_damaged_newest_checkpoint_falls_back_to_previous(
    file_store: JsonFileCheckpointStore, kind: str
) -> None:
    """A damaged newest line is skipped by readers, then logged and moved to .corrupt by the next lease holder."""
    await chain("a", "b", store=file_store).run({}, thread_id="t")
    path = segment(file_store, 1)
    lines = damage_line(path, 2, DAMAGE[kind])
    damaged = segment_data(path)[len(lines[0]) + len(lines[1]) :]
    compiled = chain("a", "b", store=restarted(file_store))
    on_disk = snapshot(file_store)
    snap = await compiled.get_state("t")
    assert snap is not None
    assert ("running", "b", 1) == (snap.status, snap.next, snap.state.n)
    assert on_disk == snapshot(file_store)  # only the lease holder repairs
    with capture_logs() as logs:
        result = await compiled.run(None, thread_id="t")  # continues from the one before
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [MOVED_ASIDE] == [e["event"] for e in warnings]
    assert ("t", str(path), aside(path).name) == (
        warnings[0]["thread_id"],
        warnings[0]["file"],
        warnings[0]["moved_to"],
    )
    assert damaged == aside(path).read_bytes()
    assert (["b"], 2) == (result.path, result.state.n)
    assert lines[:2] == lines_of(path)[:2]
    assert [1, 2, 3] == disk_seqs(file_store)  # seq 3 written again, after the good lines


async def test_damaged_line_mid_segment_with_intact_lines_after_is_refused(
    file_store: JsonFileCheckpointStore,
) -> None:
    """A damaged line followed by intact ones is refused with CorruptCheckpoint naming the file; nothing is moved."""
    await chain("a", "b", store=file_store).run({}, thread_id="t")
    path = segment(file_store, 1)
    damage_line(path, 1, DAMAGE["flipped-byte"])
    on_disk = snapshot(file_store)
    store = restarted(file_store)
    compiled = chain("a", "b", store=store)
    for attempt in (compiled.get_state("t"), compiled.run(None, thread_id="t")):
        with pytest.raises(CorruptCheckpoint, match="1 intact checkpoint") as info:
            await attempt
        assert path.name in str(info.value)
    assert on_disk == snapshot(file_store)


async def test_damage_found_again_is_moved_beside_the_first_corrupt_file(
    file_store: JsonFileCheckpointStore,
) -> None:
    """A second damaged line in the same segment goes to ``<segment>.<offset>.corrupt``; the first is kept."""
    await chain("a", store=file_store).run({}, thread_id="t")
    path = segment(file_store, 1)
    lines = damage_line(path, 1, DAMAGE["wrong-checksum"])
    first_bad = lines_of(path)[1]
    store = restarted(file_store)
    await chain("a", store=store).run(None, thread_id="t")  # moves it aside, runs `a` again
    rewritten = lines_of(path)
    damage_line(path, 1, DAMAGE["flipped-byte"])
    second_bad = lines_of(path)[1]
    with capture_logs() as logs:
        lease = await restarted(store).acquire("t")
        await lease.release()
    second_aside = aside(path, len(lines[0]))  # named after where the damage starts
    assert [second_aside.name] == [e["moved_to"] for e in logs if e["event"] == MOVED_ASIDE]
    assert sorted([aside(path).name, second_aside.name]) == corrupt_files(file_store)
    assert (first_bad, second_bad) == (aside(path).read_bytes(), second_aside.read_bytes())
    assert [rewritten[0]] == lines_of(path)


async def test_damaged_first_line_with_intact_lines_after_is_refused(tmp_path: Path) -> None:
    """A segment whose whole-state line is damaged, intact changes after it, is refused, not rolled back to the older segment."""
    store = JsonFileCheckpointStore(tmp_path / "store", keep=3)  # three checkpoints a segment
    compiled = chain("a", "b", store=store)
    await compiled.run({}, thread_id="t")
    await compiled.run({}, thread_id="t")
    assert [1, 4] == segments(store)
    newest = segment(store, 4)
    damage_line(newest, 0, DAMAGE["flipped-byte"])
    on_disk = snapshot(store)
    compiled = chain("a", "b", store=restarted(store))
    with pytest.raises(CorruptCheckpoint, match="2 intact checkpoint") as info:
        await compiled.run({}, thread_id="t")
    assert newest.name in str(info.value)
    assert on_disk == snapshot(store)


async def damage_every_segment(tmp_path: Path) -> JsonFileCheckpointStore:
    """A thread of two segments whose first lines are both damaged; a new store on them."""
    store = JsonFileCheckpointStore(tmp_path / "store", keep=2)  # two checkpoints a segment
    compiled = chain("a", store=store)
    await compiled.run({}, thread_id="t")
    await compiled.run({}, thread_id="t")
    assert [1, 3] == segments(store)
    for first in segments(store):
        segment(store, first).write_bytes(b'{"v": 2, "thread_id": \n')
    return restarted(store)


async def test_all_checkpoints_damaged_raises_corrupt_checkpoint(tmp_path: Path) -> None:
    """When no checkpoint is readable, a reader gets CorruptCheckpoint naming the thread, never JSONDecodeError."""
    store = await damage_every_segment(tmp_path)
    on_disk = snapshot(store)
    with pytest.raises(CorruptCheckpoint, match="thread `t`: no readable checkpoint left") as info:
        await chain("a", store=store).get_state("t")
    assert "t" == info.value.thread_id
    assert not isinstance(info.value, json.JSONDecodeError)
    assert on_disk == snapshot(store)


async def test_all_checkpoints_moved_aside_never_make_the_thread_look_new(
    tmp_path: Path,
) -> None:
    """After the lease holder moves every damaged segment aside, runs and reads keep raising CorruptCheckpoint."""
    store = await damage_every_segment(tmp_path)
    compiled = chain("a", store=store)
    with pytest.raises(CorruptCheckpoint) as info:
        await compiled.run({}, thread_id="t")  # the lease holder moves them aside
    moved = [aside(segment(store, 1)).name, aside(segment(store, 3)).name]
    assert ([], moved) == (segments(store), corrupt_files(store))
    assert moved == sorted(name for name in moved if name in str(info.value))
    for _ in range(2):  # moved aside, the thread must still not look new
        with pytest.raises(CorruptCheckpoint, match="thread `t`: no readable checkpoint left"):
            await compiled.get_state("t")
        with pytest.raises(CorruptCheckpoint, match="thread `t`: no readable checkpoint left"):
            await compiled.run({}, thread_id="t")
    assert ([], moved) == (segments(store), corrupt_files(store))
    await compiled.delete_thread("t")  # deleting the thread is the way to start it over
    assert ([], []) == (segments(store), corrupt_files(store))
    assert "completed" == (await compiled.run({}, thread_id="t")).status


async def test_newer_schema_version_is_refused(file_store: JsonFileCheckpointStore) -> None:
    """A line from a newer schema version is refused with a clear message and left in place."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    damage_line(segment(file_store, 1), 1, lambda line: _edit(line, v=4))
    on_disk = snapshot(file_store)
    message = (
        "thread `t`: a checkpoint was written with checkpoint schema version 4; this "
        "research_fsm reads up to version 3: upgrade research_fsm"
    )
    with pytest.raises(CorruptCheckpoint) as info:
        await compiled.get_state("t")
    assert message == str(info.value)
    with pytest.raises(CorruptCheckpoint) as info:
        await compiled.run({}, thread_id="t")  # the lease holder does not move it aside
    assert message == str(info.value)
    assert on_disk == snapshot(file_store)


# -- thread ids --------------------------------------------------------------------

BAD_IDS = [
    "../../etc",
    "..",
    ".hidden",
    "",
    "x" * 129,
    "a/b",
    "a\\b",
    "a b",
    "caf\u00e9",
    "t\n",
    7,
    None,
]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_invalid_thread_ids_touch_no_file(tmp_path: Path, bad: Any) -> None:
    """Every engine and store entry point refuses a bad thread id with ValueError before touching disk."""
    directory = tmp_path / "store"
    store = JsonFileCheckpointStore(directory)
    compiled = chain("a", store=store)
    attempts: list[Callable[[], Any]] = [
        lambda: compiled.run({}, thread_id=bad),
        lambda: compiled.run(None, thread_id=bad),
        lambda: compiled.get_state(bad),
        lambda: compiled.delete_thread(bad),
        lambda: store.acquire(bad),
        lambda: store.load_latest(bad),
        lambda: store.delete(bad),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError):
            await attempt()
    with pytest.raises(ValueError):
        compiled.stream({}, thread_id=bad)
    with pytest.raises(ValueError):
        [s async for s in compiled.history(bad)]
    assert not directory.exists()
    assert [] == list(tmp_path.rglob("etc"))


@pytest.mark.parametrize("good", ["a", "x" * 128, "A.b_c-9", "-lead", "_", "a..b"])
async def test_valid_thread_ids_are_accepted(
    file_store: JsonFileCheckpointStore, good: str
) -> None:
    """Ids of 1-128 chars from [A-Za-z0-9._-] not starting with a dot work."""
    assert "completed" == (await chain("a", store=file_store).run({}, thread_id=good)).status


async def test_thread_ids_are_case_sensitive_on_disk(file_store: JsonFileCheckpointStore) -> None:
    """``Alice`` and ``alice`` get separate files and states (also on case-insensitive disks)."""
    compiled = chain("a", store=file_store)
    await compiled.run({"log": ["upper"]}, thread_id="Alice")
    await compiled.run({"log": ["lower"]}, thread_id="alice")
    upper, lower = await compiled.get_state("Alice"), await compiled.get_state("alice")
    assert upper is not None and lower is not None
    assert (["upper", "a"], ["lower", "a"]) == (upper.state.log, lower.state.log)
    upper_files = {p.name.lower() for p in file_store.thread_files("Alice")}
    lower_files = {p.name.lower() for p in file_store.thread_files("alice")}
    assert ([1], [1]) == (segments(file_store, "Alice"), segments(file_store, "alice"))
    assert set() == upper_files & lower_files


# -- files on disk -----------------------------------------------------------------


async def test_keep_prunes_whole_old_segments_on_disk(tmp_path: Path) -> None:
    """keep=N deletes whole segments whose checkpoints are all older than the newest N; history shows N."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=3)
    compiled = chain("a", "b", "c", "d", store=store)
    await compiled.run({}, thread_id="t")
    assert ([1, 4], [1, 2, 3, 4, 5]) == (segments(store), disk_seqs(store))
    await compiled.run({}, thread_id="t")
    assert ([7, 10], [7, 8, 9, 10]) == (segments(store), disk_seqs(store))
    assert [10, 9, 8] == await seqs(store, "t")
    assert [10, 9, 8] == await seqs(JsonFileCheckpointStore(tmp_path / "s", keep=3), "t")
    assert [10, 9, 8, 7] == await seqs(JsonFileCheckpointStore(tmp_path / "s"), "t")


async def test_segment_rotates_after_128_checkpoints_with_a_whole_state_line(
    tmp_path: Path,
) -> None:
    """Checkpoint 129 starts a new segment whose first line holds the whole state; later lines hold changes."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    compiled = chain("a", store=store)
    for _ in range(65):  # two checkpoints a run
        await compiled.run({}, thread_id="t")
    assert [1, 129] == segments(store)
    old, new = ([parse_line(line) for line in lines_of(segment(store, n))] for n in (1, 129))
    assert (list(range(1, 129)), [129, 130]) == ([d["seq"] for d in old], [d["seq"] for d in new])
    kinds = [("state" in d, "set" in d) for d in old + new]
    assert [(True, False)] + [(False, True)] * 127 + [(True, False), (False, True)] == kinds
    history = {cp.seq: cp for cp in [cp async for cp in store.history("t")]}
    assert list(range(130, 0, -1)) == list(history)
    assert history[128].state == new[0]["state"]  # the input checkpoint changed nothing
    assert {"n": 64, "log": ["a"] * 64} == new[0]["state"]
    assert {"n": 65, "log": ["a"] * 65} == history[130].state


async def test_segment_rotates_once_its_changes_lines_pass_a_mebibyte(tmp_path: Path) -> None:
    """Large changes lines start a new segment after about 1 MiB, well before 128 checkpoints."""
    big = "x" * 200_000

    async def grow(state: Counter) -> dict[str, Any]:
        return {"log": [big]}

    graph = StateGraph(Counter)
    graph.add_node("grow", grow)
    graph.add_edge(START, "grow")
    graph.add_edge("grow", END)
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    compiled = graph.compile(store=store)
    for _ in range(7):
        await compiled.run({}, thread_id="t")
    # after six 200 kB changes lines the segment is past 1 MiB: the seventh run's input rotates
    assert [1, 13] == segments(store)
    first = parse_line(lines_of(segment(store, 13))[0])
    assert (13, [big] * 6) == (first["seq"], first["state"]["log"])
    latest = await JsonFileCheckpointStore(tmp_path / "s").load_latest("t")
    assert latest is not None
    assert (14, [big] * 7) == (latest.seq, latest.state["log"])


async def test_files_are_private(file_store: JsonFileCheckpointStore) -> None:
    """Every file the store makes (segments, locks, secret, .corrupt) is 0600 and every folder 0700."""
    compiled = ask_graph(Ask(), file_store)
    await compiled.run({}, thread_id="t")
    damage_line(segment(file_store, 1), 2, DAMAGE["flipped-byte"])
    lease = await restarted(file_store).acquire("t")  # moves the damaged line aside
    await lease.release()

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    made = [file_store.directory, *sorted(file_store.directory.rglob("*"))]
    files = [p for p in made if p.is_file()]
    folders = [p for p in made if p.is_dir()]
    kinds = {p.name.rsplit(".", 1)[-1] for p in files}
    assert {"corrupt", "jsonl", "secret"} == kinds & {"corrupt", "jsonl", "secret"}
    assert [0o600] * len(files) == [mode(p) for p in files]
    assert [0o700] * len(folders) == [mode(p) for p in folders]


class Flat(BaseModel):
    n: int = 0
    note: str = ""
    tags: Annotated[list[str], append] = []


async def test_segment_lines_are_compact_json_with_stable_layout(
    file_store: JsonFileCheckpointStore,
) -> None:
    """Each line is compact UTF-8 JSON with a fixed key order, a tab and a 32-hex sha256 prefix."""

    async def node(state: Flat) -> dict[str, Any]:
        return {"note": "caf\u00e9", "n": 1, "tags": ["x"]}

    graph = StateGraph(Flat)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    await graph.compile(store=file_store).run({"tags": ["a"]}, thread_id="t")
    raw = segment_data(segment(file_store, 1))
    second, first = [cp async for cp in file_store.history("t")]

    def header(cp: Checkpoint) -> str:
        parent = "null" if cp.parent_id is None else f'"{cp.parent_id}"'
        last_node = "null" if cp.last_node is None else f'"{cp.last_node}"'
        next_node = "null" if cp.next is None else f'"{cp.next}"'
        return (
            f'{{"v":2,"thread_id":"t","checkpoint_id":"{cp.checkpoint_id}",'
            f'"parent_id":{parent},"seq":{cp.seq},"run_id":"{cp.run_id}","step":{cp.step},'
            f'"status":"{cp.status}","next":{next_node},"last_node":{last_node},'
            f'"created_at":"{cp.created_at}","suspension":null,"error":null,'
        )

    bodies = [
        header(first) + '"state":{"n":0,"note":"","tags":["a"]}}',
        header(second) + '"set":{"n":1,"note":"caf\u00e9","tags":["x"]},"append":["tags"]}',
    ]
    expected = b"".join(seal(body.encode()) for body in bodies)
    assert expected == raw
    assert (1, "running", "node", None) == (first.seq, first.status, first.next, first.last_node)
    assert (2, "completed", None, "node") == (
        second.seq,
        second.status,
        second.next,
        second.last_node,
    )
    assert {"n": 1, "note": "caf\u00e9", "tags": ["a", "x"]} == second.state


async def test_each_save_is_one_write_of_a_line_that_does_not_grow(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save is a single write(2) of one line, and later lines stay the same size as the history grows."""
    writes: list[bytes] = []

    def spy_write(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return os.write(fd, data)

    async def node(state: Flat) -> dict[str, Any]:
        return {"n": state.n % 9 + 1, "tags": [f"tag{state.n % 9}"]}

    graph = StateGraph(Flat)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    compiled = graph.compile(store=file_store)
    inject(monkeypatch, file_store, write=spy_write)
    for _ in range(12):
        await compiled.run({}, thread_id="t")
    monkeypatch.undo()
    lines = lines_of(segment(file_store, 1))
    # (the thread listing's journal, .threads, gets a record as each run starts and ends)
    journal = [data for data in writes if data.startswith(b'["t",')]
    assert len(journal) == 24
    writes = [data for data in writes if not data.startswith(b'["t",')]
    # 24 saves, 24 writes, each one whole line (and zeros to the end of its disk
    # block, where it grows the file), nothing rewritten
    assert lines == [data.rstrip(b"\0") for data in writes]
    padded = segment(file_store, 1).stat().st_size
    assert (0, sum(map(len, lines))) == (padded % 4096, len(segment_data(segment(file_store, 1))))
    sizes = [len(line) for line in lines]
    # seq 10, 12, ..., 24 (completed) and 11, 13, ..., 23 (input): same kind of checkpoint
    # and same number of seq digits, ever longer history
    completed, inputs = sizes[9::2], sizes[10::2]
    assert [completed[0]] * 8 == completed
    assert [inputs[0]] * 7 == inputs
    latest = await restarted(file_store).load_latest("t")
    assert latest is not None
    assert 12 == len(latest.state["tags"])  # type: ignore[index]  # the state grew, its lines not


class Chat(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    turns: Annotated[list[str], append] = []
    sources: Annotated[list[dict[str, Any]], append] = Field(default_factory=list, alias="srcList")
    topic: str = Field("", alias="topicName")
    count: int = 0


class AskTopic:
    """Suspends for a topic (setting a draft) and records the answer."""

    async def run(self, state: Chat, ctx: NodeContext) -> Suspend:
        return Suspend(
            {"question": "topic?", "turn": state.count}, update={"topic": f"draft{state.count}"}
        )

    async def resume(self, state: Chat, value: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"topic": value, "turns": [f"user:{value}"]}


def chat_graph(store: CheckpointStore) -> Any:
    """START -> reply -> ask (suspends) -> tidy (fails once, then replaces lists) -> END."""
    failed: list[bool] = []

    async def reply(state: Chat) -> dict[str, Any]:
        return {
            "turns": [f"bot{state.count}"],
            "sources": [{"url": f"u{state.count}", "rank": state.count}],
            "count": state.count + 1,
        }

    async def tidy(state: Chat) -> dict[str, Any] | None:
        if state.count == 2 and not failed:
            failed.append(True)
            raise RuntimeError("flaky")
        if state.count == 3:
            return {"turns": Replace(state.turns[-2:]), "sources": []}
        return None

    graph = StateGraph(Chat)
    graph.add_node("reply", reply)
    graph.add_node("ask", AskTopic())
    graph.add_node("tidy", tidy)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", "ask")
    graph.add_edge("ask", "tidy")
    graph.add_edge("tidy", END)
    return graph.compile(store=store)


async def converse(store: CheckpointStore) -> None:
    """Three turns with suspensions, a failed step and its retry."""
    compiled = chat_graph(store)
    first = await compiled.run({"turns": ["hello"], "topicName": "start"}, thread_id="chat")
    assert first.suspension is not None
    await compiled.resume(first.suspension.token, "weather")
    second = await compiled.run({"turns": ["more"]}, thread_id="chat")
    assert second.suspension is not None
    with pytest.raises(NodeFailed):
        await compiled.resume(second.suspension.token, "rain")
    await compiled.run(None, thread_id="chat")
    third = await compiled.run({"turns": ["bye"], "count": 2}, thread_id="chat")
    assert third.suspension is not None
    assert "completed" == (await compiled.resume(third.suspension.token, "sun")).status


@pytest.mark.parametrize("layout", ["one-segment", "segment-every-3", "keep-5"])
async def test_changes_lines_replay_to_the_same_history_as_the_memory_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """History read back from changes lines equals a MemoryCheckpointStore's, field by field."""
    keep = 5 if layout == "keep-5" else None
    if layout == "segment-every-3":
        monkeypatch.setattr(_filestore, "_SEGMENT_RECORDS", 3)
    file_store = JsonFileCheckpointStore(tmp_path / "store", durability="none", keep=keep)
    memory = MemoryCheckpointStore(keep=keep)
    await converse(file_store)
    await converse(memory)
    reread = JsonFileCheckpointStore(tmp_path / "store", keep=keep)  # no cached state
    from_file = [cp async for cp in reread.history("chat")]
    from_memory = [cp async for cp in memory.history("chat")]

    def fields(cp: Checkpoint) -> tuple[Any, ...]:
        state = Chat.model_validate(cp.state) if isinstance(cp.state, dict) else cp.state
        return (
            cp.seq,
            cp.step,
            cp.status,
            cp.next,
            cp.last_node,
            cp.suspension,
            cp.error,
            {name: getattr(state, name) for name in Chat.model_fields},
        )

    assert ([16, 15, 14, 13, 12] if keep else list(range(16, 0, -1))) == [
        cp.seq for cp in from_memory
    ]
    assert [fields(cp) for cp in from_memory] == [fields(cp) for cp in from_file]
    assert [
        cp.state.model_dump(mode="json", by_alias=True)  # type: ignore[union-attr]
        for cp in from_memory
    ] == [cp.state for cp in from_file]
    assert [cp.checkpoint_id for cp in from_file[1:]] == [cp.parent_id for cp in from_file[:-1]]
    latest = await reread.load_latest("chat")
    assert latest is not None
    assert from_file[0].checkpoint_id == latest.checkpoint_id
    assert {
        "turns": ["bot2", "user:sun"],
        "srcList": [{"url": "u0", "rank": 0}, {"url": "u1", "rank": 1}, {"url": "u2", "rank": 2}],
        "topicName": "sun",
        "count": 3,
    } == latest.state
    if layout == "segment-every-3":
        assert [1, 4, 7, 10, 13, 16] == segments(reread, "chat")


class Opaque:
    """A value no JSON encoder knows."""


class Findings(BaseModel):
    raw_data: dict[str, Any] = {}


class Research(BaseModel):
    raw: dict[str, Any] = {}
    research_findings: Findings = Findings()


async def test_unserialisable_value_names_node_and_path(
    file_store: JsonFileCheckpointStore,
) -> None:
    """A state value JSON cannot hold fails the save naming the node and the dotted path; nothing is lost."""

    async def fetch(state: Research) -> dict[str, Any]:
        return {"raw": {"ok": 1, "when": object()}}

    graph = StateGraph(Research)
    graph.add_node("fetch", fetch)
    graph.add_edge(START, "fetch")
    graph.add_edge("fetch", END)
    compiled = graph.compile(store=file_store)
    with pytest.raises(StateSerializationError) as info:
        await compiled.run({}, thread_id="t")
    assert ("fetch", "raw.when") == (info.value.node, info.value.path)
    assert str(info.value).startswith(
        "cannot serialise state value at `raw.when` produced by node `fetch`: object"
    )
    assert isinstance(info.value, TypeError)
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("running", "fetch") == (snapshot.status, snapshot.next)


async def test_unserialisable_nested_value_path(file_store: JsonFileCheckpointStore) -> None:
    """The path goes through nested models and dicts, e.g. ``research_findings.raw_data.when``."""

    async def analyse(state: Research) -> dict[str, Any]:
        return {"research_findings": Findings(raw_data={"when": Opaque()})}

    graph = StateGraph(Research)
    graph.add_node("analyse", analyse)
    graph.add_edge(START, "analyse")
    graph.add_edge("analyse", END)
    with pytest.raises(StateSerializationError) as info:
        await graph.compile(store=file_store).run({}, thread_id="t")
    assert ("analyse", "research_findings.raw_data.when") == (info.value.node, info.value.path)


async def test_unserialisable_suspend_payload_names_node(
    file_store: JsonFileCheckpointStore,
) -> None:
    """A Suspend payload JSON cannot hold fails naming the node and ``suspension.payload``."""

    async def ask(state: Counter, ctx: NodeContext) -> Suspend:
        return Suspend({"question": object()})

    graph = StateGraph(Counter)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    with pytest.raises(StateSerializationError) as info:
        await graph.compile(store=file_store).run({}, thread_id="t")
    assert ("ask", "suspension.payload.question") == (info.value.node, info.value.path)


# -- secrets and restarts ------------------------------------------------------------


async def test_secret_file_is_private_and_shared_by_stores_on_one_dir(tmp_path: Path) -> None:
    """The generated key lives in ``.secret`` (0600, 64 hex chars) and every store on the directory uses it."""
    one = JsonFileCheckpointStore(tmp_path / "s")
    two = JsonFileCheckpointStore(tmp_path / "s")
    elsewhere = JsonFileCheckpointStore(tmp_path / "other")
    key = await one.secret()
    path = tmp_path / "s" / ".secret"
    assert (0o600, key.hex()) == (stat.S_IMODE(path.stat().st_mode), path.read_text())
    assert key == await two.secret()
    assert key != await elsewhere.secret()


async def test_app_secret_is_used_and_no_key_file_written(tmp_path: Path) -> None:
    """With ``secret=`` the store signs with it and writes no ``.secret`` file."""
    directory = tmp_path / "s"
    compiled = ask_graph(Ask(), JsonFileCheckpointStore(directory, secret="from-the-app"))
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    assert not (directory / ".secret").exists()
    stranger = ask_graph(Ask(), JsonFileCheckpointStore(directory))  # would make a random key
    with pytest.raises(InvalidResumeToken):
        await stranger.resume(suspended.suspension.token, "x")
    friend = ask_graph(Ask(), JsonFileCheckpointStore(directory, secret=b"from-the-app"))
    assert "completed" == (await friend.resume(suspended.suspension.token, "x")).status


@pytest.mark.parametrize("durability", ["fsync", "none"])
async def test_resume_after_restart_with_new_graph_and_store(
    tmp_path: Path, durability: Literal["fsync", "none"]
) -> None:
    """A token resumes on a brand-new StateGraph, CompiledGraph and store object on the same directory."""
    directory = tmp_path / "store"
    before = Ask()
    first_store = JsonFileCheckpointStore(directory, durability=durability)
    suspended = await ask_graph(before, first_store).run({"log": ["hi"]}, thread_id="t")
    assert suspended.suspension is not None
    text = str(suspended.suspension.token)
    del before, first_store
    after = Ask()
    restarted = ask_graph(after, JsonFileCheckpointStore(directory, durability=durability))
    result = await restarted.resume(text, "Grace")
    assert ("completed", ["ask", "after"], 0, 1) == (
        result.status,
        result.path,
        after.run_calls,
        after.resume_calls,
    )
    assert Counter(n=3, log=["hi", "first", "answer:Grace", "after"]) == result.state


# -- conflicts ----------------------------------------------------------------------


async def test_conflicting_save_names_the_thread(file_store: JsonFileCheckpointStore) -> None:
    """A save whose parent is not the latest raises CheckpointConflict and leaves the files untouched."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    latest = await file_store.load_latest("t")
    assert latest is not None
    on_disk = snapshot(file_store)
    imposter = dataclasses.replace(latest, checkpoint_id="imposter")  # same parent, same seq
    with pytest.raises(CheckpointConflict, match="thread `t`"):
        await file_store.save(imposter)
    assert on_disk == snapshot(file_store)


async def test_save_while_another_store_holds_the_lease_conflicts(
    lock_kind: str, file_store: JsonFileCheckpointStore
) -> None:
    """A save while another store holds the thread's lease raises CheckpointConflict naming the thread."""
    assert (lock_kind == "range") == file_store.fs.range_locks
    await chain("a", store=file_store).run({}, thread_id="t")
    latest = await file_store.load_latest("t")
    assert latest is not None
    following = dataclasses.replace(  # changes nothing: a one-line changes line
        latest,
        checkpoint_id="following",
        parent_id=latest.checkpoint_id,
        seq=latest.seq + 1,
        changes={},
    )
    on_disk = snapshot(file_store)
    other = JsonFileCheckpointStore(file_store.directory)
    lease = await file_store.acquire("t")
    try:
        with pytest.raises(CheckpointConflict, match="thread `t`"):
            await other.save(following)
    finally:
        await lease.release()
    assert on_disk == snapshot(file_store)
    await other.save(following)  # once the lease is released the same save goes through
    saved = await restarted(file_store).load_latest("t")
    assert saved is not None
    assert ("following", 3, {"n": 1, "log": ["a"]}) == (saved.checkpoint_id, saved.seq, saved.state)


class Number(BaseModel):
    n: int = 0


def numbered(
    checkpoint_id: str, parent_id: str | None, seq: int, *, whole: bool = False
) -> Checkpoint:
    """A checkpoint of a ``Number`` state: saved as a changes line, or with ``whole`` (or as
    the first of a thread) as the first line of a new segment."""
    return Checkpoint(
        thread_id="t",
        checkpoint_id=checkpoint_id,
        parent_id=parent_id,
        seq=seq,
        run_id="r",
        step=seq - 1,
        status="running",
        next="a",
        state=Number(n=seq),
        created_at="2024-01-01T00:00:00.000+00:00",
        changes=None if parent_id is None or whole else {"n": None},
    )


@pytest.mark.parametrize(
    "whole",
    [
        pytest.param(True, id="new-segment"),
        pytest.param(False, id="changes-line"),
    ],
)
async def test_save_after_another_store_moved_on_conflicts(tmp_path: Path, whole: bool) -> None:
    """A lease-less save whose parent another store has already followed raises CheckpointConflict."""
    one = JsonFileCheckpointStore(tmp_path / "store")
    two = JsonFileCheckpointStore(tmp_path / "store")
    await one.save(numbered("first", None, 1))
    await two.save(numbered("second-by-two", "first", 2, whole=whole))
    on_disk = snapshot(one)
    with pytest.raises(CheckpointConflict, match="thread `t`"):
        await one.save(numbered("second-by-one", "first", 2, whole=whole))
    assert on_disk == snapshot(one)
    latest = await restarted(one).load_latest("t")
    assert latest is not None
    assert "second-by-two" == latest.checkpoint_id


async def test_save_after_another_writer_died_mid_line_is_readable(tmp_path: Path) -> None:
    """A lease-less save after another writer left an unfinished line cuts it off and stays readable."""
    store = JsonFileCheckpointStore(tmp_path / "store")
    await store.save(numbered("first", None, 1))
    with segment(store, 1).open("ab") as file:  # another process killed mid-line
        file.write(TORN)
    await store.save(numbered("second", "first", 2))
    latest = await restarted(store).load_latest("t")
    assert latest is not None
    assert ("second", 2) == (latest.checkpoint_id, latest.seq)
    assert [1, 2] == disk_seqs(store)
