"""The report workflow with Claude and Tavily: the real ``anthropic`` and ``tavily``
clients against the loopback servers of ``tests/servers`` (no SDK class is mocked)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import AnthropicLLM
from research_fsm.sources._tavily import TavilySource

PAGES = {
    "researcher": (
        "Nvidia - company profile",
        "https://profile.example.com/nvidia",
        "Nvidia designs GPUs. Headquarters: Santa Clara.",
    ),
    "financial": (
        "Nvidia quarterly results",
        "https://ir.example.com/nvidia-q3",
        "Revenue was $57.0 billion in the third quarter, up 62% from a year ago. Net income "
        "was $31.9 billion and gross margin 73.6%.",
    ),
    "market": (
        "Nvidia competitors",
        "https://market.example.com/gpu-share",
        "Nvidia holds 80% of the data-center accelerator market; AMD is second. Intel and "
        "Google's TPU compete in inference.",
    ),
    "product": (
        "Nvidia product launches",
        "https://news.example.com/blackwell",
        "Nvidia launched the Blackwell Ultra platform and the GB300 system, the Rubin "
        "roadmap and the DGX Spark desktop.",
    ),
}
FACTS = {
    "financial": [
        ("Quarterly revenue", "$57.0 billion"),
        ("Revenue growth", "62%"),
        ("Net income", "$31.9 billion"),
        ("Gross margin", "73.6%"),
    ],
    "market": [
        ("Data-center accelerator share", "80%"),
        ("Closest competitor", "AMD"),
        ("Inference competitor", "Intel"),
        ("Custom chips", "Google's TPU"),
    ],
    "product": [
        ("Platform", "Blackwell Ultra"),
        ("System", "GB300"),
        ("Roadmap", "Rubin"),
        ("Desktop", "DGX Spark"),
    ],
}
"""Four facts per specialist: full marks from the rules' coverage check."""
INVENTED = "https://invented.example.org/not-retrieved"


def page_of(query: str) -> str:
    """Which page a Tavily query is answered with (by the specialist's topic words)."""
    lowered = query.lower()
    for agent, words in (
        ("financial", "financial"),
        ("market", "competitor"),
        ("product", "product"),
    ):
        if words in lowered:
            return agent
    return "researcher"


def search(body: dict[str, Any]) -> Any:
    """Tavily: one page per agent, chosen by the query."""
    title, url, content = PAGES[page_of(str(body["query"]))]
    return tv.results([tv.result(title, url, content, 0.9)])


def verdict(score: int) -> dict[str, Any]:
    """Claude's quality verdict adding up to ``score`` along design 004's criteria."""
    completeness, accuracy = round(score * 0.4), round(score * 0.3)
    return {
        "completeness": completeness,
        "accuracy": accuracy,
        "depth": score - completeness - accuracy,
        "missing": [] if score >= 85 else ["guidance"],
    }


def extraction(body: dict[str, Any]) -> Any:
    """A specialist's facts citing the page it was given (and one citing a URL never
    retrieved)."""
    agent = re.search(r"You are the (\w+) specialist", str(body["system"]))
    assert agent is not None
    url = PAGES[agent.group(1)][1]
    facts = [
        {"label": label, "value": value, "source_url": url}
        for label, value in FACTS[agent.group(1)]
    ]
    facts.append({"label": "Rumour", "value": "$1 trillion deal", "source_url": INVENTED})
    return api.tool_use("respond", {"facts": facts}, input_tokens=500, output_tokens=80)


def claude(scores: list[int]) -> Any:
    """Claude: facts citing the page given, a summary from the facts, then the quality
    verdicts in turn."""
    verdicts = iter(scores)

    def answer(body: dict[str, Any]) -> Any:
        if "tools" not in body:
            return api.text("Nvidia's quarterly revenue was $57.0 billion, up 62%.")
        if "completeness" in body["tools"][0]["input_schema"]["properties"]:
            return api.tool_use("respond", verdict(next(verdicts)))
        return extraction(body)

    return answer


