"""Privacy on disk: whatever the file store creates is the owner's alone.

Checkpoint segments, locks, the signing key and damaged lines moved aside are 0600, and
every directory the store creates (missing parents included) is 0700, even under a
permissive umask; also for the assistant's default store and the CLI.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm import ResearchAssistant
from research_fsm.engine import END, START, NodeContext, StateGraph, Suspend, append
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore

from . import disk

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """umask 0 for the test: nothing but the store's own modes protects the files."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def wrong_modes(root: Path) -> list[tuple[str, str]]:
    """Every directory under ``root`` (itself included) that is not 0700 and every
    file that is not 0600, as (path, mode)."""
    wrong = []
    for path in [root, *sorted(root.rglob("*"))]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != (0o700 if path.is_dir() else 0o600):
            wrong.append((str(path.relative_to(root.parent)), oct(mode)))
    return wrong


def kinds(root: Path) -> set[str]:
    """What sort of files the store made: segment, lock, secret, corrupt, dir (any
    other file by its name)."""
    found = set()
    for path in root.rglob("*"):
        if path.is_dir():
            found.add("dir")
        elif path.name.endswith(".corrupt"):
            found.add("corrupt")
        elif path.name.endswith(".jsonl"):
            found.add("segment")
        elif path.name.endswith((".lock", ".locks")):
            found.add("lock")
        elif path.name == ".secret":
            found.add("secret")
        else:
            found.add(path.name)
    return found


def missing(expected: set[str], root: Path) -> set[str]:
    """The kinds in ``expected`` that the store did not make under ``root`` (so the
    modes of all of them were checked)."""
    return expected - kinds(root)


class Ledger(BaseModel):
    log: Annotated[list[str], append] = []


class Ask:
    async def run(self, state: Ledger, ctx: NodeContext) -> Suspend:
        return Suspend({"question": "name?"})

    async def resume(self, state: Ledger, value: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"log": [f"answer {value}"]}


async def test_store_files_are_0600_and_directories_0700_under_umask_0(
    tmp_path: Path, permissive_umask: None
) -> None:
    """Under umask 0, every segment, lock, key and .corrupt file is 0600 and every directory the store creates, missing parents included, is 0700."""
    root = tmp_path / "made-by-the-store"
    store = JsonFileCheckpointStore(root / "nested" / "store", durability="fsync", keep=3)
    graph = StateGraph(Ledger)
    graph.add_node("ask", Ask()).add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(store=store)
    for thread_id in ("alice", "Bob", "x" * 128):  # "Bob" gets hashed file names
        for turn in range(3):  # segments of 3 checkpoints; old ones pruned
            suspended = await app.run({"log": [f"turn {turn}"]}, thread_id=thread_id)
            assert suspended.suspension is not None
            await app.resume(suspended.suspension.token, "ok")
    segments = disk.segments(store, "alice")
    assert 2 <= len(segments)  # it rotated (and pruned)
    with segments[-1].open("ab") as newest:  # a complete line with a wrong checksum
        newest.write(b'{"damaged": true}\t' + b"0" * 32 + b"\n")
    fresh = JsonFileCheckpointStore(store.directory)
    lease = await fresh.acquire("alice")  # the lease holder copies the line aside
    try:
        assert await fresh.load_latest("alice") is not None
    finally:
        await lease.release()
    assert [segments[-1].name + ".corrupt"] == [p.name for p in disk.moved_aside(store, "alice")]
    assert set() == missing({"dir", "segment", "lock", "secret", "corrupt"}, root)
    assert [] == wrong_modes(root)


@pytest.mark.parametrize("variable", ["RESEARCH_FSM_HOME", "XDG_DATA_HOME"])
async def test_assistant_default_store_is_private_under_umask_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, permissive_umask: None, variable: str
) -> None:
    """The assistant's default store (under RESEARCH_FSM_HOME, or XDG_DATA_HOME/research-fsm) creates only 0700 directories and 0600 files."""
    monkeypatch.delenv("RESEARCH_FSM_HOME", raising=False)
    home = tmp_path / "data" / "home"
    monkeypatch.setenv(variable, str(home))
    assistant = ResearchAssistant(source=MockDataSource())
    asked = await assistant.ask("Tell me about the company", thread_id="alice")
    assert asked.token is not None
    assert "answered" == (await assistant.clarify(asked.token, "Apple")).status
    assert "answered" == (await assistant.ask("Tesla news", thread_id="Bob")).status
    assert set() == missing({"dir", "segment", "lock", "secret"}, home)
    assert [] == wrong_modes(tmp_path / "data")


@pytest.mark.slow
def test_cli_in_a_new_process_writes_private_files_under_umask_0(tmp_path: Path) -> None:
    """research-fsm ask/answer run under umask 0 leave only 0700 directories and 0600 files in RESEARCH_FSM_HOME."""
    home = tmp_path / "home" / "research"
    env = {**os.environ, "RESEARCH_FSM_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("TAVILY_API_KEY", None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "research_fsm", *args, "--thread", "demo"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            preexec_fn=lambda: os.umask(0),
        )

    asked = cli("ask", "Tell me about the company", "--source", "mock")
    assert 3 == asked.returncode, asked.stderr
    answered = cli("answer", "Apple", "--source", "mock")
    assert 0 == answered.returncode, answered.stderr
    assert "Apple" in answered.stdout
    assert set() == missing({"dir", "segment", "lock", "secret"}, home)
    assert [] == wrong_modes(tmp_path / "home")
