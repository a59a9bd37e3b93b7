"""A report's summary line says what its score measures; ``--out`` changes only the
folders it makes, and the check before the research proves the report can be written."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.reports import Quality, Report, ReportStoreError
from research_fsm.sources import DirectorySource

OFFLINE = [{"id": "S1", "url": "https://en.wikipedia.org/wiki/X", "dataset": "pytickersymbols"}]
FETCHED = [{"id": "S1", "url": "https://example.com/x", "retrieved_at": "2026-01-01T00:00:00Z"}]


def _report(quality: Quality | None, sources: list[dict[str, str]]) -> Report:
    return Report(
        status="completed",
        thread_id="report-0123456789",
        company="X",
        quality=quality,
        iterations=1,
        sources=list(sources),
    )


def test_the_summary_line_names_what_the_score_measures() -> None:
    """The rules' score reads as coverage (not accuracy), the LLM's and the combined one
    say who judged; sources the offline directory only cites are said to be unfetched."""
    rules = _report(Quality(score=100, method="rules"), OFFLINE).summary_line()
    assert rules.startswith(
        "X: coverage 100/100 (the fields the specialists look for, found and sourced; "
        "not an accuracy check), 1 iteration, 1 source (cited by the offline directory, "
        "not fetched), LLM 0 calls"
    )
    llm = _report(Quality(score=70, method="llm"), FETCHED).summary_line()
    assert llm.startswith("X: quality 70/100 (judged by the LLM), 1 iteration, 1 source, LLM")
    both = Quality(score=80, method="combined", rule_score=90, llm_score=70)
    assert (
        "quality 80/100 (the mean of the rules' coverage 90/100 and the LLM's judgement "
        "70/100)" in _report(both, FETCHED).summary_line()
    )
    assert "X: not scored," in _report(None, []).summary_line()
    assert "quality 100/100" not in rules


def _assistant() -> ResearchAssistant:
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_out_changes_only_the_folders_it_makes(tmp_path: Path) -> None:
    """``out`` an existing 0755 folder: it stays 0755 (never chmodded); the report folder
    in it and the missing folders of a deeper ``out`` are made 0700."""
    existing = tmp_path / "shared"
    existing.mkdir()
    existing.chmod(0o755)
    report = await _assistant().report("Siemens", out=existing)
    assert report.folder is not None and report.folder.parent == existing
    assert (0o755, 0o700) == (_mode(existing), _mode(report.folder))
    deeper = existing / "a" / "b"
    report = await _assistant().report("Siemens", out=deeper)
    assert (0o755, 0o700, 0o700) == (_mode(existing), _mode(existing / "a"), _mode(deeper))
    assert [] == [p.name for p in existing.rglob(".write-check-*")]  # the probes are gone


async def test_a_folder_that_may_not_be_chmodded_still_takes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder the user may write in but not chmod (another user's, like /tmp) takes the
    report: only the folders the report makes are chmodded."""
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    real_chmod = os.chmod

    def chmod(path: Any, mode: int, **kwargs: Any) -> None:
        if Path(path) == shared:
            raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        real_chmod(path, mode, **kwargs)

    monkeypatch.setattr(os, "chmod", chmod)
    report = await _assistant().report("Siemens", out=shared)
    assert report.folder is not None and (report.folder / "report.md").is_file()


async def test_the_check_fails_before_the_research_where_files_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a folder can be made but no file written in it, the run stops before any
    agent starts, naming the folder, instead of after the whole research."""
    out = tmp_path / "no-files"
    out.mkdir()
    real_open = os.open

    def no_files_in_out(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).parent.parent == out and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_files_in_out)
    events: list[object] = []
    with pytest.raises(ReportStoreError, match=f"cannot save reports in {out}: "):
        async for event in _assistant().stream_report("Siemens", out=out):
            events.append(event)
    assert [] == events
    assert [] == list(out.iterdir())  # the probe folder was removed
