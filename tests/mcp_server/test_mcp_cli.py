"""``research-fsm mcp`` on the command line: lazy imports, help, a missing extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .helpers import ROOT, server_env


def _python(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=server_env(home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_importing_the_package_and_the_cli_does_not_import_the_sdk(tmp_path: Path) -> None:
    """`import research_fsm`, the CLI and research_fsm.mcp itself load no `mcp` module."""
    done = _python(
        "import sys, research_fsm, research_fsm.cli._main, research_fsm.mcp\n"
        "research_fsm.mcp.DocsRoots\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_help_lists_the_mcp_command(tmp_path: Path) -> None:
    """`research-fsm --help` names mcp; `research-fsm mcp --help` its options."""
    top = _python("from research_fsm.cli import main; main(['--help'])", tmp_path)
    sub = _python("from research_fsm.cli import main; main(['mcp', '--help'])", tmp_path)
    assert "serve the assistant over MCP" in top.stdout
    assert "--docs-root DIR" in sub.stdout and "--transport {stdio,http}" in sub.stdout


def test_without_the_extra_it_says_how_to_install_it(tmp_path: Path) -> None:
    """With the SDK missing, one line names the extra to install; exit status 2."""
    done = _python(
        "import sys; sys.modules['mcp'] = None\n"
        "from research_fsm.cli import main; sys.exit(main(['mcp']))",
        tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "research-fsm: the MCP server needs the mcp extra: pip install 'research-fsm[mcp]'"
    )
