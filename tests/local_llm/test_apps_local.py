"""Every app end to end against a local model: the real ``anthropic`` client, configured
by ``RESEARCH_FSM_LLM_URL`` and ``RESEARCH_FSM_MODEL``, talks to the Ollama-style
stand-in of ``tests/servers/local_llm.py`` in each small-model failure mode, in English
and Japanese. Each run completes, says once what degraded, and costs are unknown."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deep.llm import analyse, query, rate, verify
from deep.test_deep_sdk import prompt_of
from servers.local_llm import FAILURE_MODES, LocalLLM

from research_fsm import ResearchAssistant
from research_fsm.common.text import is_japanese
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import llm_from_env
from research_fsm.sources import DirectorySource

MODEL = "qwen3:4b"
NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"
QUESTIONS = {
    "en": ("What's happening with Apple?", "Apple Inc."),
    "ja": ("トヨタ自動車の最近の動きは？", "Toyota"),
}
COMPANIES = {"en": "Apple", "ja": "トヨタ自動車"}
TOPICS = {"en": "Spring Boot 2 to 3 migration", "ja": "Spring Boot 3 への移行"}

# what each mode leaves in the notes, for an agent: the JSON-in-text answer was used, or the rules
USED_JSON = "{agent}: the model qwen3:4b did not answer through the tool ({kind}); its answer was asked for as JSON in text"
IN_TEXT = "{agent}: the model qwen3:4b answered in text, not through the tool"
RULES = "{agent}: the LLM's answer could not be used ({kind})"
EXPECTED: dict[str | None, str | None] = {
    None: None,
    "text_for_tool": USED_JSON.replace("{kind}", "schema"),
    "json_with_prose": IN_TEXT,
    "truncated_json": RULES.replace("{kind}", "schema"),
    "missing_field": RULES.replace("{kind}", "schema"),
    "max_tokens": RULES.replace("{kind}", "max_tokens"),
}


FACT = re.compile(r"^- \((\w+)\) (.*) \[(S\d+)\]$", re.M)


def draft(prompt: str) -> str:
    """A brief citing the facts given that are sentences (not headings), one per line."""
    facts = [(text, sid) for _, text, sid in FACT.findall(prompt) if not text.startswith("#")]
    return "## Summary\n" + " ".join(f"{text} [{sid}]" for text, sid in facts[:3]) + "\n"


def brain(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """What a capable model would answer, reading each agent's prompt."""
    prompt = prompt_of(body)
    japanese = is_japanese(prompt)
    if schema is None:
        if "\n- (" in prompt:  # deep research's brief: the facts given, cited
            return draft(prompt)
        return "最新の動向をまとめました。" if japanese else "Here is what is new, in short."
    fields = schema["properties"]
    if "is_clear" in fields:
        company = "Toyota" if "トヨタ" in prompt else "Apple Inc."
        return {
            "is_clear": True,
            "detected_company": company,
            "intent": "general",
            "reasoning": "named",
        }
    if "ok" in fields:  # research-fsm doctor's tiny call
        return {"ok": True}
    if "is_sufficient" in fields:
        return {"is_sufficient": True, "reasoning": "enough"}
    if "completeness" in fields:
        return {"completeness": 38, "accuracy": 27, "depth": 25, "missing": []}
    for name, respond in (
        ("query", query),
        ("results", rate),
        ("facts", analyse),
        ("quotes", verify),
    ):
        if name in fields:
            return respond(prompt)
    raise AssertionError(f"unexpected schema {sorted(fields)}")


