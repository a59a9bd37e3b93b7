"""The ``research-fsm`` command line: in-process (``clirun.run_cli``), and as a real
process where the process is the point (``spawn_cli``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from clirun import cli_env, run_cli, spawn_cli
from homes import seeded_home


def cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``research-fsm ARGS`` offline on ``home`` (seeded), in this process."""
    return run_cli(*args, env=cli_env(seeded_home(home)), stdin=stdin)


def spawn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m research_fsm ARGS`` offline on ``home`` (seeded), a real process."""
    return spawn_cli(*args, env=cli_env(seeded_home(home)), timeout=60)


def test_ask_offline_answers(tmp_path: Path) -> None:
    """``ask`` answers offline from the directory: answer on stdout, progress on stderr
    (a real process: ``python -m research_fsm``)."""
    result = spawn(tmp_path, "ask", "Who is the CEO of Apple?")
    assert result.returncode == 0, result.stderr
    assert "Tim Cook" in result.stdout
    assert "[research]" in result.stderr
    assert "[research]" not in result.stdout


def test_clarification_across_processes(tmp_path: Path) -> None:
    """Without a terminal, a clarification exits 3; ``answer`` in a new process continues it
    (both real processes)."""
    first = spawn(
        tmp_path, "ask", "Tell me about the company", "--thread", "cli-1", "--source", "mock"
    )
    assert first.returncode == 3
    assert "Which company" in first.stdout
    assert "research-fsm answer --thread cli-1" in first.stderr
    second = spawn(tmp_path, "answer", "--thread", "cli-1", "Apple", "--source", "mock")
    assert second.returncode == 0, second.stderr
    assert "Apple Inc." in second.stdout


def test_ask_json(tmp_path: Path) -> None:
    """``--json`` prints the reply as JSON with status, company, confidence, sources and path."""
    result = cli(tmp_path, "ask", "Tell me about Microsoft", "--source", "mock", "--json")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["status"] == "answered"
    assert reply["company"] == "Microsoft Corporation"
    assert reply["confidence"] == 10
    assert reply["path"] == ["clarity", "research", "synthesis"]
    assert len(reply["sources"]) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ask", ""), "empty"),
        (("ask", "   "), "empty"),
        (("ask", "x" * 100_000), "limit"),
        (("ask", "Apple\x1b[2J\x07"), "control characters"),
        (("ask", "Apple", "--thread", "../../etc"), "invalid thread_id"),
        (("ask", "Apple", "--source", "bogus"), "bogus"),
        (("answer", "--thread", "nobody", "Apple"), "no conversation `nobody`"),
        (("history", "--thread", "nobody"), "no conversation `nobody`"),
    ],
)
def test_bad_input_clear_error(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    """Bad input gets one clear line on stderr and a non-zero status, never a traceback."""
    result = cli(tmp_path, *args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("research-fsm: ")
    assert message in result.stderr


def test_graph_and_history(tmp_path: Path) -> None:
    """``graph`` prints the Mermaid diagram; ``history`` prints a stored conversation."""
    graph = cli(tmp_path, "graph")
    assert graph.stdout.startswith("flowchart TD")
    assert "error_recovery" in graph.stdout
    cli(tmp_path, "ask", "Tell me about Tesla", "--thread", "h1", "--source", "mock")
    history = cli(tmp_path, "history", "--thread", "h1")
    assert history.returncode == 0
    assert "user: Tell me about Tesla" in history.stdout
    assert "assistant: Here's what I found about Tesla, Inc." in history.stdout


def test_chat_multi_turn(tmp_path: Path) -> None:
    """``chat`` keeps the company across turns and ends at end of input."""
    result = cli(
        tmp_path,
        "chat",
        "--thread",
        "chat-1",
        "--source",
        "mock",
        stdin="Tell me about Tesla\nWhat about their stock?\n/quit\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Tesla, Inc.") >= 2
    assert "TSLA" in result.stdout


def test_version(tmp_path: Path) -> None:
    """``--version`` prints the program name and the package version."""
    from research_fsm import __version__

    result = cli(tmp_path, "--version")
    assert (0, f"research-fsm {__version__}") == (result.returncode, result.stdout.strip())


def test_ask_help_mentions_exit_status_3(tmp_path: Path) -> None:
    """``ask --help`` documents that a question asked back exits with status 3."""
    result = cli(tmp_path, "ask", "--help")
    assert result.returncode == 0
    assert "3    the assistant asked back and needs an answer" in result.stdout


def test_history_shows_the_question_asked_back(tmp_path: Path) -> None:
    """``history`` lists the assistant's clarification question between the user's turns."""
    cli(tmp_path, "ask", "Tell me about the company", "--thread", "h-1")
    cli(tmp_path, "answer", "--thread", "h-1", "msft")
    result = cli(tmp_path, "history", "--thread", "h-1", "--json")
    messages = json.loads(result.stdout)
    assert ["user", "assistant", "user", "assistant"] == [m["role"] for m in messages]
    assert messages[1]["content"].startswith("Which company would you like me to research?")
    assert messages[3]["content"].startswith("Here's what I found about Microsoft:")


def test_offline_apple_question_through_the_cli(tmp_path: Path) -> None:
    """The README's first question offline: one research round, no validator, no
    low-information warning, and the plain no-news sentence."""
    result = cli(tmp_path, "ask", "What's happening with Apple?")
    assert result.returncode == 0, result.stderr
    progress = [line.strip() for line in result.stderr.splitlines() if line.strip().startswith("[")]
    assert ["[clarity]", "[research]", "[synthesis]"] == [line.split()[0] for line in progress]
    assert not result.stdout.startswith(("**Note**", "_I found"))
    assert "The offline directory has no news; set TAVILY_API_KEY for live data." in result.stdout


def test_off_topic_does_not_wait_for_an_answer(tmp_path: Path) -> None:
    """ "What's the capital of France?" exits 0 with what the assistant does, no question back."""
    result = cli(tmp_path, "ask", "What's the capital of France?")
    assert (0, True) == (result.returncode, "I research companies" in result.stdout)
