"""``AnthropicLLM`` on a local server: the layers' documented differences (Ollama's and
llama.cpp's) and small models' answers, through the real SDK client and the stand-in."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field
from servers.local_llm import LocalLLM
from structlog.testing import capture_logs

from research_fsm.llm import LLMError, llm_from_env, llm_settings
from research_fsm.llm._anthropic import AnthropicLLM, json_in

MODEL = "qwen3:4b"


class Verdict(BaseModel):
    """A yes or no with a reason."""

    ok: bool = Field(description="Whether it holds.")
    reason: str = Field(description="Why, in a few words.")


def yes(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """A model that answers well."""
    return {"ok": True, "reason": "it holds"} if schema is not None else "It holds."


def local(server: LocalLLM, model: str = MODEL) -> AnthropicLLM:
    """The client as ``RESEARCH_FSM_LLM_URL`` makes it."""
    return AnthropicLLM(base_url=server.url, model=model, local=True, backoff=0.0)


# -- the JSON a model writes in text ----------------------------------------------------

WRITTEN = {
    "alone": '{"ok": true, "reason": "a {brace} in a string"}',
    "fenced": 'Sure.\n```json\n{"ok": true, "reason": "a {brace} in a string"}\n```\nAnything else?',
    "fence without language": '```\n{"ok": true, "reason": "a {brace} in a string"}\n```',
    "prose after": '{"ok": true, "reason": "a {brace} in a string"} I hope this helps!',
    "prose before": 'My answer is {"ok": true, "reason": "a {brace} in a string"}',
    "thinking first": '<think>maybe {"ok": false}</think>{"ok": true, "reason": "a {brace} in a string"}',
    "the call written out": '{"name": "respond", "arguments": {"ok": true, "reason": "a {brace} in a string"}}',
    "the call with input": '{"name": "respond", "input": {"ok": true, "reason": "a {brace} in a string"}}',
    "a brace before the object": 'Use {curly} braces: {"ok": true, "reason": "a {brace} in a string"}',
}


@pytest.mark.parametrize("case", list(WRITTEN))
def test_json_in_finds_the_object(case: str) -> None:
    """The object is found wherever the model put it, and only it."""
    assert {"ok": True, "reason": "a {brace} in a string"} == json_in(WRITTEN[case])


@pytest.mark.parametrize(
    "text", ['{"ok": true, "reason": "cut', "[1, 2]", "No JSON here.", "", "```json\n{\n```"]
)
def test_json_in_refuses_what_is_not_a_whole_object(text: str) -> None:
    """A cut, absent or non-object answer is a ``ValueError`` (never a guess)."""
    with pytest.raises(ValueError):
        json_in(text)


# -- what the layers do differently -------------------------------------------------


async def test_a_model_without_tools_is_asked_for_json_and_remembered() -> None:
    """Ollama's 400 "does not support tools": the answer is asked for as JSON in text,
    said in the note; the next call sends no tools at all."""
    with LocalLLM(yes, models=("gemma2:2b",), no_tools=("gemma2:2b",)) as server:
        llm = local(server, "gemma2:2b")
        first = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        second = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        await llm.aclose()
    assert first.value == second.value == Verdict(ok=True, reason="it holds")
    assert "judge: the model gemma2:2b cannot use tools" in (first.note or "")
    assert [True, False, False] == ["tools" in r.body for r in server.requests]
    assert first.usage.cost_usd is None and 1 == first.usage.calls  # the refusal is not paid


async def test_llamacpp_errors_and_model_names() -> None:
    """llama.cpp serves its one model whatever the name and words its errors the OpenAI
    way (``{"error": {"code", "message", "type"}}``): a template without tools is still
    recognised, and the answer comes as JSON in text."""
    with LocalLLM(yes, flavour="llamacpp", models=("local",), no_tools=("local",)) as server:
        llm = local(server, "any-name")
        reply = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        await llm.aclose()
    assert reply.value.ok and "cannot use tools" in (reply.note or "")
    assert [True, False] == ["tools" in r.body for r in server.requests]


async def test_an_unknown_model_is_named() -> None:
    """Ollama's 404 for a model not pulled: ``unknown_model``, not retried, the server named."""
    with LocalLLM(yes) as server:
        llm, url = local(server, "llama9:70b"), server.url
        with pytest.raises(LLMError) as caught:
            await llm.generate(agent="synthesis", system="s", prompt="p")
        await llm.aclose()
    assert "unknown_model" == caught.value.kind
    assert f"the LLM server at {url} does not know the model" in caught.value.message
    assert 1 == server.count()


@pytest.mark.parametrize("thinking", [True, False])
async def test_thinking_blocks_are_not_the_answer(thinking: bool) -> None:
    """A reasoning model's thinking block comes before the answer, streamed or not: the
    text and the structured value are the answer's alone."""
    with LocalLLM(yes, thinking=thinking) as server:
        llm = local(server)
        text = await llm.generate(agent="synthesis", system="s", prompt="p")
        value = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        await llm.aclose()
    assert "It holds." == text.text and not text.truncated
    assert value.value.ok and value.note is None


