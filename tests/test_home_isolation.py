"""The test suite never touches the user's real data folder (``~/.local/share/research-fsm``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from research_fsm._home import default_home

REPO = Path(__file__).resolve().parent.parent


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` with its size and modification time."""
    if not folder.exists():
        return {}
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in [folder, *folder.rglob("*")]
    }


def test_default_home_is_the_suites_temporary_folder() -> None:
    """default_home() during the tests lies in the run's temporary folder, not the real one."""
    base = Path(os.environ["RESEARCH_FSM_TEST_HOME"])
    real = Path(os.environ["RESEARCH_FSM_REAL_HOME"])
    assert default_home().is_relative_to(base)
    assert not default_home().is_relative_to(real)
    assert Path(os.environ["XDG_DATA_HOME"]).is_relative_to(base)


def test_deep_research_from_a_subprocess_leaves_the_real_folder_untouched(tmp_path: Path) -> None:
    """A deep-research run with the inherited environment writes its session and index under the suite's folder; the real folder is unchanged."""
    real = Path(os.environ["RESEARCH_FSM_REAL_HOME"])
    before = _snapshot(real)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOG_LEVEL": "WARNING"}
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY"):
        env.pop(key, None)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text(
        "# Caching\n\nThe cache keeps entries for ten minutes before they expire.\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "research_fsm",
            "deep",
            "How long does the cache keep entries?",
            "--docs",
            str(docs),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    home = Path(env["RESEARCH_FSM_HOME"])
    assert any(home.rglob("*")), "the run wrote nothing under the suite's home"
    assert _snapshot(real) == before
