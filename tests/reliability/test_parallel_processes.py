"""Parallel branches across real processes: durable per branch, suspended per branch.

Children (``_procs/parallel_child.py``) run one command each on a
``JsonFileCheckpointStore(durability="fsync")``: a fan-out SIGKILLed while two of its
branches are still working, then continued with ``run(None)`` by a new process; a
branch that fails after its siblings finished, then recovered by a new process; two
suspended branches resumed in reverse order by two processes; racing resumes of one
branch token; a run cancelled mid fan-out whose thread a new process then takes.
Node code records every side effect in a file (``<what> <branch> <pid>``), so the
tests count exactly which process ran what, and how often. Each test runs with each
kind of file lease (``lock_kind``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from research_fsm.engine import StaleResumeToken, StateSnapshot
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import fs as _fs

from . import disk

pytestmark = pytest.mark.usefixtures("lock_kind")  # each test with each kind of lease

PROCS = Path(__file__).parent / "_procs"
REPO = Path(__file__).resolve().parents[2]
LOSERS = {"ThreadBusy", "StaleResumeToken"}
"""The documented errors of a resume that lost the race."""
DEADLINE = 20.0
"""Seconds any wait of these tests may take before it fails (nothing hangs)."""


def load_proc(name: str) -> ModuleType:
    """Import a ``_procs`` program as a module (it is also run as a script)."""
    spec = importlib.util.spec_from_file_location(f"_reliability_{name}", PROCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


child = load_proc("parallel_child")


class Files:
    """One test's store folder, effects file and gate file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.store = root / "store"
        self.effects = root / "effects.txt"
        self.gate = root / "gate"

    def command(self, graph: str, op: str, **extra: Any) -> dict[str, Any]:
        return {
            "graph": graph,
            "op": op,
            "store": str(self.store),
            "effects": str(self.effects),
            "gate": str(self.gate),
            **extra,
        }

    def lines(self) -> list[tuple[str, str, int]]:
        """Every side effect so far: (what, branch, pid)."""
        if not self.effects.exists():
            return []
        found = []
        for line in self.effects.read_text().splitlines():
            what, branch, pid = line.split(" ")
            found.append((what, branch, int(pid)))
        return found

    def counts(self, pid: int | None = None) -> Counter[str]:
        """How often each side effect happened (in process ``pid``, or in all)."""
        return Counter(
            f"{what} {branch}" for what, branch, p in self.lines() if pid is None or p == pid
        )


def spawn(
    command: dict[str, Any], errors: Path, script: str = "parallel_child.py"
) -> subprocess.Popen[str]:
    """Start the child ``script`` of ``_procs`` on ``command`` (stderr into ``errors``)."""
    with errors.open("w") as stderr:
        return subprocess.Popen(
            [
                sys.executable,
                str(PROCS / script),
                json.dumps({**command, "range_locks": _fs.RANGE_LOCKS}),
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )


def outcome(
    proc: subprocess.Popen[str], errors: Path, deadline: float = DEADLINE
) -> dict[str, Any]:
    """The child's one JSON line, once it exited on its own."""
    try:
        out, _ = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"child hung: {errors.read_text()}") from None
    assert 0 == proc.returncode, errors.read_text()
    result: dict[str, Any] = json.loads(out)
    return result


def run_child(files: Files, command: dict[str, Any], name: str) -> dict[str, Any]:
    """Run one child to its end and return its outcome."""
    errors = files.root / f"err-{name}.txt"
    return outcome(spawn(command, errors), errors)


async def poll(
    check: Callable[[], Awaitable[Any]], what: str, proc: subprocess.Popen[str] | None = None
) -> Any:
    """Await ``check()`` until it returns something truthy (within DEADLINE)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        found = await check()
        if found:
            return found
        assert proc is None or proc.poll() is None, f"child exited while waiting for {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.01)


def branch_table(snapshot: StateSnapshot[Any] | None) -> dict[str, tuple[str, str | None]]:
    """A snapshot's fan-out: branch id -> (status, next node)."""
    assert snapshot is not None
    return {b.id: (b.status, b.node) for b in snapshot.branches}


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


SPECIALISTS_LOG = ["researcher", "financial", "market", "product", "product_review", "news"]
"""The specialists graph's merged log: the branches' updates in declared order."""


