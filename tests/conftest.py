"""Fixtures shared by every test: the loopback Anthropic and Tavily servers, a PostgreSQL
server, each kind of file-store lease."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from servers import FakeAnthropic, FakeTavily
from servers.postgres import PostgresServer, ServerUnavailable

from research_fsm.engine import _fs


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
