"""Fixtures of the web page's tests: an offline assistant, its app and a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed")

from starlette.testclient import TestClient

from research_fsm import JsonFileCheckpointStore, ResearchAssistant
from research_fsm.sources import MockDataSource
from research_fsm.web import create_app


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$RESEARCH_FSM_HOME`` in a temporary folder (reports and sessions go there)."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RESEARCH_DOCS", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    return tmp_path / "home"


@pytest.fixture
def assistant(home: Path) -> ResearchAssistant:
    """Offline: the mock companies, conversations in JSON files under ``home``."""
    return ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(home / "threads")
    )


@pytest.fixture
def client(assistant: ResearchAssistant) -> Iterator[TestClient]:
    """A client of the app, as the page on 127.0.0.1 talks to it."""
    with TestClient(create_app(assistant), base_url="http://127.0.0.1:8000") as test_client:
        yield test_client
