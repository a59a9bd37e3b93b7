"""The Claude path through the real ``anthropic`` SDK against a loopback server."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from servers import anthropic as api
from structlog.testing import capture_logs

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM, LLMError, Price
from research_fsm.qa import Answer, Token
from research_fsm.qa.agents import ClarityVerdict
from research_fsm.sources import MockDataSource

_OPEN: list[AnthropicLLM] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    """Close every client a test made while its event loop still runs."""
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def make_llm(server: Any, **kwargs: Any) -> AnthropicLLM:
    options: dict[str, Any] = {"timeout": 2.0, "backoff": 0.01, "max_backoff": 0.05}
    options.update(kwargs)
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=server.url, **options)
    _OPEN.append(llm)
    return llm


def assistant_with(llm: AnthropicLLM, source: MockDataSource | None = None) -> ResearchAssistant:
    return ResearchAssistant(
        llm=llm, source=source or MockDataSource(), store=MemoryCheckpointStore()
    )


def clarity(company: str | None, *, clear: bool = True, intent: str = "overview") -> Any:
    return api.tool_use(
        "respond",
        {"is_clear": clear, "detected_company": company, "intent": intent, "reasoning": "r"},
    )


async def test_structured_output_uses_forced_tool(anthropic_server: Any) -> None:
    """Structured output forces a tool whose input schema is the model's JSON schema."""
    anthropic_server.enqueue(clarity("Apple Inc."))
    reply = await make_llm(anthropic_server, model="claude-haiku-4-5").structured(
        agent="clarity", system="s", prompt="p", schema=ClarityVerdict
    )
    assert "Apple Inc." == reply.value.detected_company
    body = anthropic_server.requests[0].body
    assert {"type": "tool", "name": "respond"} == body["tool_choice"]
    assert "detected_company" in body["tools"][0]["input_schema"]["properties"]
    assert "claude-haiku-4-5" == body["model"]
    headers = anthropic_server.requests[0].headers
    assert "sk-ant-test-key-123456" in (
        headers.get("x-api-key", "") + headers.get("authorization", "")
    )


async def test_happy_path_two_calls_streamed_and_costed(anthropic_server: Any) -> None:
    """A clear question: clarity + synthesis (2 calls), tokens streamed, usage and cost reported."""
    anthropic_server.enqueue(
        clarity("Apple", intent="news"),
        api.text("Apple launched Vision Pro and beat earnings.", input_tokens=100, output_tokens=8),
    )
    llm = make_llm(
        anthropic_server, model="claude-sonnet-5", prices={"claude-sonnet-5": Price(2.0, 10.0)}
    )
    events = [
        e async for e in assistant_with(llm).stream("What's happening with Apple?", thread_id="a1")
    ]
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert len(tokens) > 3
    assert "".join(tokens).startswith("Apple launched Vision Pro and beat earnings.")
    answer = events[-1]
    assert isinstance(answer, Answer)
    reply = answer.reply
    assert ["clarity", "research", "synthesis"] == reply.path
    assert 2 == len(anthropic_server.requests)
    assert True is anthropic_server.requests[1].body.get("stream")
    assert {"clarity": 1, "synthesis": 1} == {k: v.calls for k, v in reply.usage.items()}
    assert 100 == reply.usage["synthesis"].input_tokens
    assert round((100 * 2.0 + 8 * 10.0) / 1e6, 6) == reply.usage["synthesis"].cost_usd
    assert "LLM: 2 calls" in reply.usage_line()
    assert "https://www.apple.com/investor-relations/" in reply.text or "Sources:" in reply.text


