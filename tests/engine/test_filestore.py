"""JsonFileCheckpointStore: crash safety, processes, corruption, paths, permissions, format."""

from __future__ import annotations

import asyncio
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
from pydantic import BaseModel
from structlog.testing import capture_logs

from research_fsm.engine import (
    END,
    START,
    CheckpointConflict,
    CorruptCheckpoint,
    InvalidResumeToken,
    JsonFileCheckpointStore,
    NodeContext,
    StateGraph,
    StateSerializationError,
    StoreWriteError,
    Suspend,
    ThreadBusy,
    _filestore,
    append,
)

from .helpers import Ask, Counter, ask_graph, chain, recorder

REPO = Path(__file__).resolve().parents[2]


def json_files(folder: Path) -> list[str]:
    return sorted(
        p.name for p in folder.iterdir() if p.name.endswith(".json") and not p.name.startswith(".")
    )


def run_script(tmp_path: Path, source: str, *args: str, **popen: Any) -> subprocess.Popen[str]:
    script = tmp_path / f"script_{abs(hash(source))}.py"
    script.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(script), *args], env=env, text=True, stdout=subprocess.PIPE, **popen
    )


class FaultyOs:
    """Stands in for the ``os`` module inside ``_filestore``, with some calls replaced."""

    def __init__(self, **overrides: Callable[..., Any]) -> None:
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


# -- crash safety ----------------------------------------------------------------

CRASH_WRITER = """
import asyncio, os, signal, sys
from pydantic import BaseModel
from research_fsm.engine import END, START, JsonFileCheckpointStore, StateGraph

class S(BaseModel):
    n: int = 0

async def bump(state):
    return {"n": state.n + 1}

graph = StateGraph(S)
graph.add_node("bump", bump)
graph.add_edge(START, "bump")
graph.add_edge("bump", END)
compiled = graph.compile(store=JsonFileCheckpointStore(sys.argv[1], durability="fsync"))
first = asyncio.run(compiled.run({}, thread_id="t"))
print(first.checkpoint_id, flush=True)

real_write, real_link = os.write, os.link
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def half_write(fd, data):
    real_write(fd, bytes(data)[: len(data) // 2])
    die()
def link_then_die(src, dst, **kw):
    real_link(src, dst, **kw)
    die()
point = sys.argv[2]
if point == "mid-write":
    os.write = half_write
elif point == "before-link":
    os.link = lambda *a, **k: die()
elif point == "after-link":
    os.link = link_then_die
asyncio.run(compiled.run({"n": 100}, thread_id="t"))
print("not killed", flush=True)
"""


@pytest.mark.parametrize("point", ["mid-write", "before-link", "after-link"])
async def test_process_killed_while_saving_leaves_old_or_new_checkpoint(
    tmp_path: Path, point: str
) -> None:
    """SIGKILL during a save leaves the previous (or the complete new) checkpoint, never a torn file."""
    directory = tmp_path / "store"
    proc = run_script(tmp_path, CRASH_WRITER, str(directory), point)
    out, _ = proc.communicate(timeout=60)
    assert -signal.SIGKILL == proc.returncode
    previous_id = out.split()[0]
    store = JsonFileCheckpointStore(directory)
    folder = store.thread_dir("t")
    names = json_files(folder)
    with capture_logs() as logs:
        latest = await store.load_latest("t")
        readable = [cp async for cp in store.history("t")]
    assert latest is not None
    assert [] == [e for e in logs if "corrupt" in e["event"]]
    assert len(names) == len(readable)  # every checkpoint file on disk is whole
    if point == "after-link":  # the new input checkpoint made it, complete
        assert (3, "running", {"n": 100}) == (latest.seq, latest.status, latest.state)
        assert previous_id == latest.parent_id
    else:
        assert (previous_id, 2, {"n": 1}) == (latest.checkpoint_id, latest.seq, latest.state)
        assert any(p.name.startswith(".tmp-") for p in folder.iterdir())
    graph = StateGraph(Counter)
    graph.add_node("bump", recorder("bump"))
    graph.add_edge(START, "bump")
    graph.add_edge("bump", END)
    result = await graph.compile(store=store).run(
        None if point == "after-link" else {}, thread_id="t"
    )
    assert "completed" == result.status
    assert [] == [p.name for p in folder.iterdir() if p.name.startswith(".tmp-")]


