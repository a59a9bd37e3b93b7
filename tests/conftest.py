"""Fixtures shared by every test: the loopback Anthropic and Tavily servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from servers import FakeAnthropic, FakeTavily


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
