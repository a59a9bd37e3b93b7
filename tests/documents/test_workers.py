"""The extraction workers: a worker that crashes, hangs or answers garbage costs only
the file it was on (skipped with the reason), and the files after it are extracted by a
new worker. The failing worker is a test double (``_procs/odd_worker.py``) speaking the
real protocol; the files are real and read by the worker."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from research_fsm.documents._work import Work, run_job
from research_fsm.documents._workers import Workers

ODD_WORKER = (sys.executable, str(Path(__file__).parent / "_procs" / "odd_worker.py"))


def extract_all(paths: list[Path], *, timeout: float = 60.0, count: int = 1) -> dict[str, Work]:
    """Every file through ``count`` odd workers, by name."""
    workers = Workers(count, timeout=timeout, command=ODD_WORKER)
    try:
        for path in paths:
            workers.submit(
                (path.name, (str(path), None, None, "markdown", path.name)), lambda: None
            )
    finally:
        workers.close()
        workers.join()
    results: dict[str, Work] = {}
    while not workers.results.empty():
        key, work = workers.results.get()
        results[str(key)] = work
    return results


def notes(folder: Path, *names: str) -> list[Path]:
    """One Markdown note per name, each naming its own word."""
    folder.mkdir(exist_ok=True)
    paths = []
    for name in names:
        path = folder / name
        path.write_text(f"# {path.stem}\n\nThe word of {path.stem} is w{path.stem}.\n", "utf-8")
        paths.append(path)
    return paths


def test_a_crashed_worker_skips_only_its_file(tmp_path: Path) -> None:
    """The files before and after a crash are extracted; the crash's file has the reason."""
    paths = notes(tmp_path / "docs", "a.md", "crash.md", "b.md")
    results = extract_all(paths)
    assert ("", "extractor crashed (its process died)") == results["crash.md"]
    for name in ("a.md", "b.md"):
        digest, prepared = results[name]
        assert (digest, prepared) == run_job(
            (str(tmp_path / "docs" / name), None, None, "markdown", name)
        )
        assert not isinstance(prepared, str)


def test_a_hanging_worker_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    """A worker on one file past the timeout is killed and replaced; the rest go on."""
    paths = notes(tmp_path / "docs", "hang.md", "after.md")
    started = time.monotonic()
    results = extract_all(paths, timeout=1.0)
    assert time.monotonic() - started < 30  # not the hour the worker sleeps
    assert ("", "extraction took longer than 1 s") == results["hang.md"]
    assert "after" in str(results["after.md"][1])


def test_an_unreadable_answer_skips_the_file_and_replaces_the_worker(tmp_path: Path) -> None:
    """Bytes that are no pickle name the failure; the next file gets a fresh worker."""
    paths = notes(tmp_path / "docs", "garbage.md", "next.md")
    results = extract_all(paths)
    expected = ("", "extractor failed (its answer was unreadable: UnpicklingError)")
    assert expected == results["garbage.md"]
    assert not isinstance(results["next.md"][1], str)


def test_a_file_that_cannot_be_read_is_skipped_by_the_worker(tmp_path: Path) -> None:
    """A file gone since discovery: the worker says it cannot read it."""
    (missing,) = notes(tmp_path / "docs", "gone.md")
    missing.unlink()
    digest, reason = extract_all([missing])["gone.md"]
    assert "" == digest
    assert str(reason).startswith("cannot read it (")


def test_two_workers_share_the_files_and_answer_each_once(tmp_path: Path) -> None:
    """With two workers, every file is answered exactly once, crash or not."""
    names = [f"n{n}.md" for n in range(12)] + ["crash.md"]
    results = extract_all(notes(tmp_path / "docs", *names), count=2)
    assert sorted(names) == sorted(results)
    assert 12 == sum(not isinstance(prepared, str) for _, prepared in results.values())
