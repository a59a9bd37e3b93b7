"""Session files, bad input, Japanese reports, and what the report may show."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep import InvalidResearchRequest, NoResearchSource, StaticSearch, list_sessions
from research_fsm.engine import MemoryCheckpointStore

from .conftest import TOPIC
from .llm import claude

STAGE_FILES = [
    "draft.md",
    "evidence.json",
    "queries.json",
    "relevance.json",
    "report.md",
    "report.pdf",
    "search_results.json",
    "session.json",
    "sources.json",
    "verification.json",
]


async def test_every_stage_leaves_an_owner_only_file(assistant: ResearchAssistant) -> None:
    """The session folder holds each stage's file, owner-only; sessions lists it."""
    report = await assistant.deep_research(TOPIC, formats=("md", "pdf"))
    assert report.folder is not None
    assert STAGE_FILES == sorted(p.name for p in report.folder.iterdir())
    assert 0o700 == stat.S_IMODE(report.folder.stat().st_mode)
    assert {0o600} == {stat.S_IMODE(p.stat().st_mode) for p in report.folder.iterdir()}
    meta = json.loads((report.folder / "session.json").read_text(encoding="utf-8"))
    assert ("completed", TOPIC) == (meta["status"], meta["topic"])
    (entry,) = list_sessions(report.folder.parent)
    assert (report.session_id, "completed", report.folder / "report.md") == (
        entry.id,
        entry.status,
        entry.report,
    )


async def test_a_japanese_report_has_japanese_headings_and_pdf_text(
    assistant: ResearchAssistant,
) -> None:
    """language="ja": Japanese section titles in Markdown and in the PDF's text."""
    pypdf = pytest.importorskip("pypdf")
    report = await assistant.deep_research(TOPIC, language="ja", formats=("md", "pdf"))
    assert report.markdown.startswith("# 調査レポート: ")
    for heading in ("## 概要", "## 調査方法", "## 出典", "## 検証", "## メタデータ"):
        assert heading in report.markdown
    pdf = next(p for p in report.paths if p.suffix == ".pdf")
    text = "".join(
        page.extract_text() for page in pypdf.PdfReader(io.BytesIO(pdf.read_bytes())).pages
    )
    assert "Spring Boot" in text


async def test_urls_nobody_retrieved_are_removed(home: Path, web: StaticSearch) -> None:
    """A draft that links to a page the session never retrieved: the link is not shown."""

    def linking(prompt: str) -> str:
        line = next(line for line in prompt.splitlines() if "requires Java 17" in line)
        cite = line[line.rindex("[") :]
        return (
            f"## Summary\nSpring Boot 3.0 requires Java 17 as a minimum version {cite}.\n"
            f"## Key points\n- Spring Boot 3.0 requires Java 17, see https://evil.example/x "
            f"{cite}\n"
        )

    assistant = ResearchAssistant(
        llm=claude([linking]), store=MemoryCheckpointStore(), web_search=web
    )
    report = await assistant.deep_research(TOPIC)
    assert "evil.example" not in report.markdown
    assert "(link removed)" in report.markdown


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"topic": ""}, "the topic is empty"),
        ({"topic": "   "}, "the topic is empty"),
        ({"topic": "x" * 501}, "the limit is 500"),
        ({"topic": "a\x1b[2Jb"}, "control characters"),
        ({"language": "fr"}, "use en or ja"),
        ({"formats": ("docx",)}, "'docx' is not supported"),
        ({"top_k": 0}, "top_k must be an integer from 1 to 10"),
        ({"threshold": 1.5}, "threshold must be from 0 to 1"),
    ],
)
async def test_bad_requests_name_what_is_wrong(
    assistant: ResearchAssistant, home: Path, kwargs: dict[str, object], message: str
) -> None:
    """Each bad argument is an InvalidResearchRequest naming it; no session is created."""
    args: dict[str, object] = {"topic": TOPIC} | kwargs
    topic = args.pop("topic")
    with pytest.raises(InvalidResearchRequest, match=message):
        await assistant.deep_research(topic, **args)  # type: ignore[arg-type]
    assert not (home / "sessions").exists()


async def test_bad_documents_folders_are_usage_errors(home: Path, tmp_path: Path) -> None:
    """A missing folder, or a file given as the folder, is named in the error."""
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    with pytest.raises(InvalidResearchRequest, match="does not exist"):
        await assistant.deep_research(TOPIC, docs=tmp_path / "nope")
    a_file = tmp_path / "notes.md"
    a_file.write_text("hello", encoding="utf-8")
    with pytest.raises(InvalidResearchRequest, match="is a file, not a folder"):
        await assistant.deep_research(TOPIC, docs=a_file)
    assert not (home / "sessions").exists()


async def test_no_documents_and_no_key_is_a_usage_error(home: Path) -> None:
    """Without documents and without a Tavily key, deep research refuses instead of guessing."""
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    with pytest.raises(NoResearchSource, match="TAVILY_API_KEY"):
        await assistant.deep_research(TOPIC)
    assert not (home / "sessions").exists()


async def test_an_unknown_session_cannot_be_continued(assistant: ResearchAssistant) -> None:
    """continue_deep_research names an unknown or malformed session id."""
    with pytest.raises(InvalidResearchRequest, match="no deep-research session `deep-nope`"):
        [e async for e in assistant.continue_deep_research("deep-nope")]
    with pytest.raises(InvalidResearchRequest, match="invalid session id"):
        [e async for e in assistant.continue_deep_research("../etc")]


async def test_research_docs_in_the_environment_is_the_default_folder(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $RESEARCH_DOCS set and no docs argument, the session reads that folder."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "jakarta.md").write_text(
        "# Jakarta\n\nSpring Boot 3 moves from javax to jakarta packages for the migration.\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("RESEARCH_DOCS", str(folder))
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    report = await assistant.deep_research("Spring Boot 3 migration")
    assert ("completed", "docs") == (report.status, report.mode)
    assert ["jakarta.md"] == [s["locator"] for s in report.sources]
    await assistant.aclose()


async def test_a_link_planted_in_the_session_folder_is_never_written_through(
    assistant: ResearchAssistant, home: Path, tmp_path: Path
) -> None:
    """A symlink where report.md goes is replaced by the report; its target is untouched."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me", encoding="utf-8")
    folder = home / "sessions" / "deep-planted"
    folder.mkdir(parents=True)
    (folder / "report.md").symlink_to(outside)
    events = [e async for e in assistant.stream_deep_research(TOPIC, session_id="deep-planted")]
    assert "keep me" == outside.read_text(encoding="utf-8")
    assert not (folder / "report.md").is_symlink()
    assert events[-1].markdown == (folder / "report.md").read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert STAGE_FILES[:5] == sorted(p.name for p in folder.iterdir())[:5]
