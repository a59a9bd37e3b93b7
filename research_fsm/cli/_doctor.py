"""``research-fsm doctor``: the backends in use, and one tiny call to the LLM."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from ..common.text import for_terminal
from ..diagnostics import check_llm, describe_backends
from ..llm import llm_from_env

__all__ = ["EXIT_DEGRADED", "add_doctor_parser", "run_doctor"]

EXIT_DEGRADED = 5
"""doctor: the LLM answers, but not through tools (structured steps degrade)."""


def add_doctor_parser(sub: Any, source_help: str) -> None:
    """The ``doctor`` subcommand."""
    doctor = sub.add_parser(
        "doctor",
        help="say which LLM, search and document backends are in use, and check the LLM",
        description="Say which LLM, search and document backends are in use and which extras "
        "are installed, then make one tiny call to prove the LLM answers. Exit status 0: "
        "all is well (or no LLM is configured); 1: the LLM does not answer; 5: it answers, "
        "but not through tools (structured steps will ask for JSON in text, then use the rules).",
    )
    doctor.add_argument("--source", help=source_help)
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")


async def run_doctor(args: argparse.Namespace) -> int:
    """Print the backends, check the LLM; the exit status says how the check went."""
    backends = describe_backends(args.source)
    llm = llm_from_env()
    try:
        check = await check_llm(llm)
    finally:
        if llm is not None:
            await llm.aclose()
    status = 0 if check is None or check.status == "ok" else 1
    if check is not None and check.status == "degraded":
        status = EXIT_DEGRADED
    if args.json:
        found = {
            "backends": [asdict(b) for b in backends.backends],
            "extras": [asdict(e) for e in backends.extras],
            "llm_check": None
            if check is None
            else {"status": check.status, "kind": check.kind, "message": check.message},
        }
        print(json.dumps(found, ensure_ascii=False, indent=2))
        return status
    for line in backends.lines():
        print(for_terminal(line))
    if check is None:
        print("check      no LLM to check: the rule-based agents answer")
    else:
        mark = {"ok": "ok", "degraded": "WARNING", "failed": "FAILED"}[check.status]
        print(for_terminal(f"check      {mark}: {check.message}"), file=sys.stdout)
    return status
