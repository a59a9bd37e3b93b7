"""Fixtures for the research assistant's tests."""

from __future__ import annotations

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import MockDataSource


@pytest.fixture
def mock_source() -> MockDataSource:
    """The design's five mock companies."""
    return MockDataSource()


@pytest.fixture
def assistant(mock_source: MockDataSource) -> ResearchAssistant:
    """An offline assistant over the mock data and an in-memory store."""
    return ResearchAssistant(source=mock_source, store=MemoryCheckpointStore())
