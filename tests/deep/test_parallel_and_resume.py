"""The parallel analyses, streaming, and continuing a session after a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from research_fsm.assistant import ResearchAssistant
from research_fsm.deep import DeepProgress, DeepText, ResearchReport, StaticSearch
from research_fsm.engine import JsonFileCheckpointStore, MemoryCheckpointStore, NodeFailed

from .conftest import TOPIC
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