@pytest.mark.slow
async def test_sigkill_mid_fan_out_then_run_none_in_a_new_process_runs_only_unfinished(
    tmp_path: Path,
) -> None:
    """A process SIGKILLed while two of four branches work (their siblings checkpointed) is continued by a new process with run(None): finished branch nodes never run twice, the unfinished ones run again, the join runs once and merges in declared order."""
    files = Files(tmp_path)
    errors = tmp_path / "err-killed.txt"
    proc = spawn(files.command("specialists", "run", thread="t"), errors)
    try:
        # a reader of its own over the same folder sees the fast branches' checkpoints
        app = child.specialists_app(JsonFileCheckpointStore(files.store))
        waiting = {
            "financial[0]": ("done", None),
            "market[1]": ("pending", "market"),
            "product[2]": ("pending", "product_review"),
            "news[3]": ("done", None),
        }

        async def fast_branches_saved() -> bool:
            snapshot = await app.get_state("t")
            return snapshot is not None and waiting == branch_table(snapshot)

        await poll(fast_branches_saved, "the fast branches' checkpoints", proc)
        started = {"market market[1]", "product_review product[2]"}
        await poll(lambda: asyncio.sleep(0, started <= set(files.counts())), "slow nodes", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
    assert -signal.SIGKILL == proc.returncode, errors.read_text()
    before = Counter(
        {
            "researcher -": 1,
            "financial financial[0]": 1,
            "market market[1]": 1,
            "product product[2]": 1,
            "product_review product[2]": 1,
            "news news[3]": 1,
        }
    )
    assert before == files.counts()

    files.gate.touch()  # the slow nodes go through this time
    result = run_child(files, files.command("specialists", "continue", thread="t"), "continue")
    assert ("ok", "completed") == (result["outcome"], result["status"]), result
    assert SPECIALISTS_LOG == result["log"]
    assert ",".join(SPECIALISTS_LOG) == result["summary"]
    again = Counter(
        {
            "market market[1]": 1,
            "market-finally market[1]": 1,
            "product_review product[2]": 1,
            "product_review-finally product[2]": 1,
            "synthesizer -": 1,
        }
    )
    assert again == files.counts(result["pid"])
    assert before + again == files.counts()
    snapshot = await child.specialists_app(JsonFileCheckpointStore(files.store)).get_state("t")
    assert snapshot is not None
    assert ("completed", ()) == (snapshot.status, snapshot.branches)
    assert SPECIALISTS_LOG == snapshot.state.log
    await assert_history_whole(files.store, "t")


KILLS = 6
"""SIGKILLs of the random-kill test."""
MAX_DELAY = 0.08
"""Kills land uniformly in the first this-many seconds of a child's work."""


def durable(snapshot: StateSnapshot[Any] | None, what: str, branch: str) -> bool:
    """Whether the update of the node run recorded as ``what`` in ``branch`` is saved."""
    if snapshot is None:
        return False
    state = snapshot.state
    if what.startswith("analyse:"):
        done = ("done", None) == branch_table(snapshot).get(branch)
        return done or f"a{what.split(':')[1]}" in state.log
    return {"plan": "plan" in state.log, "synthesizer": bool(state.summary)}[what]


@pytest.mark.slow
async def test_sigkills_at_random_moments_of_a_send_map_never_rerun_a_saved_node(
    tmp_path: Path,
) -> None:
    """Children running a Send map (12 branches, 3 at a time) SIGKILLed at random moments, each continued by the next: a node whose update was saved before a kill never runs again, one that was not runs again, and each map ends with every branch merged once in send order."""
    rng = random.Random("parallel-kills")
    kills = mid_fan_out = finished = 0
    number = 0
    files = Files(tmp_path / "t0")
    owed: Counter[str] = Counter()  # runs a kill voided: each must happen once more
    for cycle in itertools.count():
        assert cycle < 4 * KILLS, "the maps never finished"
        go, errors = tmp_path / f"go-{cycle}", tmp_path / f"err-{cycle}.txt"
        proc = spawn(files.command("mapper", "advance", thread="t", go=str(go)), errors)
        assert proc.stdout is not None
        assert "ready" == proc.stdout.readline().strip(), errors.read_text()
        go.touch()
        if kills < KILLS:
            time.sleep(rng.uniform(0, MAX_DELAY))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            if proc.returncode == -signal.SIGKILL:
                proc.stdout.close()
                kills += 1
                snapshot = await child.mapper_app(JsonFileCheckpointStore(files.store)).get_state(
                    "t"
                )
                table = branch_table(snapshot) if snapshot is not None else {}
                mid_fan_out += 0 < sum(s == ("done", None) for s in table.values()) < len(table)
                for what, branch, pid in files.lines():
                    if pid == proc.pid and not durable(snapshot, what, branch):
                        owed[f"{what} {branch}"] += 1
                continue
        result = outcome(proc, errors)  # it finished this map
        assert ("ok", "completed") == (result["outcome"], result["status"]), result
        log = ["plan"] + [f"a{i}" for i in range(child.ITEMS)]
        assert (log, ",".join(log)) == (result["log"], result["summary"])
        once = Counter(["plan -", "synthesizer -"])
        once.update(f"analyse:{i} analyse[{i}]" for i in range(child.ITEMS))
        assert once + owed == files.counts()
        await assert_history_whole(files.store, "t")
        finished += 1
        if kills == KILLS:
            break
        number += 1
        files, owed = Files(tmp_path / f"t{number}"), Counter()
    print(f"kills {kills}, mid fan-out {mid_fan_out}, maps {finished}")
    assert mid_fan_out > 0


FAILING_LOG = ["researcher", "financial", "market", "product", "news"]


@pytest.mark.slow
async def test_failed_branch_recovered_by_a_new_process_reruns_only_unfinished_branches(
    tmp_path: Path,
) -> None:
    """A branch failing (retries exhausted, no on_error) after its siblings finished raises NodeFailed with them checkpointed and the running sibling cancelled (finally ran); run(None) in a new process, once fixed, runs only the failed and the cancelled branch again, and the join once."""
    files = Files(tmp_path)
    failed = run_child(files, files.command("failing", "run", thread="t", broken=True), "fail")
    assert "NodeFailed" == failed["outcome"], failed
    first = Counter(
        {
            "researcher -": 1,
            "financial financial[0]": 1,
            "market market[1]": 2,
            "product product[2]": 1,
            "product-finally product[2]": 1,
            "news news[3]": 1,
        }
    )
    assert first == files.counts()
    snapshot = await child.failing_app(JsonFileCheckpointStore(files.store)).get_state("t")
    assert snapshot is not None and snapshot.error is not None
    assert ("failed", "market", "market[1]") == (
        snapshot.status,
        snapshot.error.node,
        snapshot.error.branch,
    )
    assert {
        "financial[0]": ("done", None),
        "market[1]": ("failed", "market"),
        "product[2]": ("pending", "product"),
        "news[3]": ("done", None),
    } == branch_table(snapshot)

    fixed = run_child(files, files.command("failing", "continue", thread="t"), "recover")
    assert ("ok", "completed") == (fixed["outcome"], fixed["status"]), fixed
    assert FAILING_LOG == fixed["log"]
    assert ",".join(FAILING_LOG) == fixed["summary"]
    again = Counter(
        {
            "market market[1]": 1,
            "product product[2]": 1,
            "product-finally product[2]": 1,
            "synthesizer -": 1,
        }
    )
    assert again == files.counts(fixed["pid"])
    assert first + again == files.counts()
    await assert_history_whole(files.store, "t")


@pytest.mark.slow
async def test_two_suspended_branches_resumed_in_reverse_order_by_two_processes(
    tmp_path: Path,
) -> None:
    """Two branches suspended by one process are resumed in reverse order by two other processes: the join runs once, in the process of the last resume, with both answers; either token used again is stale."""
    files = Files(tmp_path)
    tokens_file = tmp_path / "tokens.json"
    command = files.command("askers", "run", thread="t", tokens=str(tokens_file))
    asked = run_child(files, command, "ask")
    assert ("ok", "suspended") == (asked["outcome"], asked["status"]), asked
    assert ["market[1]", "product[2]"] == asked["branches"]
    market_token, product_token = json.loads(tokens_file.read_text())

    second = run_child(
        files, files.command("askers", "resume", token=product_token, value="P"), "product"
    )
    assert ("ok", "suspended", ["market[1]"]) == (
        second["outcome"],
        second["status"],
        second["branches"],
    )
    assert "synthesizer" not in second["path"]
    last = run_child(
        files, files.command("askers", "resume", token=market_token, value="M"), "market"
    )
    assert ("ok", "completed") == (last["outcome"], last["status"]), last
    log = ["researcher", "financial", "market=M", "product=P"]
    assert (log, ",".join(log)) == (last["log"], last["summary"])
    assert [
        ("researcher", "-", asked["pid"]),
        ("financial", "financial[0]", asked["pid"]),
        ("ask-market", "market[1]", asked["pid"]),
        ("ask-product", "product[2]", asked["pid"]),
        ("resume-product:P", "product[2]", second["pid"]),
        ("resume-market:M", "market[1]", last["pid"]),
        ("synthesizer", "-", last["pid"]),
    ] == sorted(files.lines()[:4], key=lambda e: e[1]) + files.lines()[4:]
    for name, token in (("market", market_token), ("product", product_token)):
        command = files.command("askers", "resume", token=token, value="again")
        stale = run_child(files, command, f"stale-{name}")
        assert "StaleResumeToken" == stale["outcome"], stale
    app = child.askers_app(JsonFileCheckpointStore(files.store))
    with pytest.raises(StaleResumeToken):
        await app.resume(market_token, "again")
    assert 7 == len(files.lines())  # nothing ran for the stale tokens
    await assert_history_whole(files.store, "t")


@pytest.mark.slow
async def test_racing_resumes_of_one_branch_token_run_its_resume_once(tmp_path: Path) -> None:
    """Three processes resuming one branch's token at once (or staggered): one runs the branch's resume code, the others get ThreadBusy or StaleResumeToken; the other branch still resumes and the join runs once."""
    seen: set[str] = set()
    rounds = [(0.3, (0.0, 0.0, 0.0)), (0.0, (0.0, 0.0, 0.0)), (0.0, (0.0, 0.5, 0.5))]
    for number, (hold, after) in enumerate(rounds):
        files = Files(tmp_path / f"round-{number}")
        child.SETTINGS.update(effects=str(files.effects), hold=0.0)
        app = child.askers_app(JsonFileCheckpointStore(files.store))
        asked = await app.run({}, thread_id="t")
        assert ["market[1]", "product[2]"] == [s.branch for s in asked.suspensions]
        token = str(asked.suspensions[0].token)
        go = files.root / "go"
        procs = []
        for i, delay in enumerate(after):
            command = files.command(
                "askers", "resume", token=token, value=f"w{i}", go=str(go), hold=hold, after=delay
            )
            procs.append((spawn(command, files.root / f"err-{i}.txt"), files.root / f"err-{i}.txt"))
        for proc, errors in procs:
            assert proc.stdout is not None
            assert "ready" == proc.stdout.readline().strip(), errors.read_text()
        go.touch()
        outcomes = [outcome(proc, errors) for proc, errors in procs]
        winners = [i for i, o in enumerate(outcomes) if o["outcome"] == "ok"]
        assert 1 == len(winners), outcomes
        (winner,) = winners
        losers = {o["outcome"] for o in outcomes if o["outcome"] != "ok"}
        assert losers <= LOSERS, outcomes
        seen |= losers
        assert ("suspended", ["product[2]"]) == (
            outcomes[winner]["status"],
            outcomes[winner]["branches"],
        )
        resumes = [e for e in files.lines() if e[0].startswith("resume-")]
        assert [(f"resume-market:w{winner}", "market[1]", outcomes[winner]["pid"])] == resumes
        done = await app.resume(asked.suspensions[1].token, "P")
        assert "completed" == done.status
        assert ["researcher", "financial", f"market=w{winner}", "product=P"] == done.state.log
        assert 1 == files.counts()["synthesizer -"]
        await assert_history_whole(files.store, "t")
    assert LOSERS == seen  # busy while the winner holds the thread, stale once it is done


@pytest.mark.slow
async def test_cancelling_a_run_mid_fan_out_frees_the_thread_for_another_process(
    tmp_path: Path,
) -> None:
    """Cancelling a run while branches are in flight runs their finally blocks and releases the thread at once: a new process (this one still alive) takes it with run(None) and runs only the unfinished branches."""
    files = Files(tmp_path)
    child.SETTINGS.update(effects=str(files.effects), gate=str(files.gate), hold=0.0)
    app = child.specialists_app(JsonFileCheckpointStore(files.store, durability="fsync"))
    task = asyncio.ensure_future(app.run({}, thread_id="t"))
    reader = child.specialists_app(JsonFileCheckpointStore(files.store))
    try:
        waiting = {
            "financial[0]": ("done", None),
            "market[1]": ("pending", "market"),
            "product[2]": ("pending", "product_review"),
            "news[3]": ("done", None),
        }

        async def fast_branches_saved() -> bool:
            assert not task.done(), task
            snapshot = await reader.get_state("t")
            return snapshot is not None and waiting == branch_table(snapshot)

        await poll(fast_branches_saved, "the fast branches' checkpoints")
        started = {"market market[1]", "product_review product[2]"}
        await poll(lambda: asyncio.sleep(0, started <= set(files.counts())), "slow nodes")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, DEADLINE)
    before = Counter(
        {
            "researcher -": 1,
            "financial financial[0]": 1,
            "market market[1]": 1,
            "market-finally market[1]": 1,
            "product product[2]": 1,
            "product_review product[2]": 1,
            "product_review-finally product[2]": 1,
            "news news[3]": 1,
        }
    )
    assert before == files.counts()
    snapshot = await reader.get_state("t")
    assert snapshot is not None and "completed" != snapshot.status

    files.gate.touch()
    result = run_child(files, files.command("specialists", "continue", thread="t"), "continue")
    assert ("ok", "completed") == (result["outcome"], result["status"]), result
    assert SPECIALISTS_LOG == result["log"]
    again = Counter(
        {
            "market market[1]": 1,
            "market-finally market[1]": 1,
            "product_review product[2]": 1,
            "product_review-finally product[2]": 1,
            "synthesizer -": 1,
        }
    )
    assert again == files.counts(result["pid"])
    assert before + again == files.counts()
    await assert_history_whole(files.store, "t")
