"""LLM, search and log tracing with the SDK's in-memory exporter: the real
``anthropic`` and ``tavily`` clients against the loopback servers, the offline
assistant's clarification across two processes, and trace ids in log lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv

from research_fsm import JsonFileCheckpointStore, ResearchAssistant, configure_logging
from research_fsm.engine import END, START, StateGraph
from research_fsm.llm import AnthropicLLM, LLMError
from research_fsm.sources import SearchContext
from research_fsm.sources._tavily import TavilySource

from .helpers import by_name, children

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "child.py"
ANTHROPIC_KEY = "sk-ant-test-key-123456"
TAVILY_KEY = "tvly-test-secret-0123456789"
PROMPT = "Summarise the confidential plan for Nvidia"


class Verdict(BaseModel):
    """A structured answer."""

    score: int


class Notes(BaseModel):
    """State: what the node got."""

    text: str = ""


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RESEARCH_FSM_HOME in the test's folder; no real keys or base URLs."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TAVILY_API_KEY", "TAVILY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def research_graph(anthropic: FakeAnthropic, tavily: FakeTavily) -> StateGraph[Notes]:
    """One node: a Tavily search, a structured Claude call and a generated text."""
    llm = AnthropicLLM(api_key=ANTHROPIC_KEY, base_url=anthropic.url, model="claude-sonnet-5")
    source = TavilySource(TAVILY_KEY, base_url=tavily.url, backoff=0.0)

    async def research(state: Notes) -> dict[str, Any]:
        try:
            await source.search("Nvidia", SearchContext(query=PROMPT))
            await llm.structured(agent="quality", system="judge", prompt=PROMPT, schema=Verdict)
            reply = await llm.generate(agent="synthesis", system="write", prompt=PROMPT)
        finally:
            await llm.aclose()
        return {"text": reply.text}

    graph = StateGraph(Notes).add_node("research", research)
    graph.add_edge(START, "research").add_edge("research", END)
    return graph


def attributes_text(spans: Any) -> str:
    """Every attribute value and event attribute of ``spans``, as one string."""
    values = []
    for span in spans:
        values += [str(v) for v in (span.attributes or {}).values()]
        for event in span.events:
            values += [str(v) for v in (event.attributes or {}).values()]
    return "\n".join(values)


async def test_llm_and_search_spans_carry_usage_under_the_node_span(
    exporter: InMemorySpanExporter, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A node's Tavily search and two Claude calls are children of its span, with the
    GenAI attributes, token usage, cost and the data source name."""
    tavily_server.enqueue(tv.results([tv.result("Nvidia", "https://n.example.com", "GPUs")]))
    anthropic_server.enqueue(
        api.tool_use("respond", {"score": 90}, input_tokens=120, output_tokens=30)
    )
    anthropic_server.enqueue(api.text("Nvidia makes GPUs.", input_tokens=200, output_tokens=5))
    await research_graph(anthropic_server, tavily_server).compile().run({}, thread_id="llm")
    spans = exporter.get_finished_spans()
    [node] = by_name(spans, "research_fsm.node research")
    assert ["research_fsm.search Tavily", "chat claude-sonnet-5", "chat claude-sonnet-5"] == [
        s.name for s in children(spans, node)
    ]
    search, structured, generated = children(spans, node)
    assert {
        "research_fsm.data_source": "Tavily",
        "research_fsm.search.query_length": len(str(tavily_server.requests[0].body["query"])),
        "research_fsm.search.results": 1,
    } == dict(search.attributes or {})
    assert {
        "gen_ai.system": "anthropic",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-sonnet-5",
        "research_fsm.agent": "quality",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "research_fsm.cost_usd": 0.00054,
    } == dict(structured.attributes or {})
    assert (200, 5, "synthesis") == tuple(
        (generated.attributes or {})[key]
        for key in (
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "research_fsm.agent",
        )
    )


