"""Races across processes: several OS processes released together on one thread.

Five workers (``_procs/race_child.py``) wait for a go file and then all resume the
same token, answer the same clarification, or run new input on the same thread.
Node code records its side effects in a file, so the tests count exactly which
process ran what. Each test runs with each kind of file lease (``lock_kind``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from research_fsm.qa import ResearchState
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs

from . import disk

pytestmark = pytest.mark.usefixtures("lock_kind")  # each test with each kind of lease

PROCS = Path(__file__).parent / "_procs"
REPO = Path(__file__).resolve().parents[2]
WORKERS = 5
LOSERS = {"ThreadBusy", "StaleResumeToken"}
"""The documented errors of a resume that lost the race."""


def load_proc(name: str) -> ModuleType:
    """Import a ``_procs`` program as a module (it is also run as a script)."""
    spec = importlib.util.spec_from_file_location(f"_reliability_{name}", PROCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


race = load_proc("race_child")


class Worker:
    """One ``race_child.py`` process; it serves commands until closed."""

    def __init__(self, errors: Path) -> None:
        self.errors = errors
        with errors.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, str(PROCS / "race_child.py")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                bufsize=0,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(command) + "\n").encode())

    def line(self, timeout: float = 60) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"worker silent for {timeout} s: {self.errors.read_text()}"
        text: bytes = self.proc.stdout.readline()
        assert text, f"worker died: {self.errors.read_text()}"
        return text.decode().strip()

    def close(self) -> None:
        try:
            self.send({"op": "exit"})
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Worker]]:
    """Five worker processes, shared by the tests of this module."""
    folder = tmp_path_factory.mktemp("workers")
    pool = [Worker(folder / f"err-{i}.txt") for i in range(WORKERS)]
    yield pool
    for worker in pool:
        worker.close()


def release(
    workers: list[Worker], commands: list[dict[str, Any]], go: Path
) -> list[dict[str, Any]]:
    """Hand each worker its command, wait until all are ready, release them at once."""
    for worker, command in zip(workers, commands, strict=True):
        worker.send({**command, "go": str(go), "range_locks": _fs.RANGE_LOCKS})
    for worker in workers:
        assert "ready" == worker.line()
    go.touch()
    return [json.loads(worker.line()) for worker in workers]


def effects(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def assert_history_whole(directory: Path, thread_id: str) -> int:
    """Every checkpoint line of the thread is complete and parses, and they chain
    1..n; returns n."""
    store = JsonFileCheckpointStore(directory)
    history = [cp async for cp in store.history(thread_id)]
    assert [] == disk.unfinished(store, thread_id)
    assert disk.complete_lines(store, thread_id) == len(history)
    assert list(range(len(history), 0, -1)) == [cp.seq for cp in history]
    assert [cp.parent_id for cp in history[:-1]] == [cp.checkpoint_id for cp in history[1:]]
    return len(history)


@pytest.mark.slow
async def test_one_token_resumed_by_five_processes_runs_resume_once(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """Five processes resuming one token at once (or staggered): one runs the resume code, the others get ThreadBusy or StaleResumeToken before any node code runs."""
    directory = tmp_path / "store"
    app = race.pay_app(JsonFileCheckpointStore(directory))
    seen: set[str] = set()
    rounds = [(0.3, 0.0), (0.0, 0.0), (0.3, 0.0), (0.0, 0.03), (0.05, 0.03), (0.0, 0.03)]
    for round_number, (hold, stagger) in enumerate(rounds):
        thread_id = f"pay-{round_number}"
        side = tmp_path / f"effects-{round_number}.txt"
        race.SETTINGS.update(effects=str(side), hold=0.0)
        suspended = await app.run({}, thread_id=thread_id)
        assert suspended.suspension is not None
        token = str(suspended.suspension.token)
        commands = [
            {
                "op": "resume",
                "store": str(directory),
                "token": token,
                "value": f"w{i}",
                "effects": str(side),
                "hold": hold,
                "after": i * stagger,
            }
            for i in range(WORKERS)
        ]
        outcomes = release(workers, commands, tmp_path / f"go-{round_number}")
        winners = [i for i, o in enumerate(outcomes) if o["outcome"] == "ok"]
        assert 1 == len(winners), outcomes
        (winner,) = winners
        losers = {o["outcome"] for o in outcomes if o["outcome"] != "ok"}
        assert losers <= LOSERS, outcomes
        seen |= losers
        pid = outcomes[winner]["pid"]
        assert [f"run {os.getpid()}", f"resume {pid} w{winner}"] == effects(side)
        snapshot = await app.get_state(thread_id)
        assert snapshot is not None
        assert ("completed", 1, [f"paid w{winner}"]) == (
            snapshot.status,
            snapshot.state.n,
            snapshot.state.log,
        )
        assert 3 == await assert_history_whole(directory, thread_id)
    assert LOSERS == seen  # busy while the winner holds the thread, stale once it is done


@pytest.mark.slow
async def test_five_processes_running_new_input_at_once_lose_no_turn(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """Five processes running new input on one thread at once: winners' turns are all kept whole, losers get ThreadBusy without running node code."""
    directory = tmp_path / "store"
    won: list[str] = []
    for round_number in range(5):
        side = tmp_path / f"effects-{round_number}.txt"
        commands = [
            {
                "op": "run",
                "store": str(directory),
                "thread": "shared",
                "label": f"r{round_number}p{i}",
                "effects": str(side),
                "hold": 0.1,
            }
            for i in range(WORKERS)
        ]
        outcomes = release(workers, commands, tmp_path / f"go-{round_number}")
        labels = [
            c["label"] for c, o in zip(commands, outcomes, strict=True) if o["outcome"] == "ok"
        ]
        assert 1 <= len(labels), outcomes
        assert {"ThreadBusy"} >= {o["outcome"] for o in outcomes if o["outcome"] != "ok"}
        ran = sorted(line.split()[2] for line in effects(side))
        assert sorted(labels) == ran  # node code ran exactly for the winners
        won += labels
    snapshot = await race.bump_app(JsonFileCheckpointStore(directory)).get_state("shared")
    assert snapshot is not None
    log = snapshot.state.log
    turns = list(zip(log[::2], log[1::2], strict=True))
    assert [(label, f"done {label}") for label, _ in turns] == turns  # never interleaved
    assert (sorted(won), len(won)) == (sorted(label for label, _ in turns), snapshot.state.n)
    assert 2 * len(won) == await assert_history_whole(directory, "shared")


