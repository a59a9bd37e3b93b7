"""Outputs that fit, models and cost: the real ``anthropic`` SDK against the loopback
stand-in (``tests/servers/anthropic.py``), no SDK class mocked."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from servers import FakeAnthropic
from servers import anthropic as api
from structlog.testing import capture_logs

from research_fsm.deep import AGENTS as DEEP_AGENTS
from research_fsm.deep._claude import SourceFacts
from research_fsm.llm import Agent, AnthropicLLM, LLMError, Price
from research_fsm.qa import AGENTS as QA_AGENTS
from research_fsm.qa.agents import ClarityVerdict, ValidationVerdict
from research_fsm.reports import AGENTS as REPORT_AGENTS

_OPEN: list[AnthropicLLM] = []
FACT = {"kind": "finding", "statement": "Java 17 is required.", "quote": "Java 17."}


@pytest.fixture(autouse=True)
async def _close_clients(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """No model variables from the environment; every client closed on the test's loop."""
    for name in [n for n in os.environ if n.startswith("RESEARCH_FSM_MODEL")]:
        monkeypatch.delenv(name)
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def make_llm(server: FakeAnthropic, **kwargs: Any) -> AnthropicLLM:
    options: dict[str, Any] = {"timeout": 2.0, "backoff": 0.01, "max_backoff": 0.05}
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=server.url, **options | kwargs)
    _OPEN.append(llm)
    return llm


async def test_a_structured_answer_cut_at_max_tokens_is_asked_again_with_twice_the_limit(
    anthropic_server: FakeAnthropic,
) -> None:
    """A tool call cut at the limit (``stop_reason: max_tokens``) is asked again once with
    twice the limit (not the same request again); the reply says so and both answers are
    counted."""
    limit = DEEP_AGENTS["deep_analysis"].max_tokens
    assert limit is not None
    anthropic_server.enqueue(
        api.cut_tool_use("respond", {}, output_tokens=limit),
        api.tool_use("respond", {"facts": [FACT]}, output_tokens=300),
    )
    reply = await make_llm(anthropic_server).structured(
        agent=DEEP_AGENTS["deep_analysis"].llm, system="s", prompt="p", schema=SourceFacts
    )
    limits = [r.body["max_tokens"] for r in anthropic_server.requests]
    assert [limit, 2 * limit] == limits
    assert ["Java 17."] == [fact.quote for fact in reply.value.facts]
    assert (2, limit + 300) == (reply.usage.calls, reply.usage.output_tokens)
    assert reply.note is not None and "cut at the 4,096-token output limit" in reply.note
    assert "asked again with 8,192" in reply.note


async def test_an_answer_cut_twice_fails_with_max_tokens_and_its_usage(
    anthropic_server: FakeAnthropic,
) -> None:
    """Cut again after the limit was raised, and cut as JSON in text at the raised limit:
    ``LLMError`` of kind ``max_tokens`` carrying what all three answers cost (they are paid for)."""
    anthropic_server.enqueue(
        api.cut_tool_use("respond", {}, output_tokens=100),
        api.cut_tool_use("respond", {}, output_tokens=200),
        api.cut_text('{"facts": [{"kind": "finding", "statem', output_tokens=200),
    )
    with pytest.raises(LLMError) as caught:
        await make_llm(anthropic_server, max_tokens={"verification": 100}).structured(
            agent="verification", system="s", prompt="p", schema=SourceFacts
        )
    assert "max_tokens" == caught.value.kind
    assert (3, 500) == (caught.value.usage.calls, caught.value.usage.output_tokens)
    assert [100, 200, 200] == [r.body["max_tokens"] for r in anthropic_server.requests]


