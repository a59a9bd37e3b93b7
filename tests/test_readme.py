"""The README: short, its engine example runs, its two set-up commands are what CI runs.

The docs' examples and every relative link are checked in tests/test_docs.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_engine_example_runs() -> None:
    """The 20-line engine example in the README runs and prints its documented result."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "asyncio.run(main())" in b)
    result = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "completed ['start', 'got Ada', 'hello Ada']"


def test_readme_has_exactly_two_setup_commands() -> None:
    """The set-up section holds two commands, the ones .ci/run performs."""
    text = README.read_text()
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", section, re.S)
    ci = (README.parent / ".ci" / "run").read_text()
    assert len(commands) == 2
    for command in commands:
        assert command in ci


def test_readme_is_short() -> None:
    """The README stays an entrance of at most about 200 lines; the rest lives in docs/."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details to docs/"
