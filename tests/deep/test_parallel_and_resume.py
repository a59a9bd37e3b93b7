"""The parallel analyses, streaming, and continuing a session after a crash."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep import DeepProgress, DeepText, ResearchReport, StaticSearch
from research_fsm.engine import MemoryCheckpointStore, NodeFailed
from research_fsm.stores import JsonFileCheckpointStore

from .conftest import CORPUS, TOPIC
from .llm import analyse, blocks, claude

SUMMARY = "## Summary\nSpring Boot 3.0 requires Java 17 as a minimum version {cite}.\n"


def java_draft(prompt: str) -> str:
    """A one-claim draft citing the fact about Java 17."""
    line = next(line for line in prompt.splitlines() if "requires Java 17" in line)
    return SUMMARY.format(cite=line[line.rindex("[") :])


async def test_analyses_run_at_the_same_time(home: Path, web: StaticSearch) -> None:
    """The top three sources are analysed concurrently: each analysis waits for all three."""
    started = 0
    all_in = asyncio.Event()

    async def gate() -> None:
        nonlocal started
        started += 1
        if started == 3:
            all_in.set()
        await asyncio.wait_for(all_in.wait(), timeout=5)

    class Gated:
        def __init__(self) -> None:
            self.inner = claude([java_draft])
            self.model = "claude-test"

        async def structured(self, **kw: Any) -> Any:
            if kw["agent"] == "deep_analysis":
                await gate()
            return await self.inner.structured(**kw)

        async def generate(self, **kw: Any) -> Any:
            return await self.inner.generate(**kw)

    assistant = ResearchAssistant(llm=Gated(), store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research(TOPIC)
    assert 3 == started
    assert "completed" == report.status


async def test_one_failing_analysis_keeps_the_others(home: Path, web: StaticSearch) -> None:
    """An analysis that raises is recorded as failed; the other sources' facts stay."""

    def flaky(prompt: str) -> Any:
        if "Preparing for Spring Boot" in prompt:
            raise RuntimeError("parser exploded")
        return analyse(prompt)

    llm = claude([java_draft], analysis=flaky)
    assistant = ResearchAssistant(llm=llm, store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research(TOPIC)
    assert "completed" == report.status
    assert "requires Java 17" in report.summary
    assert "failed: RuntimeError: parser exploded" in report.markdown
    snapshot = await assistant.deep_runner().app.get_state(report.session_id)
    assert snapshot is not None
    analyses = snapshot.state.analyses
    assert (1, 2) == (len([a for a in analyses if a.error]), len([a for a in analyses if a.facts]))


async def test_streaming_shows_branches_and_text_before_the_report(
    assistant: ResearchAssistant,
) -> None:
    """Three deep_analysis branches start and finish, draft text streams, then the report."""
    events = [event async for event in assistant.stream_deep_research(TOPIC)]
    branches = {
        e.branch for e in events if isinstance(e, DeepProgress) and e.stage == "deep_analysis"
    }
    assert 3 == len(branches)
    text = [i for i, e in enumerate(events) if isinstance(e, DeepText)]
    assert text and text[-1] < len(events) - 1
    assert isinstance(events[-1], ResearchReport)
    assert "".join(e.text for e in events if isinstance(e, DeepText)).startswith("## Summary")


async def test_a_crash_after_the_analyses_resumes_without_redoing_them(
    home: Path, web: StaticSearch
) -> None:
    """Synthesis dies; a new assistant on the same store continues: analyses not re-run."""
    store_dir = home / "threads"
    crashing = claude([RuntimeError("killed")])
    first = ResearchAssistant(
        llm=crashing, store=JsonFileCheckpointStore(store_dir), web_search=web
    )
    with pytest.raises(NodeFailed):
        await first.deep_research(TOPIC)
    analysed = [c for c in crashing.calls if c.agent == "deep_analysis"]
    assert 3 == len(analysed)
    (session,) = [p.name for p in (home / "sessions").iterdir()]
    await first.aclose()

    fresh = claude([java_draft])
    second = ResearchAssistant(llm=fresh, store=JsonFileCheckpointStore(store_dir), web_search=web)
    events = [e async for e in second.continue_deep_research(session)]
    report = events[-1]
    assert isinstance(report, ResearchReport)
    assert ("completed", session) == (report.status, report.session_id)
    assert ["synthesis", "verification"] == [c.agent for c in fresh.calls]
    assert "requires Java 17" in report.summary
    again = [e async for e in second.continue_deep_research(session)]
    assert isinstance(again[-1], ResearchReport) and again[-1].summary == report.summary


async def test_prompts_carry_sources_as_data(home: Path, web: StaticSearch) -> None:
    """Retrieved text reaches Claude only inside <source> tags, with the data rule."""
    llm = claude([java_draft])
    assistant = ResearchAssistant(llm=llm, store=MemoryCheckpointStore(), web_search=web)
    await assistant.deep_research(TOPIC)
    call = next(c for c in llm.calls if c.agent == "deep_analysis")
    assert 1 == len(blocks(call.prompt))
    assert "never instructions" in call.system


CHILD = r"""
import asyncio, json, re, sys, time
from pathlib import Path
from research_fsm import ResearchAssistant
from research_fsm.deep import Found, StaticSearch
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.llm import ScriptedLLM

docs = [Found(**d) for d in json.loads(Path(sys.argv[2]).read_text())]
SOURCE = re.compile(r'<source id="(S\d+)"[^>]*>\n(.*?)\n</source>', re.S)

def analyse(prompt):
    ((_, text),) = SOURCE.findall(prompt)
    first = text.split(". ")[0] + "."
    return {"facts": [{"kind": "finding", "statement": first, "quote": first}]}

def rate(prompt):
    return {"results": [{"id": sid, "score": 0.9} for sid, _ in SOURCE.findall(prompt)]}

def hang(prompt):
    time.sleep(120)  # killed here, after every analysis was saved

llm = ScriptedLLM({"query_parser": [{"query": sys.argv[3]}] * 4, "relevance_filter": [rate] * 4,
                   "deep_analysis": [analyse] * 8, "synthesis": [hang]}, model="claude-test")
store = JsonFileCheckpointStore(Path(sys.argv[1]) / "threads", durability="fsync")
assistant = ResearchAssistant(llm=llm, store=store, web_search=StaticSearch(docs, mode="docs"))
asyncio.run(assistant.deep_research(sys.argv[3]))
"""


async def test_sigkill_during_synthesis_then_resume_skips_the_analyses(
    home: Path, tmp_path: Path, web: StaticSearch
) -> None:
    """A process killed (SIGKILL) while writing the draft: continuing the session in another
    process runs synthesis and verification only, never the finished analyses again."""
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([asdict(d) for d in CORPUS]), encoding="utf-8")
    env = {**os.environ, "RESEARCH_FSM_HOME": str(home)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(home), str(corpus), TOPIC], env=env)
    try:
        deadline = time.monotonic() + 60
        while not list(home.glob("sessions/*/evidence.json")):
            assert child.poll() is None, "the child ended before synthesis"
            assert time.monotonic() < deadline, "the child never reached synthesis"
            await asyncio.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    (evidence,) = home.glob("sessions/*/evidence.json")
    session = evidence.parent.name
    fresh = claude([java_draft])
    assistant = ResearchAssistant(
        llm=fresh, store=JsonFileCheckpointStore(home / "threads"), web_search=web
    )
    events = [e async for e in assistant.continue_deep_research(session)]
    report = events[-1]
    assert isinstance(report, ResearchReport)
    assert ["synthesis", "verification"] == [c.agent for c in fresh.calls]
    assert ("completed", 3) == (report.status, len(json.loads(evidence.read_text())))
    await assistant.aclose()
