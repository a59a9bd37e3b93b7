"""``python -m benchmarks.opcodes``: counts a run's bytecodes, here and in another checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def opcodes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.opcodes", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_counts_every_shape_against_a_checkout(tmp_path: Path) -> None:
    """Against itself, each shape's counts agree within 1% (the count does not depend on
    the machine's load; random ids and caches move it by a few bytecodes)."""
    out = tmp_path / "counts.json"
    done = opcodes("--runs", "2", "--against", str(ROOT), "--json", str(out))
    assert 0 == done.returncode, done.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert ["happy", "retry", "fanout", "map"] == [row["shape"] for row in rows]
    assert all(row["this"] > 1000 for row in rows), rows
    assert all(abs(row["this"] / row["against"] - 1) < 0.01 for row in rows), rows


def test_refuses_a_folder_that_is_not_a_checkout(tmp_path: Path) -> None:
    """``--against`` a folder without the project's benchmarks: exit 2, naming it."""
    done = opcodes("--against", str(tmp_path))
    assert 2 == done.returncode
    assert f"--against {tmp_path}: not a checkout of this project" in done.stderr
