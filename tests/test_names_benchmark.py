"""``python -m benchmarks.names --quick`` (the name evaluation's CI form) runs end to end
over the bundled directory and holds the issue's goals other than time (latency is
judged on full runs, not in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_quick_name_evaluation(tmp_path: Path) -> None:
    """A sample of every name form and template, and the negatives: no wrong company on
    the negatives, at most 0.1% on the positives, the right one answered or offered for
    98%, and every company outside the directory said plainly not to be in it."""
    out = tmp_path / "names.json"
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "LOG_LEVEL"):
        env.pop(key, None)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.names", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    payload = json.loads(out.read_text(encoding="utf-8"))
    goals = {name: ok for name, ok in payload["goals"].items() if "ms per question" not in name}
    totals = payload["summary"]["tuning"]
    assert (True, True, True) == (
        all(goals.values()),
        totals["positives"]["questions"] >= 1000,
        totals["negatives"]["questions"] >= 200,
    ), (goals, result.stdout[-3000:], result.stderr[-2000:])
