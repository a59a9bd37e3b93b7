"""With Claude (the real ``anthropic`` client against the loopback fake server), deep
research over documents keeps the offline pipeline's rules: the question's own words are
searched beside the query Claude rewrote, and quotes are the source's characters (a
fence Claude copies from the prompt is no part of one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from servers import FakeAnthropic
from servers import anthropic as api

from research_fsm import ResearchAssistant
from research_fsm.deep import quote_in
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM

from .llm import blocks, rate, verify
from .test_deep_sdk import draft, prompt_of

KEY = "sk-ant-test-key-123456"
QUESTION = "How do I make structlog output JSON logs?"
REWRITTEN = "structlog machine readable logging configuration tutorial"
PAGE = """<html><head><title>Logging notes</title></head><body><main>
<h1>Logging notes</h1>
<p>structlog renders JSON logs with the JSONRenderer processor.</p>
<p>Install it with:</p>
<pre>pip install structlog</pre>
</main></body></html>
"""


def analyse(prompt: str) -> dict[str, Any]:
    """Claude's facts: a sentence, and a step quoted with the fence lines it was shown."""
    ((_, text),) = blocks(prompt).items()
    facts = []
    if "JSONRenderer" in text:
        sentence = "structlog renders JSON logs with the JSONRenderer processor."
        facts.append({"kind": "finding", "statement": sentence, "quote": sentence})
    if "```" in text:
        quote = "Install it with:\n```\npip install structlog\n```"
        statement = "Install it with pip install structlog."
        facts.append({"kind": "step", "statement": statement, "quote": quote})
    return {"facts": facts}


def answer(body: dict[str, Any]) -> Any:
    """Claude reading each stage's prompt; the query stage rewrites the question."""
    prompt = prompt_of(body)
    if "tools" not in body:
        return api.text(draft(prompt), input_tokens=900)
    fields = body["tools"][0]["input_schema"]["properties"]
    replies = {
        "query": lambda _: {"query": REWRITTEN},
        "results": rate_json,
        "facts": analyse,
        "quotes": verify,
    }
    for name, respond in replies.items():
        if name in fields:
            return api.tool_use("respond", respond(prompt), input_tokens=700, output_tokens=90)
    raise AssertionError(f"unexpected schema {sorted(fields)}")


def rate_json(prompt: str) -> dict[str, Any]:
    """0.9 for the passage naming the JSON renderer, 0.1 for the others."""
    rated = rate(prompt)
    for item in rated["results"]:
        item["score"] = 0.9 if "JSONRenderer" in blocks(prompt)[item["id"]] else 0.1
    return rated


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


async def test_claude_over_documents_keeps_the_rules(
    home: Path, tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    """Claude's rewritten query finds nothing alone; the question's own words find the
    note; the step's quote holds no fence and is verbatim; the answer names JSONRenderer."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "logging.html").write_text(PAGE, encoding="utf-8")
    (folder / "other.md").write_text("# Other\n\nTeam lunch is at noon on Fridays.\n")
    anthropic_server.auto(answer)
    llm = AnthropicLLM(api_key=KEY, base_url=anthropic_server.url)
    assistant = ResearchAssistant(llm=llm, store=MemoryCheckpointStore())
    report = await assistant.deep_research(QUESTION, docs=folder)
    assert "completed" == report.status
    assert "JSONRenderer" in report.summary
    assert report.folder is not None
    queries = json.loads((report.folder / "queries.json").read_text(encoding="utf-8"))
    assert REWRITTEN == queries[0]["query"]
    retrieved = json.loads((report.folder / "search_results.json").read_text(encoding="utf-8"))
    sources = {s["id"]: s["text"] for s in retrieved}
    evidence = json.loads((report.folder / "evidence.json").read_text(encoding="utf-8"))
    quotes = [(a["source"], f["quote"]) for a in evidence for f in a["facts"]]
    assert any(q.startswith("Install it with:") for _, q in quotes)
    for sid, quote in quotes:
        assert "```" not in quote
        assert quote_in(quote, sources[sid])
