"""Service faults: the real Claude and Tavily clients against misbehaving loopback servers.

Every question gets an answer (the rule-based one when Claude fails, "I couldn't find"
with the reason when Tavily fails) within ``BOUND`` seconds, each call makes at most
``ATTEMPTS`` requests, and nothing hangs.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv
from servers._http import Exchange, Reply

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM
from research_fsm.qa import Answer, Token
from research_fsm.sources._tavily import TavilySource

BOUND = 15.0
"""Seconds any one question may take, whatever the servers do."""
TIMEOUT = 0.5
"""Per-request timeout of both clients."""
ATTEMPTS = 3
"""Requests per call at most (the clients' ``max_attempts``)."""
CLAUDE_KEY = "sk-ant-faults-0123456789"
TAVILY_KEY = "tvly-faults-0123456789"

QUESTION = "What's the latest news about Apple?"
COMPANY = "Apple Inc."
RULES_ANSWER = f"Here's what I found about {COMPANY}:"
CLAUDE_ANSWER = "Apple shipped a new iPhone and settled with the EU."
NEWS = [
    tv.result(
        "Apple unveils new iPhone",
        "https://news.example.com/iphone",
        "Apple presented its new iPhone lineup at the September event.",
        0.93,
    ),
    tv.result(
        "Apple settles EU case",
        "https://www.reuters.example/apple-eu",
        "Apple reached an agreement with EU regulators on App Store rules.",
        0.88,
    ),
    tv.result(
        "Apple opens store in Mumbai",
        "https://press.example.org/mumbai",
        "The company opened a flagship store in Mumbai on Tuesday.",
        0.71,
    ),
]


def clarity_ok() -> Reply:
    """Claude's verdict: clear, Apple, news."""
    return api.tool_use(
        "respond",
        {"is_clear": True, "detected_company": "Apple", "intent": "news", "reasoning": "named"},
    )


# -- faults the scripted replies do not cover -----------------------------------------


def _first_events(exchange: Exchange, count: int) -> None:
    """Start an SSE answer and send its first ``count`` events (some text included)."""
    exchange.begin_stream()
    events = api.text("Apple is doing well and").events(exchange.request, "msg_01partial")
    for index, event in enumerate(events):
        if index == count:
            return
        exchange.write(event)


class CutMidStream(Reply):
    """Some streamed text, then the connection drops."""

    def respond(self, exchange: Exchange) -> None:
        _first_events(exchange, 4)
        exchange.abort()


class StallMidStream(Reply):
    """Some streamed text, then silence far longer than the client's timeout."""

    def respond(self, exchange: Exchange) -> None:
        _first_events(exchange, 4)
        exchange.sleep(60)
        exchange.abort()


# -- the rig ---------------------------------------------------------------------------


@dataclass
class Rig:
    """An assistant thinking with Claude and searching with Tavily on the loopback servers."""

    claude: FakeAnthropic
    tavily: FakeTavily
    llm: AnthropicLLM
    assistant: ResearchAssistant

    async def ask(self, question: str = QUESTION, thread_id: str = "t1") -> tuple[Any, float]:
        """The reply and the seconds it took (failing, not hanging, past ``BOUND``)."""
        await self.assistant.graph()  # the company index loads once, outside the timing
        started = time.monotonic()
        async with asyncio.timeout(BOUND):
            reply = await self.assistant.ask(question, thread_id=thread_id)
        return reply, time.monotonic() - started


@pytest.fixture
async def rig(anthropic_server: FakeAnthropic, tavily_server: FakeTavily) -> AsyncIterator[Rig]:
    """Both servers answering well by default; tests script the faults."""
    anthropic_server.auto(lambda body: clarity_ok() if "tools" in body else api.text(CLAUDE_ANSWER))
    tavily_server.auto(lambda body: tv.results(NEWS))
    llm = AnthropicLLM(
        api_key=CLAUDE_KEY,
        base_url=anthropic_server.url,
        timeout=TIMEOUT,
        max_attempts=ATTEMPTS,
        backoff=0.01,
        max_backoff=0.05,
    )
    source = TavilySource(
        TAVILY_KEY,
        base_url=tavily_server.url,
        timeout=TIMEOUT,
        max_attempts=ATTEMPTS,
        backoff=0.01,
    )
    assistant = ResearchAssistant(llm=llm, source=source, store=MemoryCheckpointStore())
    yield Rig(anthropic_server, tavily_server, llm, assistant)
    await llm.aclose()


def claude_fails(structured: Reply | None, text: Reply | None) -> Callable[[dict[str, Any]], Reply]:
    """An ``auto`` function: ``structured`` for verdicts, ``text`` for streamed answers
    (``None``: the good answer)."""

    def answer(body: dict[str, Any]) -> Reply:
        if "tools" in body:
            return structured or clarity_ok()
        return text or api.text(CLAUDE_ANSWER)

    return answer


def opening(reply: Any) -> str:
    """Which kind of answer: Claude's, the rules', error recovery's or "couldn't find"."""
    text: str = reply.text
    if text.startswith(CLAUDE_ANSWER):
        return "claude"
    if text.startswith(RULES_ANSWER):
        return "rules"
    if text.startswith("I couldn't find"):
        return "not found"
    return f"other: {text[:60]!r}"


# -- Claude faults ---------------------------------------------------------------------

STORM = {
    "429 storm (retry-after)": api.error(429, "rate_limit_error", "Slow down", retry_after=0.05),
    "529 storm (retry-after)": api.error(529, "overloaded_error", "Overloaded", retry_after=0.05),
    "500 storm": api.error(500, "api_error", "Internal server error"),
    "hang past the timeout": api.delay(60, api.text("too late")),
    "connection dropped": api.disconnect(),
}


@pytest.mark.parametrize("fault", list(STORM))
async def test_claude_storm_falls_back_to_rules(rig: Rig, fault: str) -> None:
    """Claude failing transiently: 3 attempts per call, then the rules answer, in time."""
    rig.claude.auto(None)
    rig.claude.default = STORM[fault]
    reply, elapsed = await rig.ask()
    actual = (reply.status, reply.company, reply.path, opening(reply), rig.claude.count())
    expected = ("answered", COMPANY, ["clarity", "research", "synthesis"], "rules", 2 * ATTEMPTS)
    assert expected == actual
    assert elapsed < BOUND


CLAUDE_MALFORMED: dict[str, tuple[Reply | None, Reply | None, int, str]] = {
    # name: (verdict reply, streamed reply, requests expected, answer expected)
    "verdict body not JSON": (api.raw(200, b"<html>proxy</html>", "text/html"), None, 2, "claude"),
    "answer body not JSON": (None, api.raw(200, b"<html>proxy</html>", "text/html"), 2, "rules"),
    "verdict JSON but no message": (api.raw(200, b"{}"), None, 2, "claude"),
    "verdict JSON list": (api.raw(200, b"[1, 2]"), None, 2, "claude"),
    "answer SSE garbage": (
        None,
        api.raw(200, b'data: {"type": "??"}\n\n', "text/event-stream"),
        2,
        "rules",
    ),
    # two tool calls, two requests for JSON in text (answered in prose), the answer
    "verdict wrong schema": (api.tool_use("respond", {"is_clear": "maybe?"}), None, 5, "claude"),
    "verdict not a tool call": (api.text("It is Apple, I think."), None, 5, "claude"),
    "event: error before any text": (
        None,
        api.stream_error(partial_text=""),
        1 + ATTEMPTS,
        "rules",
    ),
    "event: error mid-stream": (None, api.stream_error(partial_text="Apple is"), 2, "rules"),
    "stream cut mid-way": (None, CutMidStream(), 2, "rules"),
    "stream stalls past the timeout": (None, StallMidStream(), 2, "rules"),
    "empty answer": (None, api.text(""), 2, "rules"),
    "answer without content blocks": (None, api.message([]), 2, "rules"),
    "invalid key": (api.error(401, "authentication_error", "invalid x-api-key"), None, 1, "rules"),
}


@pytest.mark.parametrize("fault", list(CLAUDE_MALFORMED))
async def test_claude_malformed_output_still_answers(rig: Rig, fault: str) -> None:
    """Malformed Claude output or a rejected key: still an answer, with bounded requests."""
    structured, text, requests, kind = CLAUDE_MALFORMED[fault]
    rig.claude.auto(claude_fails(structured, text))
    reply, elapsed = await rig.ask()
    actual = (reply.status, reply.company, reply.path, opening(reply), rig.claude.count())
    expected = ("answered", COMPANY, ["clarity", "research", "synthesis"], kind, requests)
    assert expected == actual
    assert elapsed < BOUND


async def test_transient_errors_then_claude_answers(rig: Rig) -> None:
    """One 529 before the verdict and one 429 before the answer: both retried, Claude answers."""
    rig.claude.enqueue(
        api.error(529, retry_after=0.01),
        clarity_ok(),
        api.error(429, retry_after=0.01),
        api.text(CLAUDE_ANSWER),
    )
    reply, elapsed = await rig.ask()
    assert ("claude", 4, 0) == (opening(reply), rig.claude.count(), rig.claude.pending)
    assert elapsed < BOUND


async def test_hour_long_retry_after_is_not_waited_for(rig: Rig) -> None:
    """retry-after: 3600 from both services: still answered within the bound."""
    rig.claude.auto(None)
    rig.claude.default = api.error(429, "rate_limit_error", retry_after=3600)
    rig.tavily.auto(None)
    rig.tavily.default = tv.error(429, "quota", retry_after=3600)
    reply, elapsed = await rig.ask()
    actual = (reply.status, opening(reply), rig.claude.count(), rig.tavily.count())
    assert ("answered", "not found", ATTEMPTS, 1) == actual
    assert "rate limit" in reply.text
    assert elapsed < BOUND


async def test_stream_api_under_a_cut_stream(rig: Rig) -> None:
    """A cut answer stream: the stream's events still end with the rule-based Answer."""
    rig.claude.auto(claude_fails(None, CutMidStream()))
    await rig.assistant.graph()
    async with asyncio.timeout(BOUND):
        events = [e async for e in rig.assistant.stream(QUESTION, thread_id="s1")]
    last = events[-1]
    assert isinstance(last, Answer)
    assert ("rules", True) == (opening(last.reply), any(isinstance(e, Token) for e in events))


# -- Tavily faults ---------------------------------------------------------------------

TAVILY_FAULTS: dict[str, tuple[Reply, int, str | None]] = {
    # name: (reply, requests expected, words the answer gives as the reason)
    "429 storm (retry-after)": (
        tv.error(429, "rate limited", retry_after=0.05),
        ATTEMPTS,
        "rate limit",
    ),
    "500 storm": (tv.error(500, "boom"), ATTEMPTS, "server error"),
    "hang past the timeout": (tv.delay(60, tv.results(NEWS)), ATTEMPTS, "did not answer"),
    "connection dropped": (tv.disconnect(), ATTEMPTS, "could not reach"),
    "body not JSON": (tv.raw(200, b"<html>captive portal</html>", "text/html"), 1, "invalid"),
    "results not a list": (tv.raw(200, b'{"results": "nope"}'), 1, "invalid"),
    "results null": (tv.raw(200, b'{"results": null, "answer": 42}'), 1, "invalid"),
    "garbage items": (
        tv.raw(
            200,
            b'{"results": [1, "x", null, {"url": 5, "content": []},'
            b' {"url": "javascript:alert(1)", "content": "hi"}]}',
        ),
        1,
        None,
    ),
    "empty results": (tv.empty(), 1, None),
    "invalid key": (tv.error(401, "Unauthorized"), 1, "API key"),
}


@pytest.mark.parametrize("fault", list(TAVILY_FAULTS))
async def test_tavily_fault_answers_not_found(rig: Rig, fault: str) -> None:
    """A failing or empty Tavily: "I couldn't find" with the reason, bounded searches, in time."""
    reply_script, requests, reason = TAVILY_FAULTS[fault]
    rig.tavily.auto(None)
    rig.tavily.default = reply_script
    reply, elapsed = await rig.ask()
    actual = (
        reply.status,
        reply.company,
        reply.path,
        opening(reply),
        reply.sources,
        rig.tavily.count(),
        rig.claude.count(),
    )
    expected = (
        "answered",
        COMPANY,
        ["clarity", "research", "synthesis"],
        "not found",
        [],
        requests,
        1,
    )
    assert expected == actual
    assert (reason is None) == ("Tavily" not in reply.text)
    assert reason is None or reason in reply.text
    assert elapsed < BOUND


async def test_tavily_recovers_after_transient_errors(rig: Rig) -> None:
    """A 429 then a dropped connection, then results: the answer uses the results."""
    rig.tavily.enqueue(tv.error(429, "slow", retry_after=0.01), tv.disconnect(), tv.results(NEWS))
    reply, elapsed = await rig.ask()
    actual = (opening(reply), rig.tavily.count(), len(reply.sources))
    assert ("claude", 3, 3) == actual
    assert elapsed < BOUND


async def test_everything_down(rig: Rig) -> None:
    """Claude overloaded and Tavily failing at once: still an answer, bounded requests."""
    rig.claude.auto(None)
    rig.claude.default = api.error(529, retry_after=0.01)
    rig.tavily.auto(None)
    rig.tavily.default = tv.error(503, "maintenance")
    reply, elapsed = await rig.ask()
    actual = (reply.status, opening(reply), rig.claude.count(), rig.tavily.count())
    assert ("answered", "not found", ATTEMPTS, ATTEMPTS) == actual
    assert elapsed < BOUND


# -- many questions, random faults -----------------------------------------------------


def random_faults(seed: int) -> tuple[Callable[[dict[str, Any]], Reply], Callable[..., Reply]]:
    """Seeded ``auto`` functions failing about half the requests in every way they can."""
    rng = random.Random(seed)
    claude_faults = [
        lambda: api.error(429, retry_after=0.01),
        lambda: api.error(529, retry_after=0.01),
        lambda: api.error(500),
        lambda: api.delay(60, api.text("late")),
        api.disconnect,
        lambda: api.raw(200, b"nope"),
        CutMidStream,
        lambda: api.stream_error(partial_text=""),
    ]
    tavily_faults = [
        lambda: tv.error(429, "slow", retry_after=0.01),
        lambda: tv.error(502, "bad gateway"),
        lambda: tv.delay(60, tv.empty()),
        tv.disconnect,
        lambda: tv.raw(200, b"<html>"),
        tv.empty,
    ]

    def claude(body: dict[str, Any]) -> Reply:
        if rng.random() < 0.5:
            return rng.choice(claude_faults)()
        return claude_fails(None, None)(body)

    def tavily(body: dict[str, Any]) -> Reply:
        return rng.choice(tavily_faults)() if rng.random() < 0.5 else tv.results(NEWS)

    return claude, tavily


async def test_multi_turn_under_random_faults(rig: Rig) -> None:
    """Six questions on a thread under random faults: each answered in time, requests bounded."""
    claude, tavily = random_faults(seed=6)
    rig.claude.auto(claude)
    rig.tavily.auto(tavily)
    questions = [
        QUESTION,
        "What about their stock?",
        "Tell me about Tesla",
        "Who leads it?",
        "Compare them to Microsoft",
        "Nevermind",
    ]
    statuses, elapsed = [], []
    for question in questions:
        reply, seconds = await rig.ask(question, thread_id="multi")
        statuses.append((reply.status, bool(reply.text.strip())))
        elapsed.append(seconds)
    assert [("answered", True)] * len(questions) == statuses
    assert max(elapsed) < BOUND
    # per question at most clarity + 3 validator rounds + synthesis calls, 2 tries each
    # for schema errors; at most 3 research rounds of 2 companies
    assert rig.claude.count() <= len(questions) * 5 * 2 * ATTEMPTS
    assert rig.tavily.count() <= len(questions) * 3 * 2 * ATTEMPTS


async def test_concurrent_questions_under_a_storm(rig: Rig) -> None:
    """Five questions at once under 529s and Tavily hangs: all answered in time, retries bounded."""
    rig.claude.auto(None)
    rig.claude.default = api.error(529, retry_after=0.01)
    rig.tavily.auto(None)
    rig.tavily.default = tv.delay(60, tv.empty())
    await rig.assistant.graph()
    started = time.monotonic()
    async with asyncio.timeout(BOUND):
        replies = await asyncio.gather(
            *(rig.assistant.ask(QUESTION, thread_id=f"c{i}") for i in range(5))
        )
    elapsed = time.monotonic() - started
    # The last timed-out searches may reach the hanging server a moment after the client
    # gave up on them, and on a loaded machine one may time out before the server has read
    # it: wait for the count to settle, then check it is bounded by the attempts.
    settle = time.monotonic() + 5
    while rig.tavily.count() < 5 * ATTEMPTS and time.monotonic() < settle:
        await asyncio.sleep(0.05)
    searches = rig.tavily.count()
    actual = (
        {r.status for r in replies},
        {opening(r) for r in replies},
        rig.claude.count(),
        5 <= searches <= 5 * ATTEMPTS,
    )
    assert ({"answered"}, {"not found"}, 5 * ATTEMPTS, True) == actual, searches
    assert elapsed < BOUND
