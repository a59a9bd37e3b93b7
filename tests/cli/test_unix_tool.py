"""The CLI as a Unix tool: Ctrl-C, a reader that stops early, a busy port, the files a
report writes, an output folder that cannot take a report. Each ends in one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli, spawn_cli
from homes import seeded_home

ROOT = Path(__file__).resolve().parents[2]


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "RESEARCH_FSM_HOME": str(seeded_home(home)), "PYTHONPATH": str(ROOT)}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("TAVILY_API_KEY", None)
    return env


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``research-fsm ARGS`` offline on ``home`` (seeded), in this process."""
    return run_cli(*args, env=_env(home))


INTERRUPT_WHILE_LOADING = """
import sys

import pytest
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, CtrlC())
from research_fsm.cli import main
sys.exit(main(["ask", "Who is the CEO of Apple?"]))
"""


@pytest.mark.parametrize("module", ["research_fsm.engine", "research_fsm.qa"])
def test_ctrl_c_while_the_commands_load_is_one_line(tmp_path: Path, module: str) -> None:
    """Ctrl-C while the CLI loads (the engine, the commands): exit 130 and one line."""
    script = f"MODULE = {module!r}\n" + INTERRUPT_WHILE_LOADING
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert (130, "research-fsm: interrupted\n", "") == (done.returncode, done.stderr, done.stdout)


def test_a_reader_that_stops_early_is_no_error(tmp_path: Path) -> None:
    """`ask aapl | head -0`: the closed pipe ends the command quietly with exit status 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "research_fsm", "ask", "aapl"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line is written
    err = process.stderr.read()
    process.stderr.close()
    assert (0, [], []) == (
        process.wait(timeout=120),
        [line for line in err.splitlines() if "Broken pipe" in line or "Errno" in line],
        [line for line in err.splitlines() if line.startswith("Traceback")],
    )


def test_serve_on_a_busy_port_says_so_before_announcing(tmp_path: Path) -> None:
    """serve on a port in use: exit 4 (not 3, "needs an answer"), one line, no page address
    (a real process: the server's start is the point)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = spawn_cli("serve", "--port", str(port), "--source", "mock", env=_env(tmp_path))
    lines = done.stderr.strip().splitlines()
    assert (4, 1) == (done.returncode, len(lines))
    assert f"cannot listen on 127.0.0.1 port {port}" in lines[0]
    assert "the page is at" not in done.stderr


def test_help_documents_the_exit_statuses(tmp_path: Path) -> None:
    """--help lists 4 (the address) and 130 (interrupted) beside 0 to 3."""
    shown = cli(tmp_path, "--help").stdout
    assert (True, True) == ("4    serve: the address cannot" in shown, "130  interrupted" in shown)


def test_report_pdf_prints_both_paths(tmp_path: Path) -> None:
    """report --pdf prints report.md and report.pdf, one a line, then the summary."""
    done = cli(tmp_path, "report", "Siemens", "--pdf")
    lines = done.stdout.splitlines()
    assert ("report.md", "report.pdf") == (Path(lines[0]).name, Path(lines[1]).name)
    assert (True, True) == (Path(lines[0]).is_file(), Path(lines[1]).is_file())


def test_deep_pdf_prints_both_paths(tmp_path: Path) -> None:
    """deep --pdf prints report.md and report.pdf, then the summary line."""
    notes = str(ROOT / "examples" / "notes")
    done = cli(tmp_path, "deep", "Spring Boot 2 to 3 migration", "--docs", notes, "--pdf")
    names = [Path(line).name for line in done.stdout.splitlines()[-3:-1]]
    assert (0, ["report.md", "report.pdf"]) == (done.returncode, names)


def test_report_out_that_cannot_take_a_report_is_refused_first(tmp_path: Path) -> None:
    """report --out /proc or --out a file: exit 1, one line naming the folder, no research."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x", encoding="utf-8")
    for out in ("/proc", str(a_file)):
        done = cli(tmp_path, "report", "Siemens", "--out", out)
        lines = done.stderr.strip().splitlines()
        assert (1, 1, "") == (done.returncode, len(lines), done.stdout)
        assert lines[0].startswith(f"research-fsm: cannot save reports in {out}: ")