async def test_validator_uses_llm_verdict(anthropic_server: Any) -> None:
    """The validator's structured verdict decides the retry and its feedback reaches research."""
    source = MockDataSource(fields={"stock_info"}, full_from_attempt=2)

    def answer(body: dict[str, Any]) -> Any:
        if "tools" not in body:
            return api.text("Apple news.")
        schema = body["tools"][0]["input_schema"]["properties"]
        if "is_sufficient" in schema:
            return api.tool_use(
                "respond", {"is_sufficient": False, "feedback": "look for product launches"}
            )
        return clarity("Apple", intent="news")

    anthropic_server.auto(answer)
    reply = await assistant_with(make_llm(anthropic_server), source).ask(
        "What's new at Apple?", thread_id="a2"
    )
    assert ["clarity", "research", "validator", "research", "synthesis"] == reply.path
    assert "look for product launches" == source.calls[1][1].feedback


@pytest.mark.parametrize(
    "failure",
    [
        api.error(529, "overloaded_error", "Overloaded"),
        api.error(500, "api_error", "Internal server error"),
        api.error(429, "rate_limit_error", "Slow down", retry_after=0.01),
    ],
    ids=["529", "500", "429"],
)
async def test_transient_storm_falls_back_to_rules(anthropic_server: Any, failure: Any) -> None:
    """A storm of transient errors is retried a bounded number of times, then the rules answer."""
    anthropic_server.default = failure
    started = time.monotonic()
    with capture_logs() as logs:
        reply = await assistant_with(make_llm(anthropic_server, max_attempts=3)).ask(
            "Tell me about Microsoft", thread_id="a3"
        )
    assert "answered" == reply.status
    assert "Microsoft Corporation" == reply.company
    assert "Here's what I found about Microsoft Corporation:" in reply.text
    assert 6 == len(anthropic_server.requests)  # clarity and synthesis, 3 attempts each
    fallbacks = [e for e in logs if e["event"] == "LLM failed; using the rule-based path"]
    assert ["clarity", "synthesis"] == [e["agent"] for e in fallbacks]
    assert time.monotonic() - started < 10


async def test_retry_after_honoured_then_success(anthropic_server: Any) -> None:
    """A 429 with retry-after is retried and the second answer is used."""
    anthropic_server.enqueue(
        api.error(429, "rate_limit_error", "Slow down", retry_after=0.2), clarity("Tesla")
    )
    started = time.monotonic()
    reply = await make_llm(anthropic_server, max_backoff=1.0).structured(
        agent="clarity", system="s", prompt="p", schema=ClarityVerdict
    )
    assert "Tesla" == reply.value.detected_company
    assert 2 == len(anthropic_server.requests)
    assert time.monotonic() - started >= 0.2


async def test_timeout_falls_back(anthropic_server: Any) -> None:
    """An answer slower than the timeout ends in the rule-based answer within a bounded time."""
    anthropic_server.default = api.delay(3.0, clarity("Apple"))
    started = time.monotonic()
    reply = await assistant_with(make_llm(anthropic_server, timeout=0.3, max_attempts=2)).ask(
        "Tell me about Amazon", thread_id="a4"
    )
    assert "Amazon.com, Inc." == reply.company
    assert time.monotonic() - started < 5


async def test_malformed_output_retried_once_then_rules(anthropic_server: Any) -> None:
    """Output that does not fit the schema is retried once, then asked for as JSON in
    text (twice: without tools, the schema in the system prompt), then the rules take over."""
    anthropic_server.enqueue(
        api.tool_use("respond", {"detected_company": 42}),
        api.tool_use("respond", {"is_clear": "maybe?"}),
    )
    llm = make_llm(anthropic_server)
    with pytest.raises(LLMError) as caught:
        await llm.structured(agent="clarity", system="s", prompt="p", schema=ClarityVerdict)
    assert "schema" == caught.value.kind
    requests = anthropic_server.requests
    assert [True, True, False, False] == ["tools" in r.body for r in requests]
    assert all('"is_clear"' in r.body["system"].split("<schema>")[1] for r in requests[2:])


