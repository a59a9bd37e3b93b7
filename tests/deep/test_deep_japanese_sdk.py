"""Deep research in Japanese with Claude and Tavily, and briefs that do not fit: the real
``anthropic`` and ``tavily`` clients against the loopback stand-ins (no SDK class mocked)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv

from research_fsm import ResearchAssistant
from research_fsm.deep import WebSearch
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM
from research_fsm.sources import TavilyWebSearch

from .conftest import BAELDUNG, PREPARING, SPRING, TOPIC
from .llm import analyse, query, rate
from .test_deep_sdk import page, prompt_of

CLAIM = re.compile(r"^(C\d+): (.*) \(cites (.*)\)$", re.M)
FACT = re.compile(r"^- \((\w+)\) (.*) \[(S\d+)\]$", re.M)


def japanese_brief(prompt: str) -> str:
    """A brief in Japanese under Japanese headings Claude may choose (not the format's
    English ones): each sentence wraps one fact given, cited."""
    facts = FACT.findall(prompt)[:4]
    (_, one, s1), (_, two, s2), (_, three, s3), (_, four, s4) = facts
    return (
        f"## まとめ\n{one}とされています。[{s1}]\n\n"
        f"## 主なポイント\n- {two}という点が重要です。[{s2}]\n\n"
        f"## 1. 進め方\n1. {three}を確認します。[{s3}]\n\n"
        f"## 注意事項\n- {four}に注意してください。[{s4}]\n"
    )


def verify_wrapped(prompt: str) -> dict[str, Any]:
    """Claude's quotes: for each claim, the sentence of its cited source that the claim
    wraps (the fact's quote is the source's sentence)."""
    sources = dict(re.findall(r'<source id="(S\d+)"[^>]*>\n(.*?)\n</source>', prompt, re.S))
    quotes = []
    for cid, text, cites in CLAIM.findall(prompt):
        sid = cites.split(",")[0].strip()
        found = [s for s in re.split(r"(?<=\.)\s+", sources.get(sid, "")) if s and s in text]
        quotes.append(
            {"claim": cid, "source": sid if found else None, "quote": found[0] if found else None}
        )
    return {"quotes": quotes}


def claude(draft: Callable[[str], Any]) -> Callable[[dict[str, Any]], Any]:
    """Claude reading each stage's prompt; ``draft`` answers the synthesis."""

    def answer(body: dict[str, Any]) -> Any:
        prompt = prompt_of(body)
        if "tools" not in body:
            return draft(prompt)
        fields = body["tools"][0]["input_schema"]["properties"]
        for name, respond in (
            ("query", query),
            ("results", rate),
            ("facts", analyse),
            ("quotes", verify_wrapped),
        ):
            if name in fields:
                return api.tool_use("respond", respond(prompt))
        raise AssertionError(f"unexpected schema {sorted(fields)}")

    return answer


def on_servers(anthropic: FakeAnthropic, tavily: FakeTavily) -> ResearchAssistant:
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=anthropic.url)
    web = WebSearch(
        TavilyWebSearch("tvly-test-secret-0123456789", base_url=tavily.url, backoff=0.0)
    )
    return ResearchAssistant(llm=llm, store=MemoryCheckpointStore(), web_search=web)


def corpus(body: dict[str, Any]) -> Any:
    return tv.results([page(SPRING), page(PREPARING), page(BAELDUNG)])


async def test_a_japanese_brief_under_japanese_headings_keeps_its_claims(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Headings Claude writes in Japanese (まとめ, 主なポイント, a numbered one, 注意事項)
    still open the four sections: every claim is kept and verified, none is dropped into
    "nothing verified"; the prompt keeps the headings in English; every schema sent
    describes its fields."""
    anthropic_server.auto(claude(lambda prompt: api.text(japanese_brief(prompt))))
    tavily_server.auto(corpus)
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC, language="ja")
    assert "completed" == report.status
    assert (4, 4, 1.0) == (
        report.verification["claims"],
        report.verification["supported"],
        report.verification["ratio"],
    )
    assert "とされています。" in report.summary
    assert 1 == len(report.key_points) and 1 == len(report.steps) and 1 == len(report.caveats)
    assert "## 要点" in report.markdown and "## 手順" in report.markdown
    synthesis = next(r for r in anthropic_server.requests if "tools" not in r.body)
    assert "Keep these four headings exactly as written here, in English" in prompt_of(
        synthesis.body
    )
    assert "Write in Japanese" in prompt_of(synthesis.body)
    assert [] == anthropic_server.schema_problems()


async def test_a_brief_cut_at_max_tokens_is_continued_and_noted(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """The brief stops at the output limit: it is continued once from where it stopped
    (not rewritten), the run's notes say so, the calls are counted (7 without
    verification: one more than the table's 6, for the continuation)."""
    continued_from: list[str] = []

    def draft(prompt: str) -> Any:
        whole = japanese_brief(prompt)
        written = whole[: whole.index("## 1. 進め方")]
        if not continued_from:
            return api.cut_text(written, output_tokens=4096)
        assert [written.rstrip()] == continued_from
        return api.text(whole[len(written.rstrip()) :])  # on from where it stopped

    def answer(body: dict[str, Any]) -> Any:
        if "tools" not in body and "assistant" == body["messages"][-1]["role"]:
            continued_from.append(body["messages"][-1]["content"])
        return claude(draft)(body)

    anthropic_server.auto(answer)
    tavily_server.auto(corpus)
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC, language="ja")
    assert (4, 1.0) == (report.verification["claims"], report.verification["ratio"])
    assert (1, 1) == (len(report.steps), len(report.caveats))
    assert 2 == report.llm_calls["synthesis"]
    continued = [r for r in anthropic_server.requests if "tools" not in r.body][1]
    assert "assistant" == continued.body["messages"][-1]["role"]
    assert any("4,096-token output limit and was continued once" in n for n in report.notes)
    assert "continued once" in report.markdown