async def test_a_schema_retry_sends_the_validation_error_back(
    anthropic_server: FakeAnthropic,
) -> None:
    """An answer that does not fit is not asked again with the same prompt: the second
    request carries Claude's answer and the validation error as the tool's result."""
    anthropic_server.enqueue(
        api.tool_use("respond", {"is_sufficient": "perhaps"}, id="toolu_first"),
        api.tool_use("respond", {"is_sufficient": True}),
    )
    reply = await make_llm(anthropic_server).structured(
        agent="validator", system="s", prompt="judge these", schema=ValidationVerdict
    )
    assert reply.value.is_sufficient and 2 == reply.usage.calls
    first, second = (r.body["messages"] for r in anthropic_server.requests)
    assert [{"role": "user", "content": "judge these"}] == first
    assert first[0] == second[0] and ["user", "assistant", "user"] == [m["role"] for m in second]
    assert {"is_sufficient": "perhaps"} == second[1]["content"][0]["input"]
    result = second[2]["content"][0]
    assert ("tool_result", "toolu_first", True) == (
        result["type"],
        result["tool_use_id"],
        result["is_error"],
    )
    assert "is_sufficient" in result["content"] and "boolean" in result["content"]
    assert reply.note is not None and "did not fit the schema" in reply.note


async def test_two_misfits_fail_with_the_usage_of_both(anthropic_server: FakeAnthropic) -> None:
    """Both tool answers and both JSON-in-text answers misfit: ``LLMError`` of kind
    ``schema``, with all four answers' tokens."""
    anthropic_server.enqueue(
        api.tool_use("respond", {"is_sufficient": "perhaps"}, output_tokens=30),
        api.tool_use("respond", {"is_sufficient": "still unsure"}, output_tokens=40),
        api.json_text({"is_sufficient": "no idea"}, output_tokens=5),
        api.text("I cannot say.", output_tokens=5),
    )
    with pytest.raises(LLMError) as caught:
        await make_llm(anthropic_server).structured(
            agent="validator", system="s", prompt="p", schema=ValidationVerdict
        )
    assert ("schema", 4, 80) == (
        caught.value.kind,
        caught.value.usage.calls,
        caught.value.usage.output_tokens,
    )
    assert caught.value.usage.cost_usd > 0


async def test_a_streamed_text_cut_at_max_tokens_is_continued_once(
    anthropic_server: FakeAnthropic,
) -> None:
    """Streamed text cut at the limit is continued from where it stopped (the text so far
    as the assistant's turn): the tokens stream on, nothing is written twice."""
    anthropic_server.enqueue(
        api.cut_text("## 概要\nSpring Boot 3 は Java 17 を", output_tokens=4096),
        api.text("必要とします。[S1]\n", output_tokens=12),
    )
    pieces: list[str] = []
    reply = await make_llm(anthropic_server).generate(
        agent="synthesis", system="s", prompt="write", on_token=pieces.append
    )
    assert "## 概要\nSpring Boot 3 は Java 17 を必要とします。[S1]\n" == reply.text
    assert reply.text == "".join(pieces)
    continued = anthropic_server.requests[1].body["messages"]
    assert {"role": "assistant", "content": "## 概要\nSpring Boot 3 は Java 17 を"} == continued[-1]
    assert (False, 2) == (reply.truncated, reply.usage.calls)
    assert reply.note is not None and "continued once" in reply.note


async def test_a_text_cut_twice_is_marked_truncated(anthropic_server: FakeAnthropic) -> None:
    anthropic_server.enqueue(api.cut_text("one two"), api.cut_text("three"))
    reply = await make_llm(anthropic_server).generate(agent="synthesizer", system="s", prompt="p")
    assert reply.truncated and "cut short" in (reply.note or "")
    assert 2 == len(anthropic_server.requests)