async def test_failed_link_keeps_previous_checkpoint(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error between the temp write and its rename leaves the previous checkpoint and no temp file."""
    compiled = chain("a", store=file_store)
    before = await compiled.run({}, thread_id="t")

    def broken_link(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(_filestore, "os", FaultyOs(link=broken_link))
    with pytest.raises(StoreWriteError):
        await compiled.run({}, thread_id="t")
    monkeypatch.undo()
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert (before.checkpoint_id, before.state) == (snapshot.checkpoint_id, snapshot.state)
    assert [] == [p for p in file_store.thread_dir("t").iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("durability, per_save", [("fsync", 2), ("none", 0)])
async def test_durability_controls_fsync(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durability: Literal["fsync", "none"],
    per_save: int,
) -> None:
    """durability='fsync' fsyncs the file and its directory on every save; 'none' never fsyncs."""
    synced: list[int] = []

    def spy_fsync(fd: int) -> None:
        synced.append(fd)
        os.fsync(fd)

    store = JsonFileCheckpointStore(tmp_path / "s", durability=durability)
    await store.secret()
    monkeypatch.setattr(_filestore, "os", FaultyOs(fsync=spy_fsync))
    await chain("a", "b", store=store).run({}, thread_id="t")
    assert 3 * per_save == len(synced)


async def test_cancelled_run_finishes_its_write_before_releasing(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling a run mid-save waits for the write, so the lease is never released mid-write."""
    entered, gate = threading.Event(), threading.Event()

    def slow_fsync(fd: int) -> None:
        entered.set()
        gate.wait()
        os.fsync(fd)

    monkeypatch.setattr(_filestore, "os", FaultyOs(fsync=slow_fsync))
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
    assert latest is not None and 1 == latest.seq
    lease = await file_store.acquire("t")
    await lease.release()


async def test_run_cancelled_while_taking_the_lease_does_not_leak_it(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch
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
from research_fsm.engine import END, START, JsonFileCheckpointStore, StateGraph

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


async def test_run_in_another_process_makes_thread_busy_until_it_dies(tmp_path: Path) -> None:
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


RACER = """
import asyncio, sys
from research_fsm.engine import Checkpoint, CheckpointConflict, JsonFileCheckpointStore

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


async def test_two_processes_saving_the_same_slot_have_one_winner(tmp_path: Path) -> None:
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


def _with_checksum(body: bytes) -> bytes:
    return body + f',\n  "checksum": "sha256:{hashlib.sha256(body).hexdigest()}"\n}}\n'.encode()


def _body(raw: bytes) -> bytes:
    return raw[: raw.rfind(b',\n  "checksum": "')]


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "zero-length": lambda raw: b"",
    "flipped-byte": lambda raw: raw[:40] + bytes([raw[40] ^ 0x01]) + raw[41:],
    "wrong-checksum": lambda raw: re.sub(rb"sha256:[0-9a-f]{64}", b"sha256:" + b"0" * 64, raw),
    "valid-checksum-not-json": lambda raw: _with_checksum(b"{ this is not json"),
    "other-thread": lambda raw: _with_checksum(
        _body(raw).replace(b'"thread_id": "t"', b'"thread_id": "u"')
    ),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
async def test_damaged_newest_checkpoint_falls_back_to_previous(
    file_store: JsonFileCheckpointStore, kind: str
) -> None:
    """A damaged newest file is logged, moved aside as .corrupt, and the one before it is used."""
    compiled = chain("a", "b", store=file_store)
    await compiled.run({}, thread_id="t")
    folder = file_store.thread_dir("t")
    newest = folder / "000000000003.json"
    newest.write_bytes(DAMAGE[kind](newest.read_bytes()))
    with capture_logs() as logs:
        snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("running", "b", 1) == (snapshot.status, snapshot.next, snapshot.state.n)
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert ["corrupt checkpoint moved aside; using the one before it"] == [
        e["event"] for e in warnings
    ]
    assert ("t", str(newest)) == (warnings[0]["thread_id"], warnings[0]["file"])
    assert not newest.exists()
    assert (folder / "000000000003.json.corrupt").exists()
    result = await compiled.run(None, thread_id="t")  # the freed slot is written again
    assert (["b"], 2) == (result.path, result.state.n)
    assert newest.exists()


async def test_all_checkpoints_damaged_raises_corrupt_checkpoint(
    file_store: JsonFileCheckpointStore,
) -> None:
    """When no checkpoint is readable, CorruptCheckpoint names the thread (now and later), never JSONDecodeError."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    folder = file_store.thread_dir("t")
    for name in json_files(folder):
        (folder / name).write_bytes(b'{"schema_version": 1, "thread_id": ')
    for _ in range(2):  # files are moved aside the first time; the thread must not look new after
        with pytest.raises(
            CorruptCheckpoint, match="thread `t`: no readable checkpoint left"
        ) as info:
            await compiled.get_state("t")
        assert "t" == info.value.thread_id
        assert not isinstance(info.value, json.JSONDecodeError)
    with pytest.raises(CorruptCheckpoint):
        await compiled.run({}, thread_id="t")
    await compiled.delete_thread("t")
    assert "completed" == (await compiled.run({}, thread_id="t")).status


async def test_newer_schema_version_is_refused(file_store: JsonFileCheckpointStore) -> None:
    """A checkpoint from a newer schema version is refused with a clear message and left in place."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    newest = file_store.thread_dir("t") / "000000000002.json"
    body = _body(newest.read_bytes()).replace(b'"schema_version": 1', b'"schema_version": 2')
    newest.write_bytes(_with_checksum(body))
    with pytest.raises(CorruptCheckpoint) as info:
        await compiled.get_state("t")
    assert (
        "thread `t`: 000000000002.json was written with checkpoint schema version 2; this "
        "research_fsm reads up to version 1: upgrade research_fsm"
    ) == str(info.value)
    assert newest.exists()


# -- thread ids --------------------------------------------------------------------

BAD_IDS = ["../../etc", "..", ".hidden", "", "x" * 129, "a/b", "a\\b", "a b", "caf\u00e9", "t\n", 7, None]  # fmt: skip


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
    """``Alice`` and ``alice`` get separate directories and states (also on case-insensitive disks)."""
    compiled = chain("a", store=file_store)
    await compiled.run({"log": ["upper"]}, thread_id="Alice")
    await compiled.run({"log": ["lower"]}, thread_id="alice")
    upper, lower = await compiled.get_state("Alice"), await compiled.get_state("alice")
    assert upper is not None and lower is not None
    assert (["upper", "a"], ["lower", "a"]) == (upper.state.log, lower.state.log)
    assert (
        file_store.thread_dir("Alice").name.lower() != file_store.thread_dir("alice").name.lower()
    )
    assert 2 == len([p for p in file_store.directory.iterdir() if p.is_dir()])


# -- files on disk -----------------------------------------------------------------


async def test_keep_prunes_files_on_disk(tmp_path: Path) -> None:
    """keep=N leaves exactly the newest N checkpoint files of the thread."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=3)
    compiled = chain("a", "b", "c", "d", store=store)
    await compiled.run({}, thread_id="t")
    await compiled.run({}, thread_id="t")
    assert ["000000000008.json", "000000000009.json", "000000000010.json"] == json_files(
        store.thread_dir("t")
    )


async def test_files_are_private(file_store: JsonFileCheckpointStore) -> None:
    """Checkpoint, lock and secret files are 0600 and thread directories 0700."""
    compiled = ask_graph(Ask(), file_store)
    await compiled.run({}, thread_id="t")
    folder = file_store.thread_dir("t")

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert 0o700 == mode(folder)
    files = [folder / n for n in json_files(folder)] + [
        folder / ".lock",
        file_store.directory / ".secret",
    ]
    assert [0o600] * len(files) == [mode(p) for p in files]


class Flat(BaseModel):
    n: int = 0
    note: str = ""
    tags: Annotated[list[str], append] = []


async def test_checkpoint_files_are_readable_json_with_stable_layout(
    file_store: JsonFileCheckpointStore,
) -> None:
    """Each checkpoint is indented JSON with a fixed key order, field order in the state, and a checksum."""

    async def node(state: Flat) -> dict[str, Any]:
        return {"note": "caf\u00e9", "n": 1, "tags": ["x"]}

    graph = StateGraph(Flat)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    await graph.compile(store=file_store).run({}, thread_id="t")
    text = (file_store.thread_dir("t") / "000000000002.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert [
        "schema_version", "thread_id", "checkpoint_id", "parent_id", "seq", "run_id", "step",
        "status", "next", "last_node", "created_at", "suspension", "error", "state", "checksum",
    ] == list(data)  # fmt: skip
    assert {"n": 1, "note": "caf\u00e9", "tags": ["x"]} == data["state"]
    assert ["n", "note", "tags"] == list(data["state"])
    assert (1, "t", 2, "completed", "node") == (
        data["schema_version"], data["thread_id"], data["seq"], data["status"], data["last_node"],
    )  # fmt: skip
    assert '\n  "state": {\n    "n": 1,\n    "note": "caf\u00e9",' in text
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", data["checksum"])
    latest = await file_store.load_latest("t")
    assert latest is not None
    assert text.encode() == JsonFileCheckpointStore.encode(latest)


async def test_one_file_per_checkpoint_of_constant_size(
    file_store: JsonFileCheckpointStore,
) -> None:
    """Each save writes one file the size of one state, however long the history gets."""

    async def node(state: Flat) -> dict[str, Any]:
        return {"n": state.n % 9 + 1}

    graph = StateGraph(Flat)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    compiled = graph.compile(store=file_store)
    for _ in range(12):
        await compiled.run({}, thread_id="t")
    names = json_files(file_store.thread_dir("t"))
    sizes = [(file_store.thread_dir("t") / n).stat().st_size for n in names]
    assert 24 == len(names)
    completed = sizes[3::2]  # seq 4, 6, ..., 24: same kind of checkpoint, growing history
    assert max(completed) - min(completed) <= 2


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


@pytest.mark.parametrize(
    "fault",
    [
        {"write": errno.ENOSPC},
        {"open": errno.EROFS},
        {"fsync": errno.EIO},
    ],
    ids=["disk-full", "read-only", "fsync-error"],
)
async def test_write_errors_raise_store_write_error_and_keep_previous(
    file_store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch, fault: dict[str, int]
) -> None:
    """A failing write (disk full, read-only, I/O error) raises StoreWriteError; the previous checkpoint stays."""
    compiled = chain("a", store=file_store)
    before = await compiled.run({}, thread_id="t")
    folder = file_store.thread_dir("t")
    files_before = json_files(folder)
    ((name, code),) = fault.items()
    real = getattr(os, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        if name == "open" and ".tmp-" not in str(args[0]):
            return real(*args, **kwargs)  # the lock file opens fine
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(_filestore, "os", FaultyOs(**{name: failing}))
    with pytest.raises(StoreWriteError, match="the previous checkpoint is intact") as info:
        await compiled.run({"log": ["lost"]}, thread_id="t")
    monkeypatch.undo()
    assert (code, "t") == (info.value.cause.errno, info.value.thread_id)
    assert isinstance(info.value, OSError)
    assert files_before == json_files(folder)
    assert [] == [p for p in folder.iterdir() if p.name.startswith(".tmp-")]
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert (before.checkpoint_id, before.state) == (snapshot.checkpoint_id, snapshot.state)
    assert "completed" == (await compiled.run({}, thread_id="t")).status


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


async def test_leftover_temp_files_are_cleaned_by_the_next_run(
    file_store: JsonFileCheckpointStore,
) -> None:
    """A ``.tmp-*`` file left by a killed writer is removed by the next run on the thread."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    leftover = file_store.thread_dir("t") / ".tmp-deadbeef.json"
    leftover.write_text("{half")
    assert None is not await compiled.get_state("t")
    assert leftover.exists()  # readers without the lease leave it alone
    await compiled.run({}, thread_id="t")
    assert not leftover.exists()


async def test_conflicting_save_names_the_thread(file_store: JsonFileCheckpointStore) -> None:
    """A save into a taken slot raises CheckpointConflict and leaves the file untouched."""
    compiled = chain("a", store=file_store)
    await compiled.run({}, thread_id="t")
    latest = await file_store.load_latest("t")
    assert latest is not None
    path = file_store.thread_dir("t") / "000000000002.json"
    original = path.read_bytes()
    latest.checkpoint_id = "imposter"
    with pytest.raises(CheckpointConflict, match="thread `t`"):
        await file_store.save(latest)
    assert original == path.read_bytes()
