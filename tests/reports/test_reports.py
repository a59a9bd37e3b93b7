"""Company reports: graph paths, parallel specialists, recovery, grounding, writer, CLI."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clirun import cli_env, run_cli
from homes import seeded_home
from markdown_it import MarkdownIt
from pypdf import PdfReader

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import LLMError, ScriptedLLM
from research_fsm.reports import CompanyNotFound, InvalidReportRequest, Report, slug
from research_fsm.sources import DirectorySource, MockDataSource

SECTIONS_EN = [
    "Summary",
    "Financial",
    "Market",
    "Products",
    "Methodology",
    "Sources",
    "Quality and verification",
    "Metadata",
]


def check_grounding(report: Report) -> None:
    """Every [S#] resolves to sources.json; no URL appears that was not retrieved."""
    folder = report.folder
    assert folder is not None
    listed = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    ids = {entry["id"] for entry in listed}
    urls = {entry["url"] for entry in listed}
    cited = set(re.findall(r"\[(S\d+)\]", report.markdown))
    assert set() == cited - ids
    assert set() == set(re.findall(r"https?://[^\s>)]+", report.markdown)) - urls
    assert all(entry["retrieved_at"] for entry in listed)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RESEARCH_FSM_HOME in a temporary folder."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    return tmp_path


def offline(store: MemoryCheckpointStore | None = None) -> ResearchAssistant:
    return ResearchAssistant(source=DirectorySource(), store=store or MemoryCheckpointStore())


async def test_offline_report_reaches_score_at_iteration_one(home: Path) -> None:
    """Offline Siemens: one iteration, score 100, every section, saved owner-only and grounded."""
    report = await offline().report("Siemens", formats=("md", "pdf"))
    assert ("completed", "Siemens", 1) == (report.status, report.company, report.iterations)
    assert 100 == (report.quality.score if report.quality else None)
    headings = [t.content for t in MarkdownIt().parse(report.markdown) if t.type == "inline"]
    assert [h for h in headings if h in SECTIONS_EN] == SECTIONS_EN
    assert "**Net margin**: 11.8% [S1] _(computed from Net income, Revenue)_" in report.markdown
    assert report.folder is not None and report.folder.parent == home / "reports"
    assert {"report.md", "report.pdf", "sources.json", "meta.json"} == {
        p.name for p in report.folder.iterdir()
    }
    assert 0o700 == report.folder.stat().st_mode & 0o777
    assert 0o600 == (report.folder / "report.md").stat().st_mode & 0o777
    check_grounding(report)


async def test_japanese_markdown_and_pdf_text(home: Path) -> None:
    """--lang ja: Japanese sections in Markdown, and the PDF's text extracts back in Japanese."""
    report = await offline().report("Toyota", language="ja", formats=("md", "pdf"))
    assert "## 財務" in report.markdown and "## 出典" in report.markdown
    assert report.folder is not None
    text = "".join(page.extract_text() for page in PdfReader(report.folder / "report.pdf").pages)
    assert "企業レポート" in text and "売上高" in text
    check_grounding(report)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) missing")
