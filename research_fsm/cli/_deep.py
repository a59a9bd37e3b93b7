"""``research-fsm deep`` and ``research-fsm sessions``. Deep research loads when one of
them runs, not when the CLI builds its parser."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..common.text import for_terminal
from ..llm import Usage

if TYPE_CHECKING:
    from ..assistant import ResearchAssistant
    from ..deep import DeepProgress, DeepText, ResearchReport

__all__ = ["add_deep_parsers", "run_deep", "run_sessions"]


def add_deep_parsers(sub: Any) -> None:
    """Add ``deep`` and ``sessions`` to the CLI's subcommands."""
    deep = sub.add_parser(
        "deep",
        help="research any topic over your documents or the web, with a cited report",
        description="Deep research: enhance the query, search (retry broader), filter for "
        "relevance, analyse the top sources in parallel, write a summary citing [S#], verify "
        "every claim against its source, and save report.md (and report.pdf) in a session "
        "folder. Sources: --docs DIR (or $RESEARCH_DOCS), else the web with TAVILY_API_KEY.",
    )
    deep.add_argument("topic", nargs="?")
    deep.add_argument("--docs", metavar="DIR", help="a folder of .md, .txt, .html and .pdf files")
    deep.add_argument(
        "--lang",
        choices=("en", "ja"),
        default=None,
        help="the report's language (default: the topic's, Japanese or English)",
    )
    deep.add_argument("--pdf", action="store_true", help="also write report.pdf")
    deep.add_argument(
        "--top", type=int, default=3, metavar="N", help="sources analysed in depth (default 3)"
    )
    deep.add_argument("--json", action="store_true", help="print the result as JSON")
    deep.add_argument(
        "--progress",
        action="store_true",
        help="show the documents' indexing progress bar on stderr even when it is not a "
        "terminal (it is shown on a terminal anyway)",
    )
    deep.add_argument("--resume", metavar="ID", help="continue an interrupted session")
    sub.add_parser("sessions", help="list deep-research sessions")


def _as_json(report: ResearchReport) -> str:
    return json.dumps(
        {
            "status": report.status,
            "session_id": report.session_id,
            "topic": report.topic,
            "language": report.language,
            "mode": report.mode,
            "summary": report.summary,
            "key_points": report.key_points,
            "steps": report.steps,
            "caveats": report.caveats,
            "sources": report.sources,
            "verification": report.verification,
            "folder": str(report.folder) if report.folder else None,
            "paths": [str(p) for p in report.paths],
            "llm_calls": report.llm_calls,
            "cost_usd": report.cost_usd,
            "timings": report.timings,
            "notes": report.notes,
        },
        ensure_ascii=False,
        indent=2,
    )


def _bar(event: DeepProgress, shown: bool) -> None:
    """The indexing progress bar, rewritten in place on stderr."""
    if event.indexing is None or not shown:
        return
    end = "\n" if event.finished else ""
    print(f"\r  indexing {event.indexing.bar()}", end=end, file=sys.stderr, flush=True)


async def _follow(
    events: AsyncIterator[DeepProgress | DeepText | ResearchReport],
    quiet: bool,
    progress: bool = False,
) -> ResearchReport:
    from ..deep import DeepProgress, DeepText, ResearchReport

    bar = progress or sys.stderr.isatty()
    async for event in events:
        if isinstance(event, ResearchReport):
            return event
        if isinstance(event, DeepProgress) and event.stage == "indexing":
            _bar(event, bar)
            continue
        if quiet or isinstance(event, DeepText):
            continue
        where = f" ({event.branch})" if event.branch else ""
        what = "done" if event.finished else "started"
        label = f": {for_terminal(event.message)}" if event.message else ""
        print(f"  [{event.stage}]{where} {what}{label}", file=sys.stderr, flush=True)
    raise RuntimeError("the deep-research run ended without a report")


def _summary_line(report: ResearchReport) -> str:
    v = report.verification
    calls = sum(report.llm_calls.values())
    checked = (
        f"{v['supported']}/{v['claims']} claims verified ({v['ratio']:.0%})"
        if v
        else "nothing verified"
    )
    return (
        f"{checked}, {len(report.sources)} sources cited, LLM {calls} calls "
        f"{sum(report.usage.values(), Usage()).cost_text()}; session {report.session_id}"
    )


async def run_deep(args: argparse.Namespace, assistant: ResearchAssistant) -> int:
    """Run (or continue) a deep-research session; 0 when the report is written."""
    if args.resume:
        report = await _follow(assistant.continue_deep_research(args.resume), args.json)
    else:
        formats = ("md", "pdf") if args.pdf else ("md",)
        events = assistant.stream_deep_research(
            args.topic, language=args.lang, docs=args.docs, formats=formats, top_k=args.top
        )
        report = await _follow(events, args.json, getattr(args, "progress", False))
    if args.json:
        print(_as_json(report))
        return 0
    if report.summary:
        print(for_terminal(report.summary))
    for point in [*report.key_points, *report.steps, *report.caveats][:8]:
        print(for_terminal(f"- {point}"))
    if report.status == "no_sources":
        print(for_terminal(report.markdown.split("\n\n")[2] if report.markdown else ""))
    print("\n".join(map(str, report.paths)))  # report.md, then report.pdf when written
    print(for_terminal(_summary_line(report)))
    return 0


async def run_sessions() -> int:
    """List deep-research sessions, newest first."""
    from ..deep import list_sessions, sessions_home

    entries = list_sessions(sessions_home())
    if not entries:
        print('No sessions yet. Try: research-fsm deep "TOPIC" --docs ./my-notes', file=sys.stderr)
    for entry in entries:
        print(for_terminal(f"{entry.id}  {entry.status:<10}  {entry.mode:<4}  {entry.topic}"))
    return 0
