"""Fixtures shared by every test: the loopback Anthropic and Tavily servers, a PostgreSQL
server, each kind of file-store lease, and every store (for the engine and store tests)."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from servers import FakeAnthropic, FakeTavily
from servers.postgres import PostgresServer, ServerUnavailable
from stores.helpers import OPENED, Opened, close_store, postgres_url

from research_fsm.engine import CheckpointStore
from research_fsm.stores import open_store
from research_fsm.stores.file import fs as _fs
from research_fsm.stores.file.fs import FileSystem


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
# The tests' documents are embedded by the model the test extra installs (WordLlama, in
# microseconds), also where the minilm extra is installed; a test of MiniLM asks for it.
os.environ.setdefault("RESEARCH_FSM_EMBEDDER", "wordllama")


@dataclass(frozen=True)
class StoreKind:
    """A store the engine and store tests run on."""

    url: Callable[[pytest.FixtureRequest, Path], tuple[str, dict[str, Any]]]
    """Its ``open_store`` URL and options, a new folder (the path given) or schema each call."""
    in_process: bool = False
    """It keeps states as Python objects in the store object (``helpers.Opened``)."""


STORE_KINDS: dict[str, StoreKind] = {
    "memory": StoreKind(lambda request, folder: ("memory:", {}), in_process=True),
    "file-none": StoreKind(lambda request, folder: (f"file:{folder}", {"durability": "none"})),
    "file-fsync": StoreKind(lambda request, folder: (f"file:{folder}", {"durability": "fsync"})),
    "file-flock": StoreKind(
        lambda request, folder: (
            f"file:{folder}",
            {"durability": "none", "fs": FileSystem(range_locks=False)},
        )
    ),
    "postgres": StoreKind(lambda request, folder: postgres_url(request)),
}
"""Each store the engine and store tests (the conformance suite,
tests/stores/test_store_contract.py) run on. A new store adds a row here."""


def _open_kind(
    kind: str, request: pytest.FixtureRequest, folder: Path, **kwargs: Any
) -> CheckpointStore:
    """A store of ``kind``, remembered in ``helpers.OPENED`` (for ``helpers.reopen``)."""
    url, options = STORE_KINDS[kind].url(request, folder)
    options = {**options, **kwargs}
    store = open_store(url, **options)
    OPENED[id(store)] = Opened(url, options, STORE_KINDS[kind].in_process)
    return store


@pytest.fixture(autouse=True)
def _structlog_config_restored() -> Iterator[None]:
    """Each test starts with the logging set-up the one before it started with: a test
    that configures logging (a CLI run, ``configure_logging``) to a stream pytest closes
    afterwards leaves no logger that prints to a closed file."""
    loaded = sys.modules.get("structlog")
    saved = loaded.get_config() if loaded is not None else None
    yield
    structlog = sys.modules.get("structlog")
    if structlog is None:
        return
    if saved is None:  # loaded during the test: back to structlog's defaults
        structlog.reset_defaults()
    else:
        structlog.configure(**saved)


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


@pytest.fixture(params=list(STORE_KINDS))
def store_kind(request: pytest.FixtureRequest) -> str:
    """The name of a row of ``STORE_KINDS``: each store the engine and store tests run on."""
    kind: str = request.param
    return kind


@pytest.fixture
async def store(
    store_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[CheckpointStore]:
    """Every store implementation: in memory, JSON files without and with fsync (and
    without, leasing with `flock` as where there are no range locks), PostgreSQL."""
    made = _open_kind(store_kind, request, tmp_path / "store")
    yield made
    await close_store(made)
    OPENED.pop(id(made), None)


@pytest.fixture
async def make_store(
    store_kind: str, store: CheckpointStore, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., CheckpointStore]]:
    """A factory for more stores of the same kind as ``store`` (each in its own directory
    or schema)."""
    counter = itertools.count(1)
    made: list[CheckpointStore] = []

    def make(**kwargs: Any) -> CheckpointStore:
        new = _open_kind(store_kind, request, tmp_path / f"store-{next(counter)}", **kwargs)
        made.append(new)
        return new

    yield make
    for new in made:
        await close_store(new)
        OPENED.pop(id(new), None)
