"""``research-fsm report`` and ``research-fsm reports``. The report app loads when one
of them runs, not when the CLI builds its parser."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..common.text import for_terminal

if TYPE_CHECKING:
    from ..assistant import ResearchAssistant
    from ..reports import Report, ReportProgress

__all__ = ["add_parsers", "run_report", "run_reports"]


def add_parsers(sub: Any, source_help: str) -> None:
    """Add ``report`` and ``reports`` to the CLI's subcommands."""
    report = sub.add_parser(
        "report",
        help="research a company and save a report",
        description="Research a company (researcher, three parallel specialists, "
        "synthesiser, quality loop) and save report.md (and report.pdf) with sources.json.",
    )
    report.add_argument("company", nargs="?")
    report.add_argument("--lang", choices=("en", "ja"), default="en")
    report.add_argument("--pdf", action="store_true", help="also write report.pdf")
    report.add_argument(
        "--out", help="folder for the report folder (default: $RESEARCH_FSM_HOME/reports)"
    )
    report.add_argument("--json", action="store_true", help="print the report's summary as JSON")
    report.add_argument("--source", help=source_help)
    report.add_argument("--resume", metavar="ID", help="continue an interrupted report run")
    sub.add_parser("reports", help="list saved reports")


def _as_json(report: Report) -> str:
    return json.dumps(
        {
            "status": report.status,
            "thread_id": report.thread_id,
            "company": report.company,
            "folder": str(report.folder) if report.folder else None,
            "paths": [str(p) for p in report.paths],
            "quality": report.quality.model_dump() if report.quality else None,
            "iterations": report.iterations,
            "sources": report.sources,
            "usage": {k: v.model_dump() for k, v in report.usage.items()},
            "cost_usd": report.cost_usd,
            "timings": report.timings,
            "question": report.question,
            "choices": report.choices,
        },
        ensure_ascii=False,
        indent=2,
    )


async def _follow(events: AsyncIterator[ReportProgress | Report], quiet: bool) -> Report:
    from ..reports import Report

    async for event in events:
        if isinstance(event, Report):
            return event
        if not quiet:
            where = f" ({event.branch})" if event.branch else ""
            what = "done" if event.finished else "started"
            label = f": {for_terminal(event.message)}" if event.message else ""
            print(f"  [{event.agent}]{where} {what}{label}", file=sys.stderr, flush=True)
    raise RuntimeError("the report run ended without a report")


def _print_paths(report: Report) -> None:
    """The report's files, one a line: report.md, then report.pdf when written."""
    shown = [str(p) for p in report.paths if Path(p).suffix in (".md", ".pdf")]
    print("\n".join(shown) if shown else "")


async def run_report(args: argparse.Namespace, assistant: ResearchAssistant) -> int:
    """Run (or continue) a report; 0 saved, 3 needs an answer."""
    if args.resume:
        report = await _follow(assistant.continue_report(args.resume), args.json)
    else:
        formats = ("md", "pdf") if args.pdf else ("md",)
        out = Path(args.out).expanduser() if args.out else None
        events = assistant.stream_report(args.company, language=args.lang, formats=formats, out=out)
        report = await _follow(events, args.json)
    while report.status == "needs_clarification":
        print(for_terminal(report.question or ""), flush=True)
        if not sys.stdin.isatty():
            print(
                f'  (answer with: research-fsm answer --thread {report.thread_id} "COMPANY")',
                file=sys.stderr,
            )
            return 3
        answer = await asyncio.to_thread(input, "> ")
        report = await _follow(
            assistant.continue_report(report.thread_id, answer=answer), args.json
        )
    if args.json:
        print(_as_json(report))
    else:
        _print_paths(report)
        print(for_terminal(report.summary_line()))
    return 0


async def answer_report(thread: str, text: str, assistant: ResearchAssistant) -> int:
    """``research-fsm answer`` for a report run that asked which company."""
    args = argparse.Namespace(resume=None, json=False)
    report = await _follow(assistant.continue_report(thread, answer=text), False)
    del args
    if report.status == "needs_clarification":
        print(for_terminal(report.question or ""))
        return 3
    _print_paths(report)
    print(for_terminal(report.summary_line()))
    return 0


async def run_reports() -> int:
    """List saved reports, newest first."""
    from ..reports import list_reports, reports_home

    entries = list_reports(reports_home())
    if not entries:
        print('No reports yet. Try: research-fsm report "Siemens"', file=sys.stderr)
    for entry in entries:
        score = "-" if entry.score is None else f"{entry.score}/100"
        print(f"{entry.generated_at}  {score:>7}  {for_terminal(entry.company)}  {entry.path}")
    return 0
