"""What a report says about its own figures: rank denominators, mixed fiscal years,
what the quality score measures, where offline sources come from, and no claim of
listed sources when none are listed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pytest

from research_fsm import ResearchAssistant
from research_fsm.common.writer import to_markdown
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.reports import Report
from research_fsm.reports._compose import compose
from research_fsm.reports._model import Quality, ReportState
from research_fsm.sources import DirectorySource


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RESEARCH_FSM_HOME in a temporary folder."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    return tmp_path


async def offline_report(company: str, language: Literal["en", "ja"] = "en") -> Report:
    assistant = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    return await assistant.report(company, language=language)


async def test_rank_says_how_many_could_not_be_ranked(home: Path) -> None:
    """ "6th of 28 ... by revenue (4 more have no comparable revenue figure)": the
    companies without a comparable revenue figure are counted next to the rank."""
    ranking = await DirectorySource().peers("AMD")
    assert ranking is not None and ranking.position is not None
    report = await offline_report("AMD")
    expected = (
        f"AMD is {ranking.sentence().split(' is ', 1)[1].removesuffix('.')} "
        f"({len(ranking.unranked)} more have no comparable revenue figure)."
    )
    assert (True, True) == (
        len(ranking.unranked) > 1,
        f"**Position**: {expected}" in report.markdown,
    )


async def test_japanese_rank_says_how_many_could_not_be_ranked(home: Path) -> None:
    """The Japanese rank sentence counts the unranked companies too."""
    report = await offline_report("AMD", language="ja")
    assert re.search(r"（ほか\d+社は比較できる売上高の数値がありません）。", report.markdown)


async def test_figures_of_different_years_are_labelled(home: Path) -> None:
    """Revenue (2013) per employee (2020) says it mixes fiscal years."""
    report = await offline_report("Mitsubishi UFJ Financial Group")
    line = next(line for line in report.markdown.splitlines() if "Revenue per employee" in line)
    assert line.endswith(
        "_(computed from Revenue (2013), Employees (2020); figures of different fiscal years)_"
    )


async def test_quality_score_says_it_measures_coverage(home: Path) -> None:
    """The quality section says the score is coverage, not accuracy."""
    report = await offline_report("Siemens")
    assert "It does not check that the figures are accurate." in report.markdown


async def test_offline_sources_are_not_called_retrieved(home: Path) -> None:
    """Offline, the sources are cited by the bundled directory, not retrieved at a time."""
    report = await offline_report("Siemens")
    sources = report.markdown.split("## Sources", 1)[1].split("## ", 1)[0]
    assert (False, True, False) == (
        "retrieved" in sources,
        "cited by the bundled directory, pytickersymbols" in sources,
        "every [S#] refers to a source retrieved for this report" in report.markdown,
    )


def test_no_claim_of_listed_sources_when_none_are_listed() -> None:
    """A report without sources never says its figures are taken from the listed sources."""
    state = ReportState(query="Acme", company="Acme", quality=Quality(score=0))
    markdown = to_markdown(compose(state, "2026-01-01T00:00:00+00:00"))
    assert (False, True) == (
        "taken from the listed sources" in markdown,
        "No source is listed for this report" in markdown,
    )
