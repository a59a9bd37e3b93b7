"""``RESEARCH_FSM_STORE``: the assistant and the CLI keep conversations in PostgreSQL."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from homes import seeded_home

from research_fsm import ResearchAssistant
from research_fsm.assistant import DEFAULT_KEEP
from research_fsm.sources import MockDataSource
from research_fsm.stores import InvalidStoreSetting, JsonFileCheckpointStore

REPO = Path(__file__).resolve().parents[2]


def url(server: Any) -> str:
    """The test server as a ``postgresql://`` URL (unix socket in ``host=``)."""
    return f"postgresql://postgres@/postgres?host={server.socket_dir}"


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m research_fsm ARGS`` offline, with this checkout and ``env`` set."""
    environ = {**os.environ, "RESEARCH_FSM_HOME": str(seeded_home(home)), "LOG_LEVEL": "WARNING"}
    environ.update(PYTHONPATH=str(REPO), **env)
    environ.pop("ANTHROPIC_API_KEY", None)
    environ.pop("TAVILY_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "research_fsm", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )


async def test_assistant_keeps_conversations_in_the_database_the_env_names(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With RESEARCH_FSM_STORE set, a second assistant (another process) continues the conversation."""
    pytest.importorskip("psycopg")
    from research_fsm.stores.postgres import PostgresCheckpointStore

    monkeypatch.setenv("RESEARCH_FSM_STORE", url(postgres_server))
    thread = f"env-{secrets.token_hex(4)}"
    first = ResearchAssistant(source=MockDataSource())
    assert isinstance(first.store, PostgresCheckpointStore)
    assert DEFAULT_KEEP == first.store.keep
    asked = await first.ask("Tell me about the company", thread_id=thread)
    await first.aclose()
    second = ResearchAssistant(source=MockDataSource())
    try:
        assert asked.text == (await second.pending_question(thread)).text  # type: ignore[union-attr]
        answered = await second.ask("Apple", thread_id=thread)
        assert ("answered", True) == (answered.status, "Apple Inc." in answered.text)
    finally:
        await second.aclose()


def test_unset_or_empty_env_keeps_the_file_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty RESEARCH_FSM_STORE means the default JSON file store."""
    monkeypatch.setenv("RESEARCH_FSM_STORE", "")
    assert isinstance(ResearchAssistant(source=MockDataSource()).store, JsonFileCheckpointStore)


def test_a_value_that_is_no_postgres_url_is_refused_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RESEARCH_FSM_STORE=mysql://... raises InvalidStoreSetting that does not repeat the password."""
    monkeypatch.setenv("RESEARCH_FSM_STORE", "mysql://me:hunter2@db/x")
    with pytest.raises(InvalidStoreSetting, match="postgresql://") as info:
        ResearchAssistant(source=MockDataSource())
    assert "hunter2" not in str(info.value)


def test_cli_uses_the_env_store_across_processes(tmp_path: Path, postgres_server: Any) -> None:
    """`ask` and then `answer` in two processes continue one conversation kept in Postgres."""
    pytest.importorskip("psycopg")
    thread = f"cli-{secrets.token_hex(4)}"
    env = {"RESEARCH_FSM_STORE": url(postgres_server)}
    first = run(
        tmp_path, "ask", "Tell me about the company", "--thread", thread, "--source", "mock", **env
    )
    assert 3 == first.returncode, first.stderr
    second = run(
        tmp_path / "elsewhere", "answer", "--thread", thread, "Apple", "--source", "mock", **env
    )
    assert (0, True) == (second.returncode, "Apple Inc." in second.stdout), second.stderr
    assert [] == list(tmp_path.glob("**/*.jsonl"))  # nothing went to files


def test_cli_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    """RESEARCH_FSM_STORE set but psycopg missing: exit 2 naming `pip install 'research-fsm[postgres]'`."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "psycopg.py").write_text("raise ImportError('psycopg is not installed')\n")
    environ = {"RESEARCH_FSM_STORE": "postgresql://nobody@/db"}
    result = subprocess.run(
        [sys.executable, "-m", "research_fsm", "ask", "Who runs Apple?", "--source", "mock"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            **environ,
            "RESEARCH_FSM_HOME": str(tmp_path),
            "PYTHONPATH": f"{blocker}{os.pathsep}{REPO}",
        },
    )
    assert 2 == result.returncode, result.stderr
    assert "pip install 'research-fsm[postgres]'" in result.stderr
