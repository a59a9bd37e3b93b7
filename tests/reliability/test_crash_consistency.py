"""Crash consistency: real child processes SIGKILLed at random moments mid-conversation.

A child (``_procs/crash_child.py``) runs engine or assistant conversations on a
``JsonFileCheckpointStore(durability="fsync")`` and logs (fsynced) every call that
returned; the parent kills it after a seeded random delay, then checks with
brand-new stores that every complete checkpoint line on disk parses, equals the
reference run's checkpoint at the same position, chains to its parent and still
holds every call that returned; that the next lease holder silently cuts off an
unfinished last line (a save the kill cut short); and that a copy of the thread
continues to the reference's end. The next child starts on the raw crash state, so
kills also hit recoveries. Further children die at chosen points of starting a
segment file and of deleting a thread.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from structlog.testing import capture_logs

from research_fsm.engine import Checkpoint, MemoryCheckpointStore, StaleResumeToken
from research_fsm.qa import ResearchState
from research_fsm.stores import JsonFileCheckpointStore

from . import disk

PROCS = Path(__file__).parent / "_procs"
REPO = Path(__file__).resolve().parents[2]


def load_proc(name: str) -> ModuleType:
    """Import a ``_procs`` program as a module (it is also run as a script, with its
    folder first on ``sys.path``: so here too, for its sibling modules such as ``_killing``)."""
    if str(PROCS) not in sys.path:
        sys.path.append(str(PROCS))
    spec = importlib.util.spec_from_file_location(f"_reliability_{name}", PROCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


child = load_proc("crash_child")

KILLS = {"engine": 40, "assistant": 40}
"""SIGKILLs per mode: 80 in all."""
MAX_DELAY = 0.06
"""Kills land uniformly in the first this-many seconds of work (several turns)."""


def warnings(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["log_level"] in ("warning", "error", "critical")]


def new_store(mode: str, directory: Path) -> JsonFileCheckpointStore:
    keep = child.ASSISTANT_KEEP if mode == "assistant" else None
    return JsonFileCheckpointStore(directory, durability="fsync", keep=keep)


def describe(mode: str, cp: Checkpoint) -> tuple[Any, ...]:
    """A checkpoint without its ids and times: what must match the reference run."""
    model = ResearchState if mode == "assistant" else child.Turns
    state = model.model_validate(cp.state).model_dump(mode="json")
    if mode == "assistant":
        state.pop("correlation_id")
        for message in state["messages"]:
            message.pop("timestamp")
    return (cp.status, cp.next, cp.last_node, cp.step, state)


async def advance(mode: str, store: JsonFileCheckpointStore, thread_id: str) -> Any:
    """A driver bound to ``store``: call it repeatedly to move ``thread_id`` on."""
    if mode == "engine":
        app = child.engine_app(store)
        return lambda: child.advance_engine(app, thread_id)
    assistant = child.make_assistant(store)
    return lambda: child.advance_assistant(assistant, thread_id)


async def reference_run(mode: str) -> list[tuple[Any, ...]]:
    """Every checkpoint of one uninterrupted conversation, by seq (index seq - 1)."""
    store = MemoryCheckpointStore()
    step = await advance(mode, store, "ref")  # type: ignore[arg-type]
    while await step() is not None:
        pass
    history = [cp async for cp in store.history("ref")]
    assert list(range(len(history), 0, -1)) == [cp.seq for cp in history]
    return [describe(mode, cp) for cp in reversed(history)]


@dataclass
class Tally:
    """What the kills hit: the newest checkpoint's status, per thread checked."""

    kills: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    returned: int = 0
    continued: int = 0
    torn: int = 0
    """Kills that left an unfinished last line or an empty segment (killed mid-save)."""


async def take_lease_and_load(
    store: JsonFileCheckpointStore, thread_id: str
) -> tuple[Checkpoint | None, list[dict[str, Any]]]:
    """What the next lease holder loads (repairing what it must), and its warnings."""
    with capture_logs() as logs:
        latest = await disk.load_as_lease_holder(store, thread_id)
    return latest, warnings(logs)


def copy_thread(store: JsonFileCheckpointStore, thread_id: str, root: Path) -> None:
    """Copy the thread's files (and the signing key) into a new store folder ``root``."""
    root.mkdir(mode=0o700, parents=True)
    for path in store.thread_files(thread_id):
        shutil.copy2(path, root / path.name)
    if (store.directory / ".secret").exists():
        shutil.copy2(store.directory / ".secret", root / ".secret")