QUESTIONS = {
    "Tell me about Apple": "Apple Inc.",
    "What's the latest news about Tesla?": "Tesla, Inc.",
    "How is Microsoft's stock doing?": "Microsoft Corporation",
    "Tell me about Amazon": "Amazon.com, Inc.",
    "What is Google working on?": "Alphabet Inc. (Google)",
}


@pytest.mark.slow
async def test_five_processes_asking_on_one_conversation_serialise(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """Five processes asking the assistant on one conversation at once (retrying on ThreadBusy): every question is answered and kept next to its own answer."""
    directory = tmp_path / "store"
    commands = [
        {"op": "ask", "store": str(directory), "thread": "chat", "question": question}
        for question in QUESTIONS
    ]
    outcomes = release(workers, commands, tmp_path / "go")
    assert ["ok"] * WORKERS == [o["outcome"] for o in outcomes], outcomes
    assert list(QUESTIONS.values()) == [o["company"] for o in outcomes]
    assert sum(o["busy"] for o in outcomes) > 0  # they really collided
    latest = await JsonFileCheckpointStore(directory).load_latest("chat")
    assert latest is not None
    state = ResearchState.model_validate(latest.state)
    said = [(m.role, m.content) for m in state.messages]
    pairs = list(zip(said[::2], said[1::2], strict=True))
    expected = {
        ("user", question): ("assistant", outcome["text"])
        for question, outcome in zip(QUESTIONS, outcomes, strict=True)
    }
    assert expected == dict(pairs)
    assert WORKERS == len(pairs)
    await assert_history_whole(directory, "chat")


COMPANIES = {
    "Apple": "Apple Inc.",
    "Tesla": "Tesla, Inc.",
    "Microsoft": "Microsoft Corporation",
    "Amazon": "Amazon.com, Inc.",
}


@pytest.mark.slow
async def test_clarification_answered_by_four_processes_is_taken_once(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """Four processes answering the same clarification at once: one answer is taken, the others get ThreadBusy or StaleResumeToken."""
    directory = tmp_path / "store"
    assistant = race.make_assistant(JsonFileCheckpointStore(directory))
    asked = await assistant.ask("Tell me about the company", thread_id="alice")
    assert ("needs_clarification", True) == (asked.status, asked.token is not None)
    answers = list(COMPANIES)
    commands = [
        {"op": "clarify", "store": str(directory), "token": asked.token, "answer": answer}
        for answer in answers
    ]
    outcomes = release(workers[:4], commands, tmp_path / "go")
    winners = [i for i, o in enumerate(outcomes) if o["outcome"] == "ok"]
    assert 1 == len(winners), outcomes
    assert {o["outcome"] for o in outcomes if o["outcome"] != "ok"} <= LOSERS
    won = outcomes[winners[0]]
    said = [(m.role, m.content) for m in await assistant.history("alice")]
    assert [
        ("user", "Tell me about the company"),
        ("assistant", asked.text),  # the question asked back is part of the transcript
        ("user", answers[winners[0]]),
        ("assistant", won["text"]),
    ] == said
    snapshot = await (await assistant.graph()).get_state("alice")
    assert snapshot is not None
    assert (COMPANIES[answers[winners[0]]], "completed") == (
        snapshot.state.detected_company,
        snapshot.status,
    )
    assert won["company"] == snapshot.state.detected_company
    await assert_history_whole(directory, "alice")


@pytest.mark.slow
async def test_processes_creating_the_signing_key_at_once_agree_on_it(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """Five processes suspending threads at once on a brand-new store all sign with the one key a later process verifies."""
    for attempt in range(3):
        directory = tmp_path / f"store-{attempt}"
        commands = [
            {
                "op": "suspend",
                "store": str(directory),
                "thread": f"t{i}",
                "effects": str(tmp_path / "effects.txt"),
            }
            for i in range(WORKERS)
        ]
        outcomes = release(workers, commands, tmp_path / f"go-{attempt}")
        assert ["ok"] * WORKERS == [o["outcome"] for o in outcomes], outcomes
        app = race.pay_app(JsonFileCheckpointStore(directory))
        race.SETTINGS.update(effects=str(tmp_path / "effects.txt"), hold=0.0)
        paid = [(await app.resume(o["token"], i)).state.log for i, o in enumerate(outcomes)]
        assert [[f"paid {i}"] for i in range(WORKERS)] == paid
        # one key, and no temporary key file left behind
        assert [".secret"] == [
            n for n in os.listdir(directory) if n.startswith((".secret", ".tmp"))
        ]