async def test_japanese_sized_output_limits_per_agent(anthropic_server: FakeAnthropic) -> None:
    """The limits sent for the apps' agents (from their tables): a four-section brief,
    claim verification and 8-fact extraction get room for Japanese (about twice the
    tokens of English), no longer 1,024-1,200."""
    anthropic_server.auto(lambda body: api.text("ok"))
    llm = make_llm(anthropic_server)
    agents = {
        "brief": DEEP_AGENTS["synthesis"].llm,
        "verification": DEEP_AGENTS["verification"].llm,
        "deep_analysis": DEEP_AGENTS["deep_analysis"].llm,
        "financial": REPORT_AGENTS["financial"].llm,
        "clarity": QA_AGENTS["clarity"].llm,
        "answer": QA_AGENTS["synthesis"].llm,
    }
    for agent in agents.values():
        await llm.generate(agent=agent, system="s", prompt="p")
    sent = {a: r.body["max_tokens"] for a, r in zip(agents, anthropic_server.requests, strict=True)}
    assert sent["brief"] >= 4096 and sent["verification"] >= 4096 and sent["answer"] >= 4096
    assert sent["deep_analysis"] >= 4096 and sent["financial"] >= 3072
    assert sent["clarity"] >= 1024


def test_every_schema_sent_describes_its_fields_and_caps_its_lists() -> None:
    """Every reply schema of every app: a description on each field, ``maxItems`` on
    each list (``schema_problems`` is also run on the requests of the apps' tests)."""
    from research_fsm.deep._claude import EnhancedQuery, ProposedQuotes, RatedSources
    from research_fsm.reports._quality import Verdict
    from research_fsm.reports._specialists import Extraction

    schemas = [
        ClarityVerdict,
        ValidationVerdict,
        Extraction,
        Verdict,
        EnhancedQuery,
        RatedSources,
        SourceFacts,
        ProposedQuotes,
    ]
    problems = {s.__name__: api.schema_problems(s.model_json_schema()) for s in schemas}
    assert {s.__name__: [] for s in schemas} == problems
    intents = ClarityVerdict.model_json_schema()["properties"]["intent"]
    assert "financials" in intents["enum"] and "comparison" in intents["enum"]
    facts = SourceFacts.model_json_schema()["properties"]["facts"]
    assert 8 == facts["maxItems"]
    assert 8 == len(SourceFacts.model_validate({"facts": [FACT] * 9}).facts)


