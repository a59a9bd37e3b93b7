"""Indexing progress where people see it: ``research-fsm deep --progress`` draws a bar on
stderr (never when stderr is not a terminal and it was not asked for), deep research
streams ``indexing`` steps before its stages, and the web page gets them as progress."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import clirun

from research_fsm import ResearchAssistant
from research_fsm.deep import DeepProgress
from research_fsm.documents import IndexProgress
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.web._events import deep_events

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"
TOPIC = "Spring Boot 2 to 3 migration"


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``research-fsm`` offline, in this process, stderr a pipe (not a terminal)."""
    return clirun.run_cli(*args, env=clirun.cli_env(home))


def test_the_cli_draws_the_bar_only_when_asked_off_a_terminal(tmp_path: Path) -> None:
    notes = shutil.copytree(NOTES, tmp_path / "notes")
    files = len([p for p in notes.rglob("*") if p.is_file()])
    quiet = run_cli(tmp_path / "home", "deep", TOPIC, "--docs", str(notes))
    assert 0 == quiet.returncode, quiet.stderr
    assert "indexing" not in quiet.stderr
    shown = run_cli(tmp_path / "home2", "deep", TOPIC, "--docs", str(notes), "--progress")
    assert 0 == shown.returncode, shown.stderr
    # (text mode reads the bar's carriage returns as line ends)
    (last,) = [line for line in shown.stderr.splitlines() if "done in" in line]
    assert last.startswith(f"  indexing [{'#' * 24}] {files}/{files} files")
    assert "MB/s  done in" in last
    assert "  indexing [" + "." * 24 + "] 0/" in shown.stderr  # it started from nothing


async def test_deep_research_streams_indexing_before_its_stages(tmp_path: Path) -> None:
    notes = shutil.copytree(NOTES, tmp_path / "notes")
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    try:
        events = [e async for e in assistant.stream_deep_research(TOPIC, docs=notes)]
    finally:
        await assistant.aclose()
    stages = [e.stage for e in events if isinstance(e, DeepProgress)]
    indexing = [e for e in events if isinstance(e, DeepProgress) and e.stage == "indexing"]
    assert stages[: len(indexing)] == ["indexing"] * len(indexing)
    assert indexing[-1].finished and indexing[-1].indexing is not None
    assert indexing[-1].indexing.files_done == indexing[-1].indexing.files_total > 0


def test_the_web_page_gets_indexing_as_one_updated_step() -> None:
    step = IndexProgress(
        files_done=120,
        files_total=530,
        bytes_done=3 * 1_048_576,
        bytes_total=13 * 1_048_576,
        read=120,
        seconds=1.0,
    )
    started = DeepProgress("indexing", None, False, step, message="Indexing the documents")
    (event,) = deep_events(started)
    name, data = event.decode().split("\n")[:2]
    payload = json.loads(data.removeprefix("data: "))
    assert "event: progress" == name
    assert "Indexing the documents: 120/530 files, about 3 s left" == payload["message"]
    assert {"files_done": 120, "files_total": 530, "mb_per_s": 3.0, "eta_s": 3.3} == payload[
        "indexing"
    ]


async def test_identifiers_reach_the_report_untouched(tmp_path: Path) -> None:
    """``__init__`` and ``snake_case`` in a Markdown file stay so in the report's claims."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "clients.md").write_text(
        "# Clients\n\n"
        "Override `Client.__init__()` to configure the client, or call __init__ again.\n\n"
        "The configure_client helper sets the base URL of every client.\n",
        encoding="utf-8",
    )
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    try:
        report = await assistant.deep_research("configure the client", docs=notes)
    finally:
        await assistant.aclose()
    claims = " ".join([report.summary, *report.key_points, *report.steps, *report.caveats])
    assert "Client.__init__()" in claims and "call __init__ again" in claims
    assert "configure_client" in claims
