"""Fixtures shared by every test: the loopback Anthropic and Tavily servers, a PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from servers import FakeAnthropic, FakeTavily
from servers.postgres import PostgresServer, ServerUnavailable


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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (unix socket in a temp dir), or a skip."""
    try:
        server = PostgresServer()
        server.start()
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        yield server
    finally:
        server.stop()
