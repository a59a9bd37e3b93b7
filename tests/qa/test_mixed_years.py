"""A margin computed from figures of different fiscal years says so in a comparison."""

from __future__ import annotations

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import DirectorySource


async def test_comparison_margin_of_mixed_years_is_labelled() -> None:
    """Safran's revenue is for 2025 and its net income for 2024: its margin says so."""
    assistant = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    reply = await assistant.ask("compare safran and legrand", thread_id="t")
    row = next(line for line in reply.text.splitlines() if line.startswith("| Net margin"))
    assert "9.8% (revenue FY2025, net income FY2024: different years)" in row
