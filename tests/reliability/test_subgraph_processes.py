"""Subgraphs across real processes, on a ``JsonFileCheckpointStore(durability="fsync")``
(with each kind of lease) and on PostgreSQL:
a process SIGKILLed inside the child (mid-step, after a resume, between the child's
last checkpoint and the parent's) is continued by a new process, and no child step
that finished runs again; processes racing to resume one child's token: one wins.

The child program is ``_procs/subgraph_child.py``; node code records each side
effect (fsynced) in a file, so a test counts what ran in which process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from research_fsm.stores.file import fs as _fs

pytestmark = pytest.mark.slow

PROCS = Path(__file__).parent / "_procs"
REPO = Path(__file__).resolve().parents[2]
DEADLINE = 20.0
"""Seconds any wait of these tests may take before it fails (nothing hangs)."""
LOSERS = {"ThreadBusy", "StaleResumeToken"}


def load_proc(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_reliability_{name}", PROCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


child = load_proc("subgraph_child")


@pytest.fixture(params=["file-range", "file-flock", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Where the children keep checkpoints: the file store with each kind of lease, or
    a schema of its own on the session's PostgreSQL server."""
    kind: str = request.param
    if kind == "postgres":
        pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
        server = request.getfixturevalue("postgres_server")
        return {"dsn": server.dsn, "schema": f"sub_{secrets.token_hex(4)}"}
    if kind == "file-range" and not _fs.OFD_LOCKS:
        pytest.skip("this system has no open-file-description locks")
    monkeypatch.setattr(_fs, "RANGE_LOCKS", kind == "file-range")
    return {}


class Files:
    def __init__(self, root: Path, backend: dict[str, Any]) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.store = root / "store"
        self.effects = root / "effects.txt"
        self.gate = root / "gate"
        self.backend = dict(backend)
        if "schema" in self.backend:  # each round a schema of its own
            self.backend["schema"] += f"_{secrets.token_hex(2)}"

    def command(self, op: str, **extra: Any) -> dict[str, Any]:
        return {
            "op": op,
            "store": str(self.store),
            "effects": str(self.effects),
            "gate": str(self.gate),
            "range_locks": _fs.RANGE_LOCKS,
            **self.backend,
            **extra,
        }

    def counts(self, pid: int | None = None) -> Counter[str]:
        lines = self.effects.read_text().splitlines() if self.effects.exists() else []
        return Counter(
            what
            for what, p in (line.rsplit(" ", 1) for line in lines)
            if pid is None or int(p) == pid
        )


def spawn(command: dict[str, Any], errors: Path) -> subprocess.Popen[str]:
    with errors.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(PROCS / "subgraph_child.py"), json.dumps(command)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )


def finish(proc: subprocess.Popen[str], errors: Path) -> dict[str, Any]:
    try:
        out, _ = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"child hung: {errors.read_text()}") from None
    assert 0 == proc.returncode, errors.read_text()
    result: dict[str, Any] = json.loads(out)
    return result


def run_child(files: Files, command: dict[str, Any], name: str) -> dict[str, Any]:
    errors = files.root / f"err-{name}.txt"
    return finish(spawn(command, errors), errors)


def kill_when(files: Files, command: dict[str, Any], effect: str) -> None:
    """Start a child on ``command`` and SIGKILL it once it recorded ``effect``."""
    errors = files.root / "err-killed.txt"
    proc = spawn(command, errors)
    deadline = time.monotonic() + DEADLINE
    try:
        while effect not in files.counts():
            assert proc.poll() is None, f"child exited before {effect}: {errors.read_text()}"
            assert time.monotonic() < deadline, f"gave up waiting for {effect}"
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
    assert -signal.SIGKILL == proc.returncode, errors.read_text()


def ask_and_resume_to_end(files: Files, first: dict[str, Any]) -> dict[str, Any]:
    """Resume the suspension ``first`` reported with "yes" (in a new process)."""
    assert ("ok", "suspended") == (first["outcome"], first["status"]), first
    done = run_child(files, files.command("resume", token=first["token"], value="yes"), "resume")
    assert ("ok", "completed") == (done["outcome"], done["status"]), done
    return done


NOTES = ["plan", "gather", "slow", "answer=yes", "analyse", "write"]


