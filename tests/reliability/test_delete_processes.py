"""``delete_thread`` of a parent with a subgraph across real processes (issue 36, bug
12), on the file store (each kind of lease) and PostgreSQL: a process SIGKILLed
between deleting the child thread and the parent leaves a parent whose resume runs
nothing (``ChildThreadMissing``), and a delete racing a resume in another process is
``ThreadBusy`` while the resume finishes with its answer.

The child program is ``_procs/subgraph_child.py`` (the same graphs as
``test_subgraph_processes``); node code records each side effect in a file.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reliability.test_subgraph_processes import (  # the fixtures and helpers of the subgraph races
    DEADLINE,
    Files,
    backend,
    finish,
    run_child,
    spawn,
)

pytestmark = pytest.mark.slow

__all__ = ["backend"]  # the fixture, imported for these tests


async def test_sigkill_between_the_child_s_delete_and_the_parent_s(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """Killed right after the child thread was deleted (the parent not yet): resuming
    the parent in a new process raises ``ChildThreadMissing``, runs no node and takes
    no answer; a new ``delete_thread`` finishes, and the token is then stale."""
    files = Files(tmp_path, backend)
    first = run_child(files, files.command("run", thread="t"), "run")
    assert ("ok", "suspended") == (first["outcome"], first["status"]), first
    errors = files.root / "err-delete.txt"
    proc = spawn(files.command("delete", thread="t", kill_after_deletes=1), errors)
    proc.communicate(timeout=DEADLINE)
    assert -9 == proc.returncode, errors.read_text()
    deleted = [what for what in files.counts() if what.startswith("deleted:")]
    assert len(deleted) == 1 and deleted[0].startswith("deleted:t.research.")
    before = files.counts()
    again = run_child(files, files.command("resume", token=first["token"], value="yes"), "resume")
    assert "ChildThreadMissing" == again["outcome"], again
    assert "research" in again["message"]
    assert files.counts() == before  # nothing ran: no gather, no ask, no answer taken
    done = run_child(files, files.command("delete", thread="t"), "delete")
    assert "ok" == done["outcome"], done
    late = run_child(files, files.command("resume", token=first["token"], value="yes"), "late")
    assert "StaleResumeToken" == late["outcome"], late


async def test_a_delete_racing_a_resume_in_another_process_is_busy(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    """One process resumes the parent (the child's `analyse`, after the answer, waits
    for a gate), another deletes the thread meanwhile: the delete is ``ThreadBusy`` and
    deletes nothing, the resume finishes with the answer given, each child step run once."""
    files = Files(tmp_path, backend)
    first = run_child(files, files.command("run", thread="t"), "run")
    assert first["status"] == "suspended", first
    errors = files.root / "err-resume.txt"
    command = files.command("resume", token=first["token"], value="yes", analyse_gate=True)
    resuming = spawn(command, errors)
    deadline = time.monotonic() + DEADLINE
    while "analyse" not in files.counts():
        assert resuming.poll() is None, errors.read_text()
        assert time.monotonic() < deadline, "the resume never reached the child"
        time.sleep(0.005)
    deleting = run_child(files, files.command("delete", thread="t"), "delete")
    assert "ThreadBusy" == deleting["outcome"], deleting
    files.gate.touch()
    done = finish(resuming, errors)
    assert ("ok", "completed") == (done["outcome"], done["status"]), done
    assert ["plan", "gather", "slow", "answer=yes", "analyse", "write"] == done["notes"]
    counts = files.counts()
    assert Counter({"gather": 1, "ask": 1, "resume:yes": 1}) == Counter(
        {k: counts[k] for k in ("gather", "ask", "resume:yes")}
    )
    finished = run_child(files, files.command("delete", thread="t"), "delete-after")
    assert "ok" == finished["outcome"], finished
