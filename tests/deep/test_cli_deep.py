"""``research-fsm deep`` and ``research-fsm sessions``: in-process, and resumed in a real
process."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import cli_env, run_cli, spawn_cli
from homes import seeded_home

from research_fsm import ResearchAssistant
from research_fsm.engine import NodeFailed
from research_fsm.stores import JsonFileCheckpointStore

from .llm import claude

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"
TOPIC = "Spring Boot 2 to 3 migration"


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``research-fsm`` offline with ``home`` (seeded) as ``RESEARCH_FSM_HOME``, in
    this process."""
    return run_cli(*args, env=cli_env(seeded_home(home)))


def spawn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The same as a real process."""
    return spawn_cli(*args, env=cli_env(seeded_home(home)))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A copy of the example notes (md, txt, html, Japanese md)."""
    return Path(shutil.copytree(NOTES, tmp_path / "notes"))


def test_deep_over_a_folder_prints_a_cited_summary(tmp_path: Path, notes: Path) -> None:
    """Offline over a folder: exit 0, a summary citing [S#], the report path, progress on stderr."""
    result = cli(tmp_path / "home", "deep", TOPIC, "--docs", str(notes))
    assert 0 == result.returncode, result.stderr
    assert "[S1]" in result.stdout
    assert "report.md" in result.stdout
    assert "[deep_analysis] (deep_analysis[0]) started" in result.stderr
    assert "Traceback" not in result.stderr


def test_deep_json_and_sessions(tmp_path: Path, notes: Path) -> None:
    """--json gives the report's fields; sources are files of the folder; sessions lists it."""
    result = cli(tmp_path / "home", "deep", TOPIC, "--docs", str(notes), "--json", "--lang", "ja")
    assert 0 == result.returncode, result.stderr
    data = json.loads(result.stdout)
    assert ("completed", "ja", "docs") == (data["status"], data["language"], data["mode"])
    on_disk = {p.name for p in notes.iterdir()}
    assert {s["locator"] for s in data["sources"]} <= on_disk
    assert data["verification"]["claims"] == data["verification"]["supported"] > 0
    listed = cli(tmp_path / "home", "sessions")
    assert data["session_id"] in listed.stdout
    assert "completed" in listed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("deep",), "say what to research"),
        (("deep", "   "), "the topic is empty"),
        (("deep", TOPIC), "deep research needs documents or a web search"),
        (("deep", TOPIC, "--docs", "/no/such/folder"), "does not exist"),
        (("deep", "--resume", "deep-unknown"), "no deep-research session `deep-unknown`"),
        (("deep", TOPIC, "--top", "0", "--docs", "."), "top_k must be an integer from 1 to 10"),
    ],
)
def test_bad_usage_exits_2_with_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    """Bad input: exit status 2 and one line naming the problem, no traceback."""
    result = cli(tmp_path / "home", *args)
    assert 2 == result.returncode, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


async def test_resume_a_crashed_session_in_a_new_process(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session that died in synthesis is finished by ``deep --resume ID`` in a new process."""
    home = tmp_path / "home"
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(home))
    store = JsonFileCheckpointStore(home / "threads", keep=50)
    assistant = ResearchAssistant(llm=claude([RuntimeError("killed")]), store=store)
    with pytest.raises(NodeFailed):
        await assistant.deep_research(TOPIC, docs=notes)
    await assistant.aclose()
    (session,) = [p.name for p in (home / "sessions").iterdir()]
    assert not (home / "sessions" / session / "report.md").exists()
    result = spawn(home, "deep", "--resume", session)
    assert 0 == result.returncode, result.stderr
    assert "[deep_analysis]" not in result.stderr
    assert (home / "sessions" / session / "report.md").exists()


def test_the_docs_excerpt_is_what_the_command_writes(tmp_path: Path, notes: Path) -> None:
    """Every line of the deep-research page's excerpt occurs in the report it came from."""
    page = Path(__file__).resolve().parents[2] / "docs" / "deep-research.md"
    excerpt = (
        page.read_text(encoding="utf-8")
        .split("An excerpt of `research-fsm deep", 1)[1]
        .split("```markdown\n", 1)[1]
    )
    lines = [ln for ln in excerpt.split("```", 1)[0].splitlines() if ln and not ln.startswith("|")]
    result = cli(tmp_path / "home", "deep", TOPIC, "--docs", str(notes), "--json")
    assert 0 == result.returncode, result.stderr
    report = Path(json.loads(result.stdout)["paths"][0]).read_text(encoding="utf-8")
    assert [] == [line for line in lines if line not in report]