async def test_non_json_body_falls_back(anthropic_server: Any) -> None:
    """A 200 whose body is not JSON is a failed call, and the user still gets an answer."""
    anthropic_server.default = api.raw(200, b"<html>oops</html>", content_type="text/html")
    reply = await assistant_with(make_llm(anthropic_server)).ask(
        "Tell me about Tesla", thread_id="a5"
    )
    assert "Tesla, Inc." == reply.company
    assert "answered" == reply.status


async def test_auth_error_not_retried_one_message(anthropic_server: Any) -> None:
    """A 401 is not retried, switches Claude off with one clear message, and the rules answer."""
    anthropic_server.default = api.error(401, "authentication_error", "invalid x-api-key")
    with capture_logs() as logs:
        reply = await assistant_with(make_llm(anthropic_server)).ask(
            "Tell me about Apple", thread_id="a6"
        )
    assert "Apple Inc." == reply.company
    assert 1 == len(anthropic_server.requests)
    errors = [e for e in logs if e["log_level"] == "error"]
    assert 1 == len(errors)
    assert "ANTHROPIC_API_KEY" in errors[0]["detail"]
    assert all("sk-ant-test-key-123456" not in str(e) for e in logs)


async def test_clarity_budget_truncates_long_context(anthropic_server: Any) -> None:
    """Conversation context over the clarity budget is cut and marked as truncated in the prompt."""
    anthropic_server.auto(lambda body: clarity("Apple") if "tools" in body else api.text("ok"))
    assistant = assistant_with(make_llm(anthropic_server))
    long_question = "Tell me about Apple. " + "This is filler text for the budget test. " * 420
    for _ in range(5):
        await assistant.ask(long_question[:3900], thread_id="a7")
    await assistant.ask("And their stock?", thread_id="a7")
    prompt = anthropic_server.requests[-2].body["messages"][0]["content"]
    assert "[truncated: " in prompt


def test_repr_hides_key(anthropic_server: Any) -> None:
    """The client's repr names the model and URL but never the key."""
    llm = make_llm(anthropic_server)
    assert "sk-ant-test-key-123456" not in repr(llm)
    assert anthropic_server.url in repr(llm)


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key at all is a ValueError naming ANTHROPIC_API_KEY."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicLLM()


def test_cli_uses_claude_from_environment(anthropic_server: Any, tmp_path: Any) -> None:
    """With ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL set, the CLI thinks with Claude and reports usage."""
    import json
    import os
    import subprocess
    import sys

    anthropic_server.auto(
        lambda body: (
            clarity("Apple", intent="news") if "tools" in body else api.text("Apple is fine.")
        )
    )
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "sk-ant-test-key-123456",
        "ANTHROPIC_BASE_URL": anthropic_server.url,
        "RESEARCH_FSM_HOME": str(tmp_path),
        "RESEARCH_DATA_SOURCE": "mock",
    }
    env.pop("TAVILY_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-m", "research_fsm", "ask", "What's happening with Apple?", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert 0 == result.returncode, result.stderr
    reply = json.loads(result.stdout)
    assert reply["text"].startswith("Apple is fine.")
    assert {"clarity": 1, "synthesis": 1} == {k: v["calls"] for k, v in reply["usage"].items()}
    assert "sk-ant-test-key-123456" not in result.stdout + result.stderr
    stored = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert [] != [p for p in stored if p.name.endswith(".jsonl")]  # the conversation was saved
    assert [] == [p.name for p in stored if b"sk-ant-test-key-123456" in p.read_bytes()]


@pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY") or bool(os.environ.get("ANTHROPIC_BASE_URL")),
    reason="needs a real ANTHROPIC_API_KEY (and no ANTHROPIC_BASE_URL)",
)
async def test_real_claude_answers() -> None:
    """Against the real API (only with a real key): a question is answered with 2 calls."""
    llm = AnthropicLLM()
    _OPEN.append(llm)
    reply = await assistant_with(llm).ask("What's happening with Apple?", thread_id="real")
    assert "answered" == reply.status
    assert 2 == sum(u.calls for u in reply.usage.values())