async def test_sigkill_mid_child_step_then_run_none_goes_on_inside_the_child(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """Killed while the child's ``slow`` works (``gather`` saved): ``run(None)`` in a new
    process runs ``slow`` again and nothing before it: not the parent's ``plan``, not
    the child's ``gather``."""
    files = Files(tmp_path, backend)
    kill_when(files, files.command("run", thread="t", slow_gate=True), "slow")
    before = files.counts()
    assert before == Counter({"plan": 1, "plan-done": 1, "gather": 1, "gather-done": 1, "slow": 1})
    files.gate.touch()
    first = run_child(files, files.command("continue", thread="t"), "continue")
    again = files.counts(first["pid"])
    assert again == Counter({"slow": 1, "slow-done": 1, "ask": 1})
    done = ask_and_resume_to_end(files, first)
    assert NOTES == done["notes"]
    total = files.counts()
    assert {k for k, n in total.items() if n > 1} == {"slow"}  # the killed step alone


async def test_sigkill_in_the_child_after_a_resume_goes_on_with_the_answer_given(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """Killed inside the child after its suspended node took the answer (``analyse``
    runs): the parent is still suspended, and resuming its token again in a new
    process goes on inside the child from ``analyse``; the answer is not taken again
    (the second value is not used) and ``ask`` never runs again."""
    files = Files(tmp_path, backend)
    first = run_child(files, files.command("run", thread="t"), "run")
    assert first["status"] == "suspended"
    kill_when(
        files,
        files.command("resume", token=first["token"], value="first", analyse_gate=True),
        "analyse",
    )
    files.gate.touch()
    done = run_child(files, files.command("resume", token=first["token"], value="second"), "again")
    assert ("ok", "completed") == (done["outcome"], done["status"]), done
    assert ["plan", "gather", "slow", "answer=first", "analyse", "write"] == done["notes"]
    assert files.counts(done["pid"]) == Counter(
        {"analyse": 1, "analyse-done": 1, "output": 1, "write": 1, "write-done": 1}
    )
    assert files.counts()["resume:first"] == 1 and files.counts()["ask"] == 1
    assert files.counts()["resume:second"] == 0


async def test_sigkill_after_the_child_finished_before_the_parent_saved(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """Killed between the child's last checkpoint and the parent's (in ``output``):
    the next process takes the finished child's state; no child node runs again."""
    files = Files(tmp_path, backend)
    first = run_child(files, files.command("run", thread="t"), "run")
    kill_when(
        files,
        files.command("resume", token=first["token"], value="yes", output_gate=True),
        "output",
    )
    files.gate.touch()
    done = run_child(files, files.command("resume", token=first["token"], value="no"), "again")
    assert ("ok", "completed") == (done["outcome"], done["status"]), done
    assert NOTES == done["notes"]
    assert files.counts(done["pid"]) == Counter({"output": 1, "write": 1, "write-done": 1})
    total = files.counts()
    assert {k for k, n in total.items() if n > 1} == {"output"}  # the mapping, no node


async def test_racing_resumes_of_a_child_s_token_run_its_resume_once(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """Three processes resume the token of a suspension inside the child at once (or
    staggered): one runs the child's resume code and finishes both runs; the others
    get ThreadBusy or StaleResumeToken."""
    seen: set[str] = set()
    for number, (hold, after) in enumerate([(0.3, (0.0, 0.0, 0.0)), (0.0, (0.0, 0.5, 0.5))]):
        files = Files(tmp_path / f"round-{number}", backend)
        first = run_child(files, files.command("run", thread="t"), "run")
        go = files.root / "go"
        procs = []
        for i, delay in enumerate(after):
            command = files.command(
                "resume", token=first["token"], value=f"w{i}", go=str(go), hold=hold, after=delay
            )
            errors = files.root / f"err-{i}.txt"
            procs.append((spawn(command, errors), errors))
        for proc, errors in procs:
            assert proc.stdout is not None
            assert "ready" == proc.stdout.readline().strip(), errors.read_text()
        go.touch()
        outcomes = [finish(proc, errors) for proc, errors in procs]
        winners = [i for i, o in enumerate(outcomes) if o["outcome"] == "ok"]
        assert 1 == len(winners), outcomes
        seen |= {o["outcome"] for o in outcomes if o["outcome"] != "ok"}
        resumes = [k for k in files.counts() if k.startswith("resume:")]
        assert [f"resume:w{winners[0]}"] == resumes
        assert 1 == files.counts()["write"]
        store = child.open_store(files.command("check"))
        try:
            state = await child.app(store).get_state("t")
        finally:
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()
        assert state is not None and state.status == "completed"
    assert seen <= LOSERS and seen
