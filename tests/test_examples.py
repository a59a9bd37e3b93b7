"""Every script in examples/ runs offline, exits 0 and prints what it is about."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from forkrun import run_script
from homes import seeded_home

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

MARKERS: dict[str, list[str]] = {
    "quickstart": ["company:    Apple Inc.", "path:       clarity -> research"],
    "clarification": [
        "status:    needs_clarification",
        "company:   Apple Inc.",
        "interrupt -> clarity",
    ],
    "multi_turn": [
        "mock data: the figures below come from MockDataSource",
        "[2] user: What about their stock?",
        "about: Tesla, Inc. and Apple Inc.",
    ],
    "streaming": [
        "mock data: the figures below come from MockDataSource",
        "synthesis  Writing the answer...",
        "MSFT trading at $378",
        "company: Microsoft Corporation",
    ],
    "custom_graph": ["flowchart TD", 'review -->|"again"| write', "'approved': True"],
    "deep_research": [
        "status: completed",
        "done: deep_analysis (deep_analysis[2])",
        "verified: ",
        "files: report.md, report.pdf",
    ],
    "tracing": [
        "research_fsm.run",
        "status=completed (links to the suspended run)",
        "research_fsm.search Company Directory",
    ],
    "web_two_servers": ["two servers on one database"],
    "web_app": [
        "answered: 55/55; each answer named its own company: True",
        "edited token               -> 400",
    ],
}
"""For each example: strings its output must contain."""


def test_every_example_is_tested() -> None:
    """The examples on disk are exactly the ones this module checks."""
    assert {path.stem for path in EXAMPLES.glob("*.py")} == set(MARKERS)


@pytest.mark.parametrize("name", sorted(MARKERS))
def test_example_runs(name: str, tmp_path: Path) -> None:
    """The example exits 0 within 60 s, offline, and prints its marker lines (a fresh process
    forked from a preloaded interpreter: ``forkrun``)."""
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(seeded_home(tmp_path)),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_DATA_SOURCE", "LOG_LEVEL"):
        env.pop(key, None)
    result = run_script([str(EXAMPLES / f"{name}.py")], cwd=tmp_path, env=env, timeout=60)
    output = f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.returncode == 0, output
    for marker in MARKERS[name]:
        assert marker in result.stdout, f"{marker!r} missing from the output of {name}.py\n{output}"


BLOCKER = """import os, sys
for name in filter(None, os.environ.get("BLOCKED_MODULES", "").split(",")):
    sys.modules[name] = None  # import fails, find_spec finds nothing: as if not installed
"""


@pytest.mark.parametrize(
    ("name", "blocked", "said"),
    [
        ("tracing", "opentelemetry.sdk", "skipped: opentelemetry-sdk is not installed"),
        ("web_two_servers", "starlette", "skipped: starlette not installed"),
        ("web_two_servers", "psycopg,psycopg_pool", "skipped: psycopg, psycopg_pool not"),
    ],
)
def test_example_without_its_extra_explains_and_exits_0(
    name: str, blocked: str, said: str, tmp_path: Path
) -> None:
    """Without its extra (made unimportable), the example says what is missing and exits 0."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(tmp_path),
        "BLOCKED_MODULES": blocked,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    env.pop("RESEARCH_FSM_STORE", None)
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert (0, "", True) == (result.returncode, result.stderr, said in result.stdout)


def test_web_two_servers_moves_a_conversation_between_processes(
    tmp_path: Path, postgres_server: Any
) -> None:
    """Two uvicorn processes on one database of the suite's server: ask on A, clarify on B
    with A's token, follow up on A; every check the example prints passes."""
    import psycopg

    name = f"web_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    user = postgres_server.dsn.split("user=")[1].split()[0]
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(tmp_path),
        "RESEARCH_FSM_STORE": f"postgresql://{user}@/{name}?host={postgres_server.socket_dir}&port=5432",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "web_two_servers.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    output = f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.returncode == 0, output
    assert "all checks passed: True" in result.stdout, output
    assert result.stdout.count("  ok   ") == 4, output
