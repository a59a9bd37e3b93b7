"""Fixtures shared by every test: the loopback Anthropic and Tavily servers, a PostgreSQL
server, each kind of file-store lease, and every store (for the engine and store tests)."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from servers import FakeAnthropic, FakeTavily
from servers.postgres import PostgresServer, ServerUnavailable
from stores.helpers import close_store, postgres_store

from research_fsm.engine import CheckpointStore, MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._file import fs as _fs
from research_fsm.stores._file.fs import FileSystem


def _isolate_home() -> None:
    """Point ``$RESEARCH_FSM_HOME`` and ``$XDG_DATA_HOME`` at one temporary folder for the
    whole run, before any test (or pytest-xdist worker, which inherits the environment)
    starts: no test, subprocess or default store writes into the user's real data folder.
    The real folder's path is kept in ``RESEARCH_FSM_REAL_HOME`` for the test that proves
    it untouched."""
    if os.environ.get("RESEARCH_FSM_TEST_HOME"):  # a worker: the controller already did it
        return
    real = os.environ.get("RESEARCH_FSM_HOME") or str(
        Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "research-fsm"
    )
    base = Path(tempfile.mkdtemp(prefix="research-fsm-tests-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    os.environ["RESEARCH_FSM_REAL_HOME"] = real
    os.environ["RESEARCH_FSM_TEST_HOME"] = str(base)
    os.environ["RESEARCH_FSM_HOME"] = str(base / "research-fsm")
    os.environ["XDG_DATA_HOME"] = str(base / "data")


_isolate_home()

STORE_KINDS = ["memory", "file-none", "file-fsync", "file-flock", "postgres"]


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropic]:
    """A fake Anthropic Messages API on 127.0.0.1, stopped after the test."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def tavily_server() -> Iterator[FakeTavily]:
    """A fake Tavily search API on 127.0.0.1, stopped after the test."""
    with FakeTavily() as server:
        yield server


def _running_postgres() -> Iterator[PostgresServer]:
    """Start a PostgreSQL server (unix socket in a temp dir) and stop it after; or skip."""
    try:
        server = PostgresServer()
        server.start()
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session, or a skip."""
    yield from _running_postgres()


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, which it may stop and start again."""
    yield from _running_postgres()


@pytest.fixture(params=["range", "flock"])
def lock_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each kind of file-store lease: range locks on `.locks` (Linux) and a `flock` per
    thread file (systems without them, as macOS). Stores the test makes afterwards take
    it, and child processes it starts are told to (``_fs.RANGE_LOCKS``)."""
    kind: str = request.param
    if kind == "range" and not _fs.OFD_LOCKS:
        pytest.skip("this system has no open-file-description locks")
    monkeypatch.setattr(_fs, "RANGE_LOCKS", kind == "range")
    return kind


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    """Every store implementation: in memory, JSON files without and with fsync (and
    without, leasing with `flock` as where there are no range locks), PostgreSQL."""
    kind: str = request.param
    made: CheckpointStore
    if kind == "memory":
        made = MemoryCheckpointStore()
    elif kind == "postgres":
        made = postgres_store(request)
    else:
        durability: Literal["fsync", "none"] = "fsync" if kind == "file-fsync" else "none"
        fs = FileSystem(range_locks=False) if kind == "file-flock" else None
        made = JsonFileCheckpointStore(tmp_path / "store", durability=durability, fs=fs)
    yield made
    await close_store(made)


@pytest.fixture
async def make_store(
    store: CheckpointStore, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., CheckpointStore]]:
    """A factory for more stores of the same kind as ``store`` (each in its own directory)."""
    counter = itertools.count(1)
    made: list[CheckpointStore] = []

    def make(**kwargs: Any) -> CheckpointStore:
        new: CheckpointStore
        if isinstance(store, MemoryCheckpointStore):
            new = MemoryCheckpointStore(**kwargs)
        elif isinstance(store, JsonFileCheckpointStore):
            directory = tmp_path / f"store-{next(counter)}"
            fs = FileSystem(range_locks=store.fs.range_locks)
            new = JsonFileCheckpointStore(directory, durability=store.durability, fs=fs, **kwargs)
        else:
            new = postgres_store(request, **kwargs)
        made.append(new)
        return new

    yield make
    for new in made:
        await close_store(new)