async def check_thread(
    mode: str,
    directory: Path,
    thread_id: str,
    reference: list[tuple[Any, ...]],
    records: list[dict[str, Any]],
    scratch: Path,
    tally: Tally,
) -> bool:
    """Check one thread after a kill; continue a copy of it. True if it was finished."""
    store = new_store(mode, directory)  # reads only: no lease, no file changed
    with capture_logs() as logs:
        latest = await store.load_latest(thread_id)
        history = [cp async for cp in store.history(thread_id)]
        on_disk = await disk.everything_on_disk(directory, thread_id)
    assert [] == warnings(logs)
    # every complete line parses (a reader stops a segment at its first bad line)
    assert disk.complete_lines(store, thread_id) == len(on_disk)
    if latest is None:
        assert ([], []) == (records, on_disk)  # nothing returned, nothing saved
        return False
    tally.statuses[latest.status] += 1
    tally.torn += bool(disk.unfinished(store, thread_id))
    assert latest.checkpoint_id == on_disk[0].checkpoint_id
    newest = len(on_disk) if store.keep is None else min(store.keep, len(on_disk))
    assert on_disk[:newest] == history
    assert list(range(latest.seq, latest.seq - len(on_disk), -1)) == [cp.seq for cp in on_disk]
    assert [cp.parent_id for cp in on_disk[:-1]] == [cp.checkpoint_id for cp in on_disk[1:]]
    # each checkpoint is the state after one completed step of the reference run
    assert [reference[cp.seq - 1] for cp in on_disk] == [describe(mode, cp) for cp in on_disk]
    # every call that returned before the kill is still there
    tally.returned += len(records)
    if mode == "engine":
        saved = {cp.checkpoint_id for cp in on_disk}
        assert [] == [r for r in records if r["checkpoint_id"] not in saved]
    else:
        state = ResearchState.model_validate(latest.state)
        said = [(m.role, m.content) for m in state.messages]
        for record in records:
            if record["kind"] == "ask":
                assert ("user", record["question"]) in said
            if record["status"] == "answered":
                assert ("assistant", record["text"]) in said
                if record["kind"] == "ask":
                    at = said.index(("user", record["question"]))
                    assert ("assistant", record["text"]) == said[at + 1]
    finished = latest.seq == len(reference)
    # on a copy (the next child must meet the raw crash state), the next lease
    # holder silently cuts off what the kill left unfinished, and nothing else
    copy_root = scratch / thread_id
    copy_thread(store, thread_id, copy_root)
    copy = new_store(mode, copy_root)
    repaired, warned = await take_lease_and_load(copy, thread_id)
    assert [] == warned
    assert (latest, []) == (repaired, disk.unfinished(copy, thread_id))
    assert len(on_disk) == disk.complete_lines(copy, thread_id)
    # continuing the copy reaches the reference's end
    step = await advance(mode, copy, thread_id)
    calls = 0
    with capture_logs() as logs:
        while await step() is not None:
            calls += 1
    assert [] == warnings(logs)
    tally.continued += calls > 0
    end = await copy.load_latest(thread_id)
    assert end is not None
    assert (len(reference), reference[-1]) == (end.seq, describe(mode, end))
    assert [] == disk.unfinished(copy, thread_id)
    everything = await disk.everything_on_disk(copy_root, thread_id)
    assert disk.complete_lines(copy, thread_id) == len(everything)
    shutil.rmtree(copy_root)
    return finished


def spawn(mode: str, directory: Path, log: Path, errors: Path) -> subprocess.Popen[str]:
    with errors.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(PROCS / "crash_child.py"), mode, str(directory), str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )


def read_records(log: Path) -> list[dict[str, Any]]:
    """The calls the child logged as returned (a torn last line would not count)."""
    if not log.exists():
        return []
    lines = log.read_text().splitlines(keepends=True)
    return [json.loads(line) for line in lines if line.endswith("\n")]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["engine", "assistant"])
async def test_sigkill_at_random_moments_loses_no_returned_turn(tmp_path: Path, mode: str) -> None:
    """After each of many SIGKILLs every checkpoint line parses, matches a completed step and keeps every returned call; the next lease holder cuts off only an unfinished line, and the thread continues to the end."""
    rng = random.Random(f"crash-{mode}")
    reference = await reference_run(mode)
    kills = KILLS[mode]

    def store_dir(cycle: int) -> Path:
        # the engine reuses one store (children recover from their predecessors'
        # kills); the assistant gets a new one every 3 kills (first use: mkdir, key)
        return tmp_path / ("store" if mode == "engine" else f"store-{cycle // 3}")

    def paths(cycle: int) -> tuple[Path, Path, Path]:
        return store_dir(cycle), tmp_path / f"log-{cycle}.jsonl", tmp_path / f"err-{cycle}.txt"

    tally = Tally()
    finished: set[tuple[Path, str]] = set()
    upcoming = spawn(mode, *paths(0))
    try:
        for cycle in range(kills):
            proc = upcoming
            directory, log, errors = paths(cycle)
            assert proc.stdout is not None and proc.stdin is not None
            assert "ready" == proc.stdout.readline().strip(), errors.read_text()
            if cycle + 1 < kills:  # the next child imports while this one works
                upcoming = spawn(mode, *paths(cycle + 1))
            proc.stdin.write("go\n")
            proc.stdin.flush()
            time.sleep(rng.uniform(0, MAX_DELAY))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stdin.close()
            proc.stdout.close()
            assert -signal.SIGKILL == proc.returncode, errors.read_text()
            tally.kills += 1
            records = read_records(log)
            # the threads with files, and any a returned call names (it must have some)
            for thread_id in sorted({*disk.thread_ids(directory), *(r["thread"] for r in records)}):
                if (directory, thread_id) in finished:
                    continue
                mine = [r for r in records if r["thread"] == thread_id]
                scratch = tmp_path / f"scratch-{cycle}"
                if await check_thread(mode, directory, thread_id, reference, mine, scratch, tally):
                    finished.add((directory, thread_id))
    finally:
        if upcoming.poll() is None:
            upcoming.kill()
            upcoming.wait(timeout=30)
    print(f"{mode}: {tally}")
    assert kills == tally.kills
    assert tally.returned > 0 and tally.continued > 0


