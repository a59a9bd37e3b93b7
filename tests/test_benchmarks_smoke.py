"""The benchmark suite (``python -m benchmarks``) runs end to end at tiny sizes.

A smoke test only: it checks that every figure ran and produced numbers, never
how fast anything was (the goals are judged on full runs, not in CI).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers.postgres import find_bindir

ROOT = Path(__file__).resolve().parent.parent
FIGURES = [str(number) for number in range(1, 18)]


@pytest.mark.slow
def test_quick_benchmarks_cover_every_figure(tmp_path: Path) -> None:
    """``--quick`` writes every figure's rows as numbers (fig. 12 skipped only without Postgres)."""
    out = tmp_path / "bench.json"
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_DATA_SOURCE", "LOG_LEVEL"):
        env.pop(key, None)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    output = f"--- stdout\n{result.stdout[-5000:]}\n--- stderr\n{result.stderr[-5000:]}"
    assert result.returncode == 0, output
    assert "| fig | metric | research_fsm | LangGraph |" in result.stdout, output

    data = json.loads(out.read_text())
    assert sorted(data["figures"], key=int) == FIGURES
    skipped = {n: f["skipped"] for n, f in data["figures"].items() if f["skipped"] is not None}
    expected = {} if find_bindir() is not None else {"12": skipped.get("12")}
    assert expected == skipped, output
    assert all("PostgreSQL server" in reason for reason in skipped.values()), skipped
    for number, figure in data["figures"].items():
        assert figure["error"] is None, f"figure {number} failed:\n{figure['error']}"
        if number in skipped:
            continue
        assert figure["rows"], f"figure {number} has no rows"
        for row in figure["rows"]:
            ours, peer = row["research_fsm"], row["langgraph"]
            assert isinstance(ours, (int, float)) and math.isfinite(ours), (number, row)
            peer_ok = peer is None or (isinstance(peer, (int, float)) and math.isfinite(peer))
            assert peer_ok, (number, row)
            if not data["peer"]:
                assert peer is None, (number, row)


def test_figure_12_without_server_binaries_is_skipped_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no PostgreSQL server binaries, figure 12 reports itself skipped with the reason."""
    import servers.postgres

    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(servers.postgres, "find_bindir", lambda: None)
    from benchmarks import fig12_postgres
    from benchmarks._common import QUICK

    figure = fig12_postgres.run(QUICK, peer=False)
    assert ([], None) == (figure.rows, figure.error)
    assert (figure.skipped or "").startswith(
        "no PostgreSQL server could be started: no PostgreSQL server binaries"
    )
