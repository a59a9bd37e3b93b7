"""The Q&A path with Claude in Japanese, and what it sends: the real ``anthropic`` SDK
against the loopback stand-in (``tests/servers/anthropic.py``), no SDK class mocked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from servers import FakeAnthropic
from servers import anthropic as api

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM
from research_fsm.sources import MockDataSource, SearchContext, SearchResult

_OPEN: list[AnthropicLLM] = []
JA_ANSWER = "アップルは新しい製品を発表しました。"


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def assistant_on(server: FakeAnthropic, source: MockDataSource) -> ResearchAssistant:
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=server.url, backoff=0.01)
    _OPEN.append(llm)
    return ResearchAssistant(llm=llm, source=source, store=MemoryCheckpointStore())


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def claude(question_back: str | None = None) -> Any:
    """Claude: the clarity verdict (Apple, or not clear with ``question_back``), a
    sufficient validation, a Japanese answer."""

    def answer(body: dict[str, Any]) -> Any:
        if "tools" not in body:
            return api.text(JA_ANSWER)
        if "is_sufficient" in body["tools"][0]["input_schema"]["properties"]:
            return api.tool_use("respond", {"is_sufficient": True, "reasoning": "ok"})
        if question_back is not None:
            verdict = {"is_clear": False, "clarification_needed": question_back}
            return api.tool_use("respond", verdict)
        return api.tool_use(
            "respond", {"is_clear": True, "detected_company": "Apple", "intent": "news"}
        )

    return answer


async def test_a_japanese_answer_has_no_english_disclaimer_or_sources_title(
    anthropic_server: FakeAnthropic,
) -> None:
    """Partial findings (confidence below high): the disclaimer and the sources' title are
    Japanese, as on the rule path; the prompt asks for Japanese; every schema sent
    describes its fields."""
    anthropic_server.auto(claude())
    source = MockDataSource(fields={"recent_news", "key_developments"})
    reply = await assistant_on(anthropic_server, source).ask(
        "アップルの最新ニュースを教えて", thread_id="ja-1"
    )
    assert reply.confidence < 8 and JA_ANSWER in reply.text
    assert "Sources:" not in reply.text and "\n出典:\n- " in reply.text
    assert "_I found some information" not in reply.text and "**Note**" not in reply.text
    assert reply.text.startswith("_情報は見つかりましたが")
    synthesis = [r for r in anthropic_server.requests if "tools" not in r.body]
    assert "Answer in: Japanese" in prompt_of(synthesis[0].body)
    assert [] == anthropic_server.schema_problems()


async def test_the_question_back_is_asked_in_the_users_language(
    anthropic_server: FakeAnthropic,
) -> None:
    """Claude is told the user writes Japanese; a question back it still writes in English
    is replaced by the Japanese one."""
    anthropic_server.auto(claude(question_back="Which company do you mean?"))
    reply = await assistant_on(anthropic_server, MockDataSource()).ask(
        "その会社について教えて", thread_id="ja-2"
    )
    assert "needs_clarification" == reply.status
    assert reply.text.startswith("どの会社について調べますか")
    assert "The user writes in Japanese" in prompt_of(anthropic_server.requests[0].body)


class HugeSource(MockDataSource):
    """Apple's mock findings with news of about 60,000 tokens."""

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        result = await super().search(company, context)
        assert result.findings is not None
        news = " ".join(f"Apple shipped product number {i}." for i in range(12_000))
        findings = result.findings.model_copy(update={"recent_news": news})
        return result.model_copy(update={"findings": findings, "confidence": 9})


async def test_the_synthesis_token_budget_is_applied(anthropic_server: FakeAnthropic) -> None:
    """Findings far over the 8,000-token synthesis budget are cut at a sentence, with a
    note saying so, before they reach Claude."""
    anthropic_server.auto(claude())
    await assistant_on(anthropic_server, HugeSource()).ask("Apple news?", thread_id="big")
    (synthesis,) = [r for r in anthropic_server.requests if "tools" not in r.body]
    prompt = prompt_of(synthesis.body)
    assert "cut to fit a budget of 8,000]" in prompt
    assert "product number 11999." not in prompt and len(prompt) < 60_000


async def test_failed_attempts_are_counted(anthropic_server: FakeAnthropic) -> None:
    """The validator's two misfit tool answers and two misfit JSON-in-text answers fall
    back to the rules, the question's usage still counts all four (they are paid for),
    and the reply notes it once."""

    def answer(body: dict[str, Any]) -> Any:
        if "tools" in body and "is_sufficient" in body["tools"][0]["input_schema"]["properties"]:
            return api.tool_use("respond", {"is_sufficient": "unsure"}, output_tokens=25)
        if "is_sufficient" in str(body.get("system")):  # asked for JSON in text
            return api.json_text({"is_sufficient": "unsure"}, output_tokens=25)
        return claude()(body)

    anthropic_server.auto(answer)
    source = MockDataSource(fields={"stock_info"}, full_from_attempt=2)
    reply = await assistant_on(anthropic_server, source).ask("What's new at Apple?", thread_id="u")
    assert "validator" in reply.path
    validator = reply.usage["validator"]
    assert (4, 100) == (validator.calls, validator.output_tokens) and validator.cost_usd
    assert ["validator: the LLM's answer could not be used (schema); the rules did this step"] == [
        note for note in reply.notes if note.startswith("validator")
    ]
