"""Deep research over a folder of your own notes, offline: no keys, no network.

    python examples/deep_research.py

Indexes ``examples/notes`` (Markdown, text, HTML and a Japanese note; SQLite FTS5 with
BM25), analyses the top sources in parallel, drafts a summary citing ``[S#]``, checks
every claim against the passage it cites, and writes report.md and report.pdf into a
session folder under ``$RESEARCH_FSM_HOME/sessions/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from research_fsm import ResearchAssistant
from research_fsm.deep import DeepProgress, ResearchReport

NOTES = Path(__file__).resolve().parent / "notes"


async def main() -> None:
    assistant = ResearchAssistant()
    report: ResearchReport | None = None
    stream = assistant.stream_deep_research(
        "Spring Boot 2 to 3 migration", docs=NOTES, formats=("md", "pdf")
    )
    async for event in stream:
        if isinstance(event, DeepProgress) and event.finished:
            print(f"  done: {event.stage}" + (f" ({event.branch})" if event.branch else ""))
        elif isinstance(event, ResearchReport):
            report = event
    assert report is not None
    print(f"status: {report.status}")
    print(f"summary: {report.summary}")
    for step in report.steps:
        print(f"step: {step}")
    for source in report.sources:
        where = f"{source['locator']}, {source['position']}"
        print(f"[{source['id']}] {where}")
    v = report.verification
    print(f"verified: {v['supported']}/{v['claims']} claims supported ({v['ratio']:.0%})")
    print(f"files: {', '.join(p.name for p in report.paths)}")
    await assistant.aclose()


if __name__ == "__main__":
    asyncio.run(main())