def assistant_on(anthropic: FakeAnthropic, tavily: FakeTavily) -> ResearchAssistant:
    """An assistant whose LLM and source are the real SDK clients on the fake servers."""
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=anthropic.url)
    source = TavilySource("tvly-test-secret-0123456789", base_url=tavily.url, backoff=0.0)
    return ResearchAssistant(llm=llm, source=source, store=MemoryCheckpointStore())


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RESEARCH_FSM_HOME in the test's folder; no real keys or base URLs."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TAVILY_API_KEY", "TAVILY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


async def test_report_through_claude_and_tavily(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """One iteration: a search per agent, facts with source ids, five LLM calls,
    cost per agent, and the invented URL nowhere in the report."""
    anthropic_server.auto(claude([90]))
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    queries = [page_of(str(r.body["query"])) for r in tavily_server.requests]
    assert ["financial", "market", "product", "researcher"] == sorted(queries)
    assert report.quality is not None
    assert (1, 95, 100, 90) == (
        report.iterations,
        report.quality.score,
        report.quality.rule_score,
        report.quality.llm_score,
    )
    assert 5 == len(anthropic_server.requests)
    assert {"financial": 1, "market": 1, "product": 1, "synthesizer": 1, "quality": 1} == {
        agent: usage.calls for agent, usage in report.usage.items()
    }
    assert all(usage.cost_usd > 0 for usage in report.usage.values())
    assert report.cost_usd == round(sum(u.cost_usd for u in report.usage.values()), 6)
    ids = {entry["url"]: entry["id"] for entry in report.sources}
    assert {agent: page[1] for agent, page in PAGES.items()} == {
        entry["agent"]: entry["url"] for entry in report.sources
    }
    assert f"**Quarterly revenue**: $57.0 billion [{ids[PAGES['financial'][1]]}]" in report.markdown
    assert f"**Platform**: Blackwell Ultra [{ids[PAGES['product'][1]]}]" in report.markdown
    assert "invented.example.org" not in report.markdown and "Rumour" not in report.markdown
    assert report.summary_line().endswith(f"LLM 5 calls ~${report.cost_usd:.4f}")
    meta = json.loads(((report.folder or Path()) / "meta.json").read_text(encoding="utf-8"))
    for fact in meta["facts"]:
        page = next(p for p in PAGES.values() if p[1] in fact["urls"])
        assert fact["value"] in page[2]


async def test_report_loops_with_claude_five_calls_per_iteration(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A low first score sends the researcher back with Claude's gaps: two iterations,
    ten LLM calls, the gaps in the second round's searches."""
    anthropic_server.auto(claude([60, 90]))
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia", language="ja")
    assert (2, 10, 8) == (
        report.iterations,
        len(anthropic_server.requests),
        len(tavily_server.requests),
    )
    assert {"financial": 2, "market": 2, "product": 2, "synthesizer": 2, "quality": 2} == {
        agent: usage.calls for agent, usage in report.usage.items()
    }
    assert "## 財務" in report.markdown and "invented.example.org" not in report.markdown
    extractions = [r for r in anthropic_server.requests if "specialist" in str(r.body["system"])]
    assert 6 == len(extractions)
    assert all("Write each label in Japanese" in str(r.body["messages"]) for r in extractions)
    assert [] == anthropic_server.schema_problems()
    second_round = [str(r.body["query"]) for r in tavily_server.requests[4:]]
    assert all("guidance" in query for query in second_round), second_round


async def test_hostile_search_results_stay_inert_in_the_report(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A result whose URL cannot be parsed is dropped; a title with a link, an image and
    HTML, and a URL with markup, are text in report.md (no live link, image or tag)."""
    from markdown_it import MarkdownIt

    hostile = [
        tv.result("Broken", "http://[", "Nvidia designs GPUs.", 0.95),
        tv.result(
            "Nvidia [x](javascript:alert(1)) ![b](http://beacon.example/b.gif) <b>bold</b>",
            'https://ir.example.com/nvidia"><script>alert(2)</script>',
            "Nvidia designs GPUs. Headquarters: Santa Clara.",
            0.92,
        ),
    ]

    def hostile_search(body: dict[str, Any]) -> Any:
        title, url, content = PAGES[page_of(str(body["query"]))]
        return tv.results([*hostile, tv.result(title, url, content, 0.9)])

    anthropic_server.auto(claude([90]))
    tavily_server.auto(hostile_search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    html = MarkdownIt("commonmark").render(report.markdown)
    assert "completed" == report.status
    assert "ir.example.com/nvidia%22%3E%3Cscript%3E" in report.markdown
    assert [] == re.findall(r"<script|<img|<b>|href=\"javascript|beacon", html)


async def test_a_fact_whose_value_is_not_in_its_page_is_left_out(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Claude cites the real results page for a revenue it changed ($75.0 billion for
    $57.0 billion): the fact is left out and Methodology says so; the company name the
    user typed reaches Claude only inside a ``<company>`` fence, never in a system prompt."""
    honest = claude([90])

    def changed(body: dict[str, Any]) -> Any:
        if "tools" in body and "You are the financial specialist" in str(body["system"]):
            url = PAGES["financial"][1]
            facts = [
                {"label": "Quarterly revenue", "value": "$75.0 billion", "source_url": url},
                {"label": "Revenue growth", "value": "62%", "source_url": url},
            ]
            return api.tool_use("respond", {"facts": facts})
        return honest(body)

    anthropic_server.auto(changed)
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    assert "completed" == report.status
    assert "$75.0" not in report.markdown.split("## Methodology")[0]
    assert "**Revenue growth**: 62%" in report.markdown
    assert "value is not in the page they cite" in report.markdown
    for request in anthropic_server.requests:
        system, prompt = str(request.body.get("system")), json.dumps(request.body["messages"])
        assert "nvidia" not in system.lower()
        if "specialist" in system:
            assert "<company>\\nNvidia" in prompt


async def test_the_report_prompts_carry_the_clocks_date(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """The assistant's clock dates the report: the specialists' and the synthesizer's
    prompts say today's date."""
    anthropic_server.auto(claude([90]))
    tavily_server.auto(search)
    assistant = assistant_on(anthropic_server, tavily_server)
    assistant.clock = lambda: datetime(2031, 3, 4, 9, 0, tzinfo=UTC)
    await assistant.report("Nvidia")
    dated = [
        str(r.body.get("system"))[:24]
        for r in anthropic_server.requests
        if "Today's date: 2031-03-04." in json.dumps(r.body["messages"])
    ]
    assert 4 == len(dated)


def judge(body: dict[str, Any]) -> Any:
    """Claude scoring what the quality prompt shows it, along design 004's criteria: the
    facts and their sources when it sees them, a summary of one sentence when not."""
    prompt = str(body["messages"][0]["content"])
    values = [value for facts in FACTS.values() for _, value in facts]
    shown = sum(value in prompt for value in values) / len(values)
    cited = all(url in prompt for _, url, _ in PAGES.values())
    score = round(40 * shown) + (27 if cited else 5) + round(25 * shown)
    properties = body["tools"][0]["input_schema"]["properties"]
    if "score" in properties:  # a single score
        return api.tool_use("respond", {"score": score, "missing": ["more detail"]})
    return api.tool_use("respond", verdict(score) | {"missing": []})


async def test_quality_judges_facts_and_sources_not_the_summary(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """The quality check sends Claude every fact with its [S#] and the sources, never the
    one-sentence summary alone: a complete report ends in one iteration (5 calls, the
    README's count) with the rules' score and Claude's averaged; the schema sent names
    the three criteria of design 004 with their ranges."""

    def answer(body: dict[str, Any]) -> Any:
        if "tools" not in body:
            return api.text("Nvidia makes GPUs.")  # a short summary
        properties = body["tools"][0]["input_schema"]["properties"]
        return judge(body) if "missing" in properties else extraction(body)

    anthropic_server.auto(answer)
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    assert report.quality is not None
    assert (1, 5) == (report.iterations, len(anthropic_server.requests))
    assert ("combined", 100, 92, 96) == (
        report.quality.method,
        report.quality.rule_score,
        report.quality.llm_score,
        report.quality.score,
    )
    (request,) = [
        r for r in anthropic_server.requests if "completeness" in json.dumps(r.body.get("tools"))
    ]
    prompt = str(request.body["messages"][0]["content"])
    ids = {entry["url"]: entry["id"] for entry in report.sources}
    assert f"$57.0 billion [{ids[PAGES['financial'][1]]}]" in prompt
    assert "Nvidia makes GPUs." not in prompt
    schema = request.body["tools"][0]["input_schema"]["properties"]
    assert {"completeness": 40, "accuracy": 30, "depth": 30} == {
        name: schema[name]["maximum"] for name in ("completeness", "accuracy", "depth")
    }
    assert (
        "LLM, judging the facts and their sources: 92/100 (completeness 37/40, accuracy "
        "28/30, depth 27/30)" in " ".join(report.markdown.split())
    )


async def test_cut_and_misfit_answers_are_noted_and_counted(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """The financial specialist's answer is cut at the output limit: asked again with twice
    the limit, said under Methodology, both calls counted. The market specialist answers
    with a misfit twice through the tool and twice when asked for JSON in text: the
    search's own fields are its facts, that is said once, and all four answers are counted."""
    cut: list[int] = []

    def answer(body: dict[str, Any]) -> Any:
        system = str(body.get("system"))
        if "financial specialist" in system and not cut:
            cut.append(body["max_tokens"])
            return api.cut_tool_use("respond", {}, output_tokens=body["max_tokens"])
        if "market specialist" in system:
            return api.tool_use("respond", {"facts": "none"}, output_tokens=15)
        return judge_all(body)

    judge_all = claude([100])  # the rules' 75 (no market section) and 100: done at once
    anthropic_server.auto(answer)
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    financial = [
        r for r in anthropic_server.requests if "financial specialist" in str(r.body.get("system"))
    ]
    assert [cut[0], 2 * cut[0]] == [r.body["max_tokens"] for r in financial]
    assert f"financial: Claude's answer was cut at the {cut[0]:,}-token output limit" in (
        report.markdown
    )
    assert (2, 4) == (report.usage["financial"].calls, report.usage["market"].calls)
    assert 60 == report.usage["market"].output_tokens
    note = "market: the LLM's answer could not be used (schema); the facts are the search's own"
    assert 1 == report.markdown.count(note)
    assert "This section is unavailable: the market specialist failed" not in report.markdown


async def test_the_report_names_the_model_of_each_agent(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RESEARCH_FSM_MODEL_FINANCIAL`` gives the financial specialist its own model: the
    Methodology and the metadata name it beside the others' model, not the default only."""
    monkeypatch.setenv("RESEARCH_FSM_MODEL_FINANCIAL", "claude-haiku-4-5")
    anthropic_server.auto(claude([90]))
    tavily_server.auto(search)
    report = await assistant_on(anthropic_server, tavily_server).report("Nvidia")
    asked = {str(r.body["model"]) for r in anthropic_server.requests}
    assert {"claude-haiku-4-5", "claude-sonnet-5"} == asked
    both = "financial: claude-haiku-4-5; others: claude-sonnet-5"
    assert f"| Model | {both} |" in report.markdown
    methodology = report.markdown.split("## Methodology", 1)[1].split("\n## ", 1)[0]
    assert f"Model: {both}." in methodology