async def test_a_model_per_agent_from_the_environment(
    anthropic_server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RESEARCH_FSM_MODEL`` for every agent, ``RESEARCH_FSM_MODEL_<AGENT>`` for one:
    each request names its agent's model and is priced at that model's price."""
    monkeypatch.setenv("RESEARCH_FSM_MODEL", "claude-opus-5")
    monkeypatch.setenv("RESEARCH_FSM_MODEL_FINANCIAL", "claude-haiku-4-5")
    anthropic_server.auto(
        lambda body: api.text("ok", input_tokens=1_000_000, output_tokens=1_000_000)
    )
    llm = make_llm(anthropic_server, models={"market": "claude-sonnet-5"})
    costs = {
        agent: (await llm.generate(agent=agent, system="s", prompt="p")).usage.cost_usd
        for agent in ("financial", "market", "synthesizer")
    }
    models = [r.body["model"] for r in anthropic_server.requests]
    assert ["claude-haiku-4-5", "claude-sonnet-5", "claude-opus-5"] == models
    assert {"financial": 6.0, "market": 12.0, "synthesizer": 30.0} == costs
    assert ("claude-opus-5", "claude-haiku-4-5") == (llm.model, llm.model_for("financial"))


async def test_a_model_without_a_price_warns_once(anthropic_server: FakeAnthropic) -> None:
    """An unknown model's cost is unknown (``None``, not $0.00), and one structlog warning
    says so (not one per call); a price passed in counts."""
    anthropic_server.auto(lambda body: api.text("ok", input_tokens=1000, output_tokens=1000))
    llm = make_llm(anthropic_server, model="claude-unpriced-test-1")
    with capture_logs() as logs:
        first = await llm.generate(agent="synthesis", system="s", prompt="p")
        await llm.generate(agent="clarity", system="s", prompt="p")
    warned = [e for e in logs if e["log_level"] == "warning" and "no price" in e["event"]]
    assert [("claude-unpriced-test-1", None)] == [
        (e["model"], first.usage.cost_usd) for e in warned
    ]
    priced = make_llm(
        anthropic_server,
        model="claude-unpriced-test-2",
        prices={"claude-unpriced-test-2": Price(1, 1)},
    )
    with capture_logs() as logs:
        reply = await priced.generate(agent="synthesis", system="s", prompt="p")
    assert reply.usage.cost_usd == 0.002 and not [e for e in logs if "no price" in e["event"]]


async def test_a_stream_broken_mid_way_counts_what_it_cost(anthropic_server: FakeAnthropic) -> None:
    """A streamed answer broken by ``event: error`` after some text fails (it is not
    asked again: its tokens were shown), and the error's usage counts that request's
    tokens as ``message_start`` gave them."""
    anthropic_server.enqueue(api.stream_error(partial_text="Apple is"))
    with pytest.raises(LLMError) as failed:
        await make_llm(anthropic_server).generate(agent="synthesis", system="s", prompt="p")
    assert (1, 10) == (failed.value.usage.calls, failed.value.usage.input_tokens)


async def test_a_stream_broken_before_its_text_is_counted_with_the_retry(
    anthropic_server: FakeAnthropic,
) -> None:
    """A stream broken before any text is asked again; the reply's usage counts both
    requests, the broken one included."""
    anthropic_server.enqueue(
        api.stream_error(partial_text=""), api.text("Apple makes phones.", input_tokens=7)
    )
    reply = await make_llm(anthropic_server).generate(agent="synthesis", system="s", prompt="p")
    assert "Apple makes phones." == reply.text
    assert (2, 10 + 7) == (reply.usage.calls, reply.usage.input_tokens)


async def test_a_refused_continuation_keeps_the_cut_text_and_says_so(
    anthropic_server: FakeAnthropic,
) -> None:
    """When the API refuses to continue a cut answer (HTTP 400 for the assistant turn),
    the text so far is kept, marked cut, with a note saying the continuation failed; the
    refused request is not billed, so the usage is the first answer's."""
    anthropic_server.enqueue(
        api.cut_text("Apple makes phones and", output_tokens=4096),
        api.error(400, "invalid_request_error", "assistant prefill is not supported"),
    )
    reply = await make_llm(anthropic_server).generate(agent="synthesis", system="s", prompt="p")
    assert ("Apple makes phones and", True) == (reply.text, reply.truncated)
    assert reply.note is not None and "continuing it failed (other)" in reply.note
    assert (2, 1, 4096) == (
        len(anthropic_server.requests),
        reply.usage.calls,
        reply.usage.output_tokens,
    )


async def test_the_output_limit_comes_from_the_agent_called_for(
    anthropic_server: FakeAnthropic,
) -> None:
    """Each request's ``max_tokens`` is the budget the calling ``Agent`` carries; a plain
    name gets the client's default, and ``max_tokens=`` by name overrides the agent's."""
    anthropic_server.auto(lambda body: api.text("ok"))
    llm = make_llm(anthropic_server, max_tokens={"tight": 100})
    for agent in (Agent("roomy", max_tokens=777), "plain", Agent("tight", max_tokens=900)):
        await llm.generate(agent=agent, system="s", prompt="p")
    limits = [r.body["max_tokens"] for r in anthropic_server.requests]
    assert [777, 2048, 100] == limits


async def test_an_agent_may_carry_its_default_model(anthropic_server: FakeAnthropic) -> None:
    """An ``Agent`` with a model is sent with that model unless ``models=`` names another
    for it; an agent without one uses the client's model."""
    anthropic_server.auto(lambda body: api.text("ok"))
    llm = make_llm(anthropic_server, model="claude-opus-5", models={"b": "claude-sonnet-5"})
    for agent in (
        Agent("a", model="claude-haiku-4-5"),
        Agent("b", model="claude-haiku-4-5"),
        Agent("c"),
    ):
        await llm.generate(agent=agent, system="s", prompt="p")
    models = [r.body["model"] for r in anthropic_server.requests]
    assert ["claude-haiku-4-5", "claude-sonnet-5", "claude-opus-5"] == models
