"""The machine a benchmark ran on: CPU, memory, versions, the temp folder's file system."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ._common import ROOT, version_of

__all__ = ["machine_info"]


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    revision = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "research_fsm"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode == 0:
            revision = out.stdout.strip() + (" (research_fsm modified)" if dirty.stdout else "")
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "python": sys.version.split()[0],
        "research_fsm": version_of("research-fsm"),
        "git": revision,
        "pydantic": version_of("pydantic"),
        "langgraph": version_of("langgraph"),
        "langgraph_checkpoint_sqlite": version_of("langgraph-checkpoint-sqlite"),
        "langgraph_checkpoint_postgres": version_of("langgraph-checkpoint-postgres"),
        "psycopg": version_of("psycopg"),
        "filesystem_tmp": _filesystem(tempfile.gettempdir()),
    }


def _filesystem(path: str) -> str | None:
    best = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if (
                len(parts) >= 3
                and path.startswith(parts[1])
                and (best is None or len(parts[1]) > len(best[0]))
            ):
                best = (parts[1], parts[2])
    return f"{best[1]} ({best[0]})" if best else None
