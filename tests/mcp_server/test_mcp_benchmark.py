"""``python -m benchmarks.mcp_startup`` runs end to end (numbers only; goals are judged on
full runs, never in tests)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import ROOT, server_env


@pytest.mark.slow
def test_the_startup_benchmark_writes_its_table_and_json(tmp_path: Path) -> None:
    """One run: the table names the goal, the JSON holds a finite median for each measure."""
    out = tmp_path / "mcp.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.mcp_startup", "--runs", "1", "--out", str(out)],
        env=server_env(tmp_path / "home"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "spawn to tools listed" in done.stdout and "≤ 1 s" in done.stdout
    data = json.loads(out.read_text())
    medians = data["median_s"]
    assert set(medians) >= {"python", "sdk_import", "listed", "answered", "listed_cpu"}
    assert all(math.isfinite(v) and v > 0 for v in medians.values())
    assert medians["answered"] >= medians["listed"]
    assert data["met"] == (medians["listed"] <= 1.0)