async def test_english_pdf_text_with_pdftotext(home: Path) -> None:
    """pdftotext gets the English report's sections and figures back."""
    report = await offline().report("Siemens", formats=("md", "pdf"))
    assert report.folder is not None
    out = subprocess.run(
        ["pdftotext", str(report.folder / "report.pdf"), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Company report: Siemens" in out and "€75.93 billion (2024)" in out


async def test_unknown_company_saves_nothing(home: Path) -> None:
    """ "Acme Corp" raises CompanyNotFound with a clear sentence and writes no report folder."""
    with pytest.raises(CompanyNotFound, match='I couldn\'t find "Acme Corp"'):
        await offline().report("Acme Corp")
    assert not (home / "reports").exists()


@pytest.mark.parametrize(
    "name", ["", "   ", "x" * 100_000, "bad\x00name", "../../etc/passwd", "a\\b", ".."]
)
async def test_bad_names_are_rejected(home: Path, name: str) -> None:
    """Empty, 100 kB, control-character and path-like names raise InvalidReportRequest."""
    with pytest.raises(InvalidReportRequest):
        await offline().report(name)


def test_path_characters_never_escape() -> None:
    """Slugs keep only [a-z0-9-]: path characters cannot leave the reports folder."""
    assert ["etc-passwd", "company", "a-b"] == [slug("../../etc/passwd"), slug("/.."), slug("A/B")]


def quality(score: int) -> dict[str, Any]:
    """Claude's verdict adding up to ``score`` along design 004's criteria."""
    completeness, accuracy = round(score * 0.4), round(score * 0.3)
    return {
        "completeness": completeness,
        "accuracy": accuracy,
        "depth": score - completeness - accuracy,
        "missing": ["market share"] if score < 85 else [],
    }


VALUES = ("$89.5B revenue", "$195", "up 45% YTD", "P/E ratio: 31.2")
"""Values the mock source's Apple findings state (a fact's value must be in its source)."""


def extraction(url: str, n: int = 4) -> dict[str, Any]:
    return {
        "facts": [
            {"label": f"Fact {'ABCD'[i]}", "value": VALUES[i], "source_url": url} for i in range(n)
        ]
    }


def llm_script(url: str, scores: list[int]) -> dict[str, list[object]]:
    rounds = len(scores)
    return {
        "financial": [extraction(url)] * rounds,
        "market": [extraction(url)] * rounds,
        "product": [extraction(url)] * rounds,
        "synthesizer": ["Apple trades at $195."] * rounds,
        "quality": [quality(s) for s in scores],
    }


@pytest.mark.parametrize(("scores", "iterations"), [([90], 1), ([60, 90], 2), ([60, 70], 2)])
async def test_llm_quality_loop(home: Path, scores: list[int], iterations: int) -> None:
    """With an LLM: score ≥ 85 ends at once, a low score loops, two iterations at most;
    five LLM calls per iteration (3 specialists, synthesizer, quality)."""
    url = "https://investor.apple.com/"
    llm = ScriptedLLM(llm_script(url, scores))
    assistant = ResearchAssistant(llm=llm, source=MockDataSource(), store=MemoryCheckpointStore())
    report = await assistant.report("Apple")
    assert iterations == report.iterations
    assert 5 * iterations == len(llm.calls)
    assert {"financial", "market", "product", "synthesizer", "quality"} == set(report.usage)
    assert report.quality is not None and "combined" == report.quality.method
    assert scores[iterations - 1] == report.quality.llm_score
    rules = report.quality.rule_score or 0
    assert round((rules + scores[iterations - 1]) / 2) == report.quality.score
    check_grounding(report)


async def test_failing_specialist_marks_section_unavailable(home: Path) -> None:
    """A specialist whose LLM fails leaves its section unavailable; the siblings keep theirs."""
    url = "https://investor.apple.com/"
    script = llm_script(url, [100])  # the rules' 70 (no market section) and 100: 85, done
    script["market"] = [LLMError("overloaded", kind="overloaded")]
    assistant = ResearchAssistant(
        llm=ScriptedLLM(script), source=MockDataSource(), store=MemoryCheckpointStore()
    )
    report = await assistant.report("Apple")
    assert "This section is unavailable: the market specialist failed" in report.markdown
    assert report.markdown.count("**Fact A**") == 2
    check_grounding(report)


class HangingLLM(ScriptedLLM):
    """Hangs the product specialist until released (a crash stand-in)."""

    hang = True

    async def structured(self, **kwargs: Any) -> Any:  # type: ignore[override]
        if kwargs["agent"] == "product" and HangingLLM.hang:
            await asyncio.Event().wait()
        return await super().structured(**kwargs)


async def test_crash_mid_fan_out_resumes_only_unfinished(home: Path) -> None:
    """A run killed mid fan-out continues with continue_report; finished specialists never rerun."""
    url = "https://investor.apple.com/"
    store = MemoryCheckpointStore()
    llm = HangingLLM(llm_script(url, [90]))
    assistant = ResearchAssistant(llm=llm, source=MockDataSource(), store=store)

    async def first() -> None:
        async for _ in assistant.stream_report("Apple", thread_id="report-crash"):
            pass

    task = asyncio.create_task(first())
    while sum(c.agent in ("financial", "market") for c in llm.calls) < 2:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    HangingLLM.hang = False
    try:
        events = [e async for e in assistant.continue_report("report-crash")]
    finally:
        HangingLLM.hang = True
    report = events[-1]
    assert isinstance(report, Report) and "completed" == report.status
    order = ["financial", "market", "product", "synthesizer", "quality"]
    assert order == sorted((c.agent for c in llm.calls), key=order.index)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``research-fsm ARGS`` offline on ``home`` (seeded), in this process."""
    return run_cli(*args, env=cli_env(seeded_home(home)))


def test_cli_report_reports_and_exit_codes(tmp_path: Path) -> None:
    """report saves and prints path + summary (0); reports lists it; unknown 1; empty 2;
    ambiguous without a terminal 3, and answer continues it in a new run."""
    done = cli(tmp_path, "report", "Siemens", "--pdf")
    assert 0 == done.returncode, done.stderr
    assert done.stdout.splitlines()[0].endswith("report.md")
    assert "Siemens: coverage 100/100 (the fields the specialists look for" in done.stdout
    assert "[financial] (financial[0]) started" in done.stderr
    listed = cli(tmp_path, "reports")
    assert "Siemens" in listed.stdout and "100/100" in listed.stdout
    assert 1 == cli(tmp_path, "report", "Acme Corp").returncode
    assert 2 == cli(tmp_path, "report", "").returncode
    path_like = cli(tmp_path, "report", "../../etc/passwd")
    assert (2, "") == (path_like.returncode, path_like.stdout)
    assert "path characters" in path_like.stderr
    asked = cli(tmp_path, "report", "the one that makes chips")
    assert 3 == asked.returncode and "Which company" in asked.stdout
    thread = re.search(r"--thread (report-\w+)", asked.stderr)
    assert thread is not None
    answered = cli(tmp_path, "answer", "--thread", thread.group(1), "AMD")
    assert 0 == answered.returncode, answered.stderr
    assert "AMD" in answered.stdout


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "What was missing: Products: Products."), ("ja", "不足していた項目：製品：製品。")],
)
async def test_methodology_lists_missing_items_in_the_report_language(
    home: Path, language: str, expected: str
) -> None:
    """Methodology names what was missing with the translated labels, not raw keys."""
    report = await offline().report("Nvidia", language=language)  # type: ignore[arg-type]
    assert expected in report.markdown
    assert "product: products" not in report.markdown