async def test_no_secret_and_no_prompt_in_attributes_by_default(
    exporter: InMemorySpanExporter, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Neither API key, the prompt, the query nor the answer appears in any span
    attribute unless the application opts in."""
    anthropic_server.enqueue(api.tool_use("respond", {"score": 90}))
    anthropic_server.enqueue(api.text("Nvidia makes GPUs."))
    await research_graph(anthropic_server, tavily_server).compile().run({}, thread_id="quiet")
    text = attributes_text(exporter.get_finished_spans())
    assert [] == [s for s in (ANTHROPIC_KEY, TAVILY_KEY, PROMPT, "Nvidia makes GPUs") if s in text]


async def test_content_is_recorded_when_the_application_opts_in(
    exporter: InMemorySpanExporter,
    anthropic_server: FakeAnthropic,
    tavily_server: FakeTavily,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RESEARCH_FSM_TRACE_CONTENT=1: the prompt, query and answer are on the spans; keys never."""
    monkeypatch.setenv("RESEARCH_FSM_TRACE_CONTENT", "1")
    anthropic_server.enqueue(api.tool_use("respond", {"score": 90}))
    anthropic_server.enqueue(api.text("Nvidia makes GPUs."))
    await research_graph(anthropic_server, tavily_server).compile().run({}, thread_id="loud")
    spans = exporter.get_finished_spans()
    [generated] = [
        s for s in spans if (s.attributes or {}).get("research_fsm.agent") == "synthesis"
    ]
    assert (PROMPT, "Nvidia makes GPUs.") == (
        (generated.attributes or {})["gen_ai.prompt"],
        (generated.attributes or {})["gen_ai.completion"],
    )
    text = attributes_text(spans)
    assert [] == [key for key in (ANTHROPIC_KEY, TAVILY_KEY) if key in text]


async def test_a_failing_llm_call_is_an_error_span(
    exporter: InMemorySpanExporter, anthropic_server: FakeAnthropic
) -> None:
    """Claude answering 400: the LLM span has status ERROR, the error type and an exception event."""
    anthropic_server.enqueue(api.error(400, "invalid_request_error", "bad request"))
    llm = AnthropicLLM(api_key=ANTHROPIC_KEY, base_url=anthropic_server.url)
    with pytest.raises(LLMError):
        try:
            await llm.generate(agent="synthesis", system="s", prompt="p")
        finally:
            await llm.aclose()
    [span] = by_name(exporter.get_finished_spans(), "chat claude-sonnet-5")
    assert (StatusCode.ERROR, "LLMError", ["exception"]) == (
        span.status.status_code,
        (span.attributes or {})["error.type"],
        [e.name for e in span.events],
    )


async def test_clarification_across_two_processes_continues_the_trace(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A child process asks and suspends; this process resumes with the token: the
    resumed run span continues the child's trace (child of its run span) and links to
    it; the directory search is a span of the resumed run."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(CHILD), "ask", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    token = done.stdout.strip().splitlines()[-1]
    child = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    [asked] = [span for span in child if span["name"] == "research_fsm.run"]
    assistant = ResearchAssistant(store=JsonFileCheckpointStore(tmp_path / "store"))
    reply = await assistant.clarify(token, "Apple")
    spans = exporter.get_finished_spans()
    [resumed] = by_name(spans, "research_fsm.run")
    assert resumed.parent is not None
    assert (asked["trace_id"], asked["span_id"], [asked["span_id"]]) == (
        format(resumed.context.trace_id, "032x"),
        format(resumed.parent.span_id, "016x"),
        [format(link.context.span_id, "016x") for link in resumed.links],
    )
    assert {format(resumed.context.trace_id, "032x")} == {
        format(s.context.trace_id, "032x") for s in spans
    }
    searches = [s for s in spans if s.name.startswith("research_fsm.search")]
    assert [1] == [(s.attributes or {})["research_fsm.search.results"] for s in searches]
    assert "answered" == reply.status


async def test_log_lines_carry_the_current_trace_and_span_ids(
    exporter: InMemorySpanExporter,
) -> None:
    """A line a node logs (configured logging, JSON) names its node span's trace and span ids."""
    out = io.StringIO()
    configure_logging("INFO", "json", stream=out)

    async def chatty(state: Notes, ctx: Any) -> dict[str, Any]:
        ctx.log.info("working")
        return {}

    graph = StateGraph(Notes).add_node("chatty", chatty)
    graph.add_edge(START, "chatty").add_edge("chatty", END)
    try:
        await graph.compile().run({}, thread_id="logs")
        structlog.get_logger("outside").info("no span")
    finally:
        structlog.reset_defaults()
    [node] = by_name(exporter.get_finished_spans(), "research_fsm.node chatty")
    working, outside = (json.loads(line) for line in out.getvalue().splitlines())
    assert (format(node.context.trace_id, "032x"), format(node.context.span_id, "016x")) == (
        working["trace_id"],
        working["span_id"],
    )
    assert ("no span", None) == (outside["event"], outside.get("trace_id"))