@pytest.fixture(params=[None, *FAILURE_MODES], ids=lambda mode: mode or "follows")
def local(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalLLM]:
    """The stand-in in one failure mode, configured the way a user would: by environment."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TAVILY_API_KEY", "RESEARCH_DOCS"):
        monkeypatch.delenv(name, raising=False)
    with LocalLLM(brain, mode=request.param) as server:
        monkeypatch.setenv("RESEARCH_FSM_LLM_URL", server.url)
        monkeypatch.setenv("RESEARCH_FSM_MODEL", MODEL)
        yield server


DIRECTORY = DirectorySource()
"""The offline directory, loaded once for the module (it takes seconds)."""


def assistant() -> ResearchAssistant:
    """The assistant with the LLM the environment names (as the CLI makes it), the
    offline directory, in memory."""
    return ResearchAssistant(llm=llm_from_env(), source=DIRECTORY, store=MemoryCheckpointStore())


def said_once(notes: list[str], text: str, mode: str | None, agents: tuple[str, ...]) -> None:
    """The mode's note is there, once, for at least one agent (none when the model follows)."""
    expected = EXPECTED[mode]
    if expected is None:
        assert [] == [n for n in notes if "could not be used" in n or "through the tool" in n]
        return
    wanted = [expected.replace("{agent}", agent) for agent in agents]
    found = [w for w in wanted if any(note.startswith(w) for note in notes)]
    assert found, (wanted, notes)
    for note in found:
        assert 1 == text.count(note), note


def no_cost(usage: dict[str, Any]) -> None:
    """Calls were made, their tokens are the server's, and the cost is unknown, not $0."""
    assert sum(u.calls for u in usage.values()) > 0
    assert all(u.cost_usd is None for u in usage.values() if u.calls)


@pytest.mark.parametrize("lang", ["en", "ja"])
async def test_qa_completes_and_says_what_degraded(local: LocalLLM, lang: str) -> None:
    """A question gets an answer about the company in each mode; the reply's notes say
    once what degraded; the usage line says the cost is unknown."""
    question, company = QUESTIONS[lang]
    async with _closing(assistant()) as helper:
        reply = await helper.ask(question, thread_id=f"t-{lang}")
    assert ("answered", company) == (reply.status, reply.company)
    assert reply.text.strip()
    said_once(reply.notes, "\n".join(reply.notes), local.mode, ("clarity", "validator"))
    no_cost(reply.usage)
    assert reply.usage_line().endswith("cost unknown")
    assert not local.errors


@pytest.mark.parametrize("lang", ["en", "ja"])
async def test_report_completes_and_says_what_degraded(
    local: LocalLLM, lang: str, tmp_path: Path
) -> None:
    """A company report is written in each mode; its notes say once what degraded; its
    metadata says the cost is unknown."""
    async with _closing(assistant()) as helper:
        report = await helper.report(COMPANIES[lang], language=lang, out=tmp_path)  # type: ignore[arg-type]
    assert report.markdown.strip() and report.company
    markdown = report.markdown.replace("\\_", "_")  # Markdown escapes underscores
    bullets = [line.removeprefix("- ") for line in markdown.splitlines()]
    said_once(bullets, markdown, local.mode, ("quality",))
    no_cost(report.usage)
    assert "cost unknown" in report.markdown and "cost unknown" in report.summary_line()
    assert not local.errors


@pytest.mark.parametrize("lang", ["en", "ja"])
async def test_deep_research_completes_and_says_what_degraded(local: LocalLLM, lang: str) -> None:
    """Deep research over the example notes completes in each mode; the report's notes
    say once what degraded; its cost is unknown."""
    async with _closing(assistant()) as helper:
        report = await helper.deep_research(TOPICS[lang], language=lang, docs=NOTES)  # type: ignore[arg-type]
    assert "completed" == report.status
    assert report.sources
    agents = ("query_parser", "relevance_filter", "deep_analysis", "verification")
    said_once(report.notes, report.markdown.replace("\\_", "_"), local.mode, agents)
    no_cost(report.usage)
    assert report.cost_usd is None
    assert not local.errors


class _closing:
    """``async with`` for an assistant: closed at the end (its LLM client's connections)."""

    def __init__(self, helper: ResearchAssistant) -> None:
        self.helper = helper

    async def __aenter__(self) -> ResearchAssistant:
        return self.helper

    async def __aexit__(self, *exc: object) -> None:
        await self.helper.aclose()