async def test_an_unknown_stop_reason_is_an_ended_answer() -> None:
    """``stop_reason: "stop"`` (not one of the API's): the text is whole, not continued."""
    with LocalLLM(yes, quirks=frozenset({"stop_reason"})) as server:
        llm = local(server)
        text = await llm.generate(agent="synthesis", system="s", prompt="p")
        await llm.aclose()
    assert ("It holds.", False, None, 1) == (text.text, text.truncated, text.note, server.count())


async def test_answers_without_token_counts_count_zero_and_warn_once() -> None:
    """No ``usage`` counts at all: the calls count, their tokens are 0 (as reported, not
    estimated), the cost is unknown, and one warning says so."""
    with LocalLLM(yes, models=("tiny:1b",), quirks=frozenset({"no_usage"})) as server:
        llm = local(server, "tiny:1b")
        with capture_logs() as logs:
            text = await llm.generate(agent="synthesis", system="s", prompt="p")
            value = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        await llm.aclose()
    total = text.usage + value.usage
    assert (2, 0, 0, None) == (total.calls, total.input_tokens, total.output_tokens, total.cost_usd)
    warned = [e for e in logs if "reports no token counts" in e["event"]]
    assert 1 == len(warned) and value.value.ok


async def test_tokens_are_the_servers() -> None:
    """The usage is what the server reported (its tokenizer's count), never Claude's estimate."""
    with LocalLLM(yes) as server:
        llm = local(server)
        reply = await llm.structured(agent="judge", system="s", prompt="p", schema=Verdict)
        await llm.aclose()
    sent = json.dumps([{"type": "thinking", "thinking": "Let me think.", "signature": ""}])
    assert reply.usage.output_tokens > 0 and reply.usage.output_tokens != len(sent.split())
    assert reply.usage.cost_usd is None


async def test_a_price_given_for_a_local_model_counts() -> None:
    """Costs stay unknown unless the user prices the local model (e.g. electricity)."""
    from research_fsm.llm import Price

    with LocalLLM(yes) as server:
        llm = AnthropicLLM(
            base_url=server.url, model=MODEL, local=True, prices={MODEL: Price(1.0, 1.0)}
        )
        reply = await llm.generate(agent="synthesis", system="s", prompt="p")
        await llm.aclose()
    assert reply.usage.cost_usd is not None and reply.usage.cost_usd > 0


# -- the environment ---------------------------------------------------------------


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No LLM variable set."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "RESEARCH_FSM_LLM_URL",
        "RESEARCH_FSM_MODEL",
        "RESEARCH_FSM_LLM_TIMEOUT",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_the_environment_selects_the_llm(env: pytest.MonkeyPatch) -> None:
    """Nothing: no LLM. RESEARCH_FSM_LLM_URL: local, no key, no list price, long timeout.
    ANTHROPIC_BASE_URL alone: local too. A key: Claude, priced."""
    assert llm_from_env() is None
    env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/")
    found = llm_from_env()
    assert found is not None and found.local and "http://127.0.0.1:8080" == found.base_url
    await found.aclose()
    env.setenv("RESEARCH_FSM_LLM_URL", "http://localhost:11434")
    env.setenv("RESEARCH_FSM_MODEL", MODEL)
    found = llm_from_env()
    assert found is not None
    assert (True, MODEL, 300.0, {}) == (found.local, found.model, found.timeout, found.prices)
    await found.aclose()
    env.delenv("RESEARCH_FSM_LLM_URL")
    env.delenv("ANTHROPIC_BASE_URL")
    env.delenv("RESEARCH_FSM_MODEL")
    env.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    env.setenv("RESEARCH_FSM_LLM_TIMEOUT", "12.5")
    found = llm_from_env()
    assert found is not None and not found.local and 12.5 == found.timeout
    assert "claude-sonnet-5" in found.prices
    await found.aclose()


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("RESEARCH_FSM_LLM_URL", "localhost:11434", "must be an http:// or https:// address"),
        ("RESEARCH_FSM_LLM_URL", "file:///tmp/x", "must be an http:// or https:// address"),
        ("RESEARCH_FSM_LLM_TIMEOUT", "soon", "must be a positive number of seconds"),
        ("RESEARCH_FSM_LLM_TIMEOUT", "-1", "must be a positive number of seconds"),
        ("RESEARCH_FSM_LLM_TIMEOUT", "nan", "must be a positive number of seconds"),
    ],
)
def test_a_bad_setting_is_named(env: pytest.MonkeyPatch, name: str, value: str, says: str) -> None:
    """A value not allowed: ``ValueError`` naming the variable, the value and the form."""
    env.setenv("RESEARCH_FSM_LLM_URL", "http://localhost:11434")
    env.setenv(name, value)
    with pytest.raises(ValueError, match=name) as caught:
        llm_settings()
    assert says in str(caught.value) and repr(value) in str(caught.value)
