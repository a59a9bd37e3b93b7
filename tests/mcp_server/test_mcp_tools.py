"""The MCP server's tools and resources through the SDK's own client, in process (the
transports' tests, over stdio and HTTP subprocesses, are in test_mcp_transports.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_fsm import ResearchAssistant
from research_fsm.mcp import DocsRoots, ServerOptions, create_server
from research_fsm.sources import create_data_source

from .helpers import Answerer, Recorder

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"


def _server(roots: list[Path] | None = None) -> Any:
    options = ServerOptions(docs_roots=DocsRoots(roots or []))
    return create_server(
        options, assistant=lambda: ResearchAssistant(source=create_data_source("directory"))
    )


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def test_tools_are_listed_with_typed_schemas() -> None:
    """Every tool is listed with an input schema naming its arguments and an output schema."""
    async with Client(_server()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {
        "ask",
        "report",
        "deep_research",
        "continue_run",
        "list_reports",
        "list_sessions",
    }
    assert tools["ask"].input_schema["required"] == ["question"]
    assert set(tools["ask"].input_schema["properties"]) == {"question", "conversation"}
    assert tools["report"].input_schema["properties"]["language"]["enum"] == ["en", "ja"]
    assert set(tools["deep_research"].input_schema["properties"]) == {
        "topic",
        "documents_folder",
        "language",
    }
    assert "status" in tools["ask"].output_schema["properties"]
    assert "run_id" in tools["report"].output_schema["properties"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ambiguous_question_is_asked_back_by_elicitation(mode: str) -> None:
    """Which Deutsche? comes as a form with the seven choices, and the choice is answered,
    on the 2026-07-28 protocol (InputRequiredResult) and on earlier ones (elicitation/create)."""
    answerer = Answerer("Deutsche Börse")
    progress = Recorder()
    async with Client(_server(), elicitation_callback=answerer, mode=mode) as client:
        result = await client.call_tool(
            "ask", {"question": "Tell me about Deutsche"}, progress_callback=progress
        )
    reply = _structured(result)
    assert len(answerer.asked) == 1
    question, schema = answerer.asked[0]
    assert question.startswith("Which company do you mean")
    assert len(schema["properties"]["answer"]["enum"]) == 7
    assert reply["status"] == "answered"
    assert reply["company"] == "Deutsche Börse"
    assert reply["sources"]
    assert "Analyzing your question..." in progress.messages


async def test_without_elicitation_the_question_comes_back_and_the_next_ask_answers_it() -> None:
    """A client with no form gets the question, its choices and the conversation id; the
    next ask in that conversation answers it."""
    async with Client(_server()) as client:
        first = _structured(await client.call_tool("ask", {"question": "Tell me about Deutsche"}))
        assert first["status"] == "needs_clarification"
        assert "Deutsche Telekom" in first["choices"]
        second = _structured(
            await client.call_tool(
                "ask", {"question": "Deutsche Telekom", "conversation": first["conversation"]}
            )
        )
        follow = _structured(
            await client.call_tool(
                "ask", {"question": "Where is it based?", "conversation": first["conversation"]}
            )
        )
    assert second["status"] == "answered" and second["company"] == "Deutsche Telekom"
    assert follow["company"] == "Deutsche Telekom"


async def test_declined_elicitation_leaves_the_question_pending() -> None:
    """Declining the form returns the question with the conversation id, still answerable."""
    async with Client(_server(), elicitation_callback=Answerer(None)) as client:
        first = _structured(
            await client.call_tool("ask", {"question": "Tell me about the company"})
        )
        assert first["status"] == "needs_clarification"
        second = _structured(
            await client.call_tool(
                "ask", {"question": "Siemens", "conversation": first["conversation"]}
            )
        )
    assert second["status"] == "answered" and second["company"].startswith("Siemens")


async def test_report_is_saved_and_served_as_markdown_and_pdf_resources() -> None:
    """report writes Markdown and PDF; both (and the sources) are listed and read back as
    resources, the PDF as a blob; list_reports lists it."""
    progress = Recorder()
    async with Client(_server()) as client:
        report = _structured(
            await client.call_tool(
                "report", {"company": "Siemens", "pdf": True}, progress_callback=progress
            )
        )
        listed = [r.uri for r in (await client.list_resources()).resources]
        md = (await client.read_resource(report["resources"][0])).contents[0]
        pdf = (await client.read_resource(report["resources"][1])).contents[0]
        sources = (await client.read_resource(report["resources"][2])).contents[0]
        reports = _structured(await client.call_tool("list_reports", {}))
    assert report["status"] == "completed" and report["company"].startswith("Siemens")
    assert [uri.rsplit("/", 1)[1] for uri in report["resources"]] == [
        "report.md",
        "report.pdf",
        "sources.json",
    ]
    assert set(report["resources"]) <= set(listed)
    assert getattr(md, "text", "").startswith("#") and "Siemens" in md.text
    assert getattr(pdf, "mime_type", None) == "application/pdf"
    import base64

    assert base64.b64decode(pdf.blob).startswith(b"%PDF")
    assert json.loads(getattr(sources, "text", "null"))
    assert reports["reports"][0]["company"] == report["company"]
    assert progress.messages[0] == f"{report['run_id']}: started"
    assert "financial (financial[0]) done" in progress.messages


async def test_report_question_back_is_answered_with_continue_run() -> None:
    """Without elicitation a report on "Deutsche" returns the question and its run id;
    continue_run with the answer writes the report of the company chosen."""
    async with Client(_server()) as client:
        asked = _structured(await client.call_tool("report", {"company": "Deutsche"}))
        waiting = await client.call_tool("continue_run", {"run_id": asked["run_id"]})
        done = _structured(
            await client.call_tool(
                "continue_run", {"run_id": asked["run_id"], "answer": "Deutsche Börse"}
            )
        )
    assert asked["status"] == "needs_clarification" and "Deutsche Börse" in asked["choices"]
    assert waiting.is_error and "waits for an answer" in waiting.content[0].text
    assert done["kind"] == "report" and done["report"]["status"] == "completed"
    assert done["report"]["company"] == "Deutsche Börse"


@pytest.mark.slow
async def test_deep_research_reads_a_folder_under_a_docs_root(tmp_path: Path) -> None:
    """deep_research over a subfolder of the root: a cited report, listed as a session."""
    root = tmp_path / "docs"
    (root / "notes").mkdir(parents=True)
    for note in NOTES.glob("*.md"):
        (root / "notes" / note.name).write_text(note.read_text(encoding="utf-8"), encoding="utf-8")
    async with Client(_server([root])) as client:
        done = _structured(
            await client.call_tool(
                "deep_research",
                {"topic": "Spring Boot 2 to 3 migration", "documents_folder": "notes"},
            )
        )
        sessions = _structured(await client.call_tool("list_sessions", {}))
        report = (await client.read_resource(done["resources"][0])).contents[0]
    assert done["status"] == "completed" and done["mode"] == "docs"
    assert done["sources"] and "[S1]" in done["summary"]
    assert sessions["sessions"][0]["id"] == done["session_id"]
    assert "Spring Boot" in getattr(report, "text", "")


@pytest.mark.parametrize(
    "folder",
    ["../outside", "/etc", "link-out", "notes/../../outside"],
)
async def test_a_folder_outside_the_docs_roots_is_an_error_result(
    tmp_path: Path, folder: str
) -> None:
    """`..`, an absolute path and a symlink out of the root are refused as an isError result
    with the project's message naming the allowed folder, not a traceback."""
    root = tmp_path / "docs"
    (root / "notes").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link-out").symlink_to(tmp_path / "outside")
    async with Client(_server([root])) as client:
        result = await client.call_tool(
            "deep_research", {"topic": "anything", "documents_folder": folder}
        )
    text = result.content[0].text
    assert result.is_error
    assert "outside the allowed folders" in text and str(root.resolve()) in text
    assert "Traceback" not in text


async def test_errors_are_error_results_with_the_projects_message() -> None:
    """A bad conversation id, an unknown run id, a missing resource: the message says what
    is wrong; no traceback reaches the client."""
    async with Client(_server()) as client:
        bad = await client.call_tool("ask", {"question": "hi", "conversation": "../x"})
        unknown = await client.call_tool("continue_run", {"run_id": "nope"})
        missing = await client.call_tool("continue_run", {"run_id": "report-0000000000"})
        no_docs = await client.call_tool(
            "deep_research", {"topic": "x", "documents_folder": "/tmp"}
        )
        with pytest.raises(Exception, match=r"no report\.md"):
            await client.read_resource("research-fsm://reports/nothing-here/report.md")
    assert bad.is_error and "invalid conversation id '../x'" in bad.content[0].text
    assert unknown.is_error and "neither a report" in unknown.content[0].text
    assert missing.is_error and "there is no report `report-0000000000`" in missing.content[0].text
    assert no_docs.is_error and "--docs-root" in no_docs.content[0].text
    for result in (bad, unknown, missing, no_docs):
        assert "Traceback" not in result.content[0].text