@pytest.mark.parametrize("point", ["before-write", "mid-write", "before-fsync"])
async def test_kill_while_creating_the_signing_key_leaves_a_usable_store(
    tmp_path: Path, point: str
) -> None:
    """A process killed while the store writes its signing key leaves no damaged key: its suspended thread resumes from a new process."""
    directory = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, str(PROCS / "secret_killer.py"), str(directory), point],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert -signal.SIGKILL == proc.returncode, proc.stderr
    store = JsonFileCheckpointStore(directory)
    latest = await store.load_latest("t")
    assert latest is not None
    assert ("suspended", "ask") == (latest.status, latest.next)  # saved before the key was needed
    app = child.engine_app(store)
    snapshot = await app.get_state("t")  # signs a fresh token: needs the key
    assert snapshot is not None and snapshot.suspension is not None
    result = await app.resume(snapshot.suspension.token, "v1")
    assert ("completed", ["ask", "finish"]) == (result.status, result.path)
    assert ["in1", "w1", "ans1:v1", "done1"] == result.state.log
    key = (directory / ".secret").read_text()
    assert 64 == len(key) and key == (await JsonFileCheckpointStore(directory).secret()).hex()


def save_kill_cases() -> list[Any]:
    cases = []
    for which in ("first", "rotated", "appended"):
        for point in ("after-create", "mid-write", "before-fsync"):
            if (which, point) != ("appended", "after-create"):  # appending makes no file
                cases.append(pytest.param(which, point, id=f"{which}-{point}"))
    return cases


@pytest.mark.parametrize(("which", "point"), save_kill_cases())
async def test_kill_mid_save_leaves_a_thread_that_continues(
    tmp_path: Path, which: str, point: str
) -> None:
    """A process killed mid-save (segment made, line half written, line written but not synced) leaves the thread at the checkpoint before (or at the new one once its line is whole); the next lease holder silently cuts off what is unfinished and the thread continues to the reference's end."""
    directory = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, str(PROCS / "save_killer.py"), str(directory), which, point],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert -signal.SIGKILL == proc.returncode, proc.stderr
    seq = int(proc.stdout)  # the checkpoint it was saving
    # segments of 2 lines: 1-2 and 3-4; the resume after the first suspension (at 3)
    # reopens segment 3 and appends 4
    assert {"first": 1, "rotated": 3, "appended": 4}[which] == seq
    store = JsonFileCheckpointStore(directory, durability="fsync", keep=2)
    torn = disk.unfinished(store, "t")
    assert (point != "before-fsync") == bool(torn)
    latest, warned = await take_lease_and_load(store, "t")
    assert [] == warned
    saved = seq if point == "before-fsync" else seq - 1  # a whole line counts
    assert saved == (latest.seq if latest is not None else 0)
    assert [] == disk.unfinished(store, "t")
    reference = await reference_run("engine")
    app = child.engine_app(store)
    with capture_logs() as logs:
        while await child.advance_engine(app, "t") is not None:
            pass
    assert [] == warnings(logs)
    end = await store.load_latest("t")
    assert end is not None
    assert (len(reference), reference[-1]) == (end.seq, describe("engine", end))


@pytest.mark.slow
async def test_kill_during_delete_never_brings_back_an_older_state(tmp_path: Path) -> None:
    """A process killed at any point of deleting a thread (one segment file after another) leaves it whole or gone, never rolled back to an older checkpoint where a used token works again."""
    outcomes = []
    files = 0
    for kill_at in itertools.count(1):  # until the delete finishes before the kill
        directory = tmp_path / f"store-{kill_at}"
        proc = subprocess.run(
            [sys.executable, str(PROCS / "delete_killer.py"), str(directory), str(kill_at)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        used_token, latest_id, segments, *done = proc.stdout.split()
        files = int(segments)
        if proc.returncode == 0:
            assert ["deleted"] == done
            break
        assert -signal.SIGKILL == proc.returncode, proc.stderr
        store = JsonFileCheckpointStore(directory)
        latest = await store.load_latest("t")
        outcomes.append("gone" if latest is None else "whole")
        assert latest is None or latest_id == latest.checkpoint_id, kill_at
        app = child.engine_app(store)
        with pytest.raises(StaleResumeToken):
            await app.resume(used_token, "again")
        await app.delete_thread("t")  # deleting again finishes the job
        assert None is await store.load_latest("t")
        assert [] == disk.segments(store, "t")
    assert 2 <= files <= len(outcomes)  # killed before removing each segment
    assert "whole" in outcomes
