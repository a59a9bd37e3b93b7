"""Deep research's checks check: the verifier sees every passage analysis quoted, a quote
around a changed number is no support, unchanged claims are not verified twice, a page
cannot break out of its fence, relevance reads the snippet. Real ``anthropic`` and
``tavily`` clients against the loopback servers of ``tests/servers``."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv

from .conftest import BAELDUNG, PREPARING, SPRING, TOPIC
from .llm import CLAIM, analyse, query, rate, verify
from .test_deep_sdk import on_servers, page, prompt_of

JAVA = "Spring Boot 3.0 requires Java 17 as a minimum version."
ANY_SOURCE = re.compile(r'<source id="([^"]*)"[^>]*>\n(.*?)\n</source>', re.S)


def stage(body: dict[str, Any]) -> str:
    """Which deep-research stage a Messages request is, by its reply schema."""
    if "tools" not in body:
        return "synthesis"
    fields = body["tools"][0]["input_schema"]["properties"]
    names = {"query": "query", "results": "rate", "facts": "analyse", "quotes": "verify"}
    return next(name for key, name in names.items() if key in fields)


def claude(
    *,
    drafts: list[str],
    analysis: Callable[[str], Any] = analyse,
    rating: Callable[[str], Any] = rate,
) -> Callable[[dict[str, Any]], Any]:
    """A stand-in Claude: honest stages (``tests/deep/llm.py``), ``drafts`` in turn."""
    written = itertools.chain(drafts, itertools.repeat(drafts[-1]))
    replies = {"query": query, "rate": rating, "analyse": analysis, "verify": verify}

    def answer(body: dict[str, Any]) -> Any:
        name = stage(body)
        if name == "synthesis":
            return api.text(next(written), input_tokens=500)
        return api.tool_use("respond", replies[name](prompt_of(body)), input_tokens=400)

    return answer


def verify_prompts(server: FakeAnthropic) -> list[str]:
    return [prompt_of(r.body) for r in server.requests if stage(r.body) == "verify"]


def saved(folder: Path | None, name: str) -> Any:
    assert folder is not None
    return json.loads((folder / name).read_text(encoding="utf-8"))


async def test_the_verifier_sees_a_quote_from_the_second_half_of_a_long_page(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Analysis quotes a sentence 9,000 characters into a page: the verifier is shown the
    passage around it (not the first 6,000 characters), so the claim holds in round one
    and no gap round starts."""
    filler = "".join(f"The spring catalogue page lists item number {i}.\n\n" for i in range(200))
    long_page = tv.result(
        "Spring Boot 3.0 release notes",
        "https://spring.example/notes",
        "Spring Boot 3.0 requires Java 17; the release notes list every change.",
        0.9,
        raw_content=f"{filler}{JAVA} Upgrade your JDK first.\n",
    )
    assert long_page["raw_content"].index(JAVA) > 9_000

    def quote_java(prompt: str) -> dict[str, Any]:
        return {"facts": [{"kind": "finding", "statement": JAVA, "quote": JAVA}]}

    anthropic_server.auto(claude(drafts=[f"## Summary\n{JAVA} [S1]\n"], analysis=quote_java))
    tavily_server.auto(lambda body: tv.results([long_page]))
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC)
    assert (1.0, 1) == (report.verification["ratio"], report.verification["rounds"])
    assert 1 == report.llm_calls["verification"]
    (prompt,) = verify_prompts(anthropic_server)
    assert JAVA in prompt
    assert len(prompt) < 3_000  # the passage around the quote, not the whole page
    assert "Java 17" in report.summary


async def test_a_quote_around_a_changed_number_supports_nothing(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Claude quotes the real sentence for a claim whose number it changed (Java 21 for
    Java 17): the fact is dropped at analysis, the claim fails verification, naming the
    number, and never reaches the report."""
    changed = JAVA.replace("17", "21")

    def analysis(prompt: str) -> dict[str, Any]:
        return {
            "facts": [
                {"kind": "finding", "statement": changed, "quote": JAVA},
                {"kind": "finding", "statement": JAVA, "quote": JAVA},
            ]
        }

    anthropic_server.auto(claude(drafts=[f"## Summary\n{changed} [S1]\n"], analysis=analysis))
    tavily_server.auto(lambda body: tv.results([page(SPRING)]))
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC)
    evidence = saved(report.folder, "evidence.json")
    assert [(1, [JAVA])] == [(a["dropped"], [f["statement"] for f in a["facts"]]) for a in evidence]
    first = saved(report.folder, "verification.json")["history"][0]["checks"][0]
    assert (changed, False) == (first["text"], first["supported"])
    assert "does not state 21" in first["reason"]
    assert "Java 21" not in report.summary


async def test_a_gap_round_verifies_only_new_and_changed_claims(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Round one: one claim holds, one does not; the gap round's draft keeps the first
    claim and adds a new one: only the new one is sent to the verifier again."""
    hibernate = "Hibernate 6 is the default JPA provider after the Spring Boot 3 migration."
    made_up = "Spring Boot 3 doubles application startup speed on every platform."
    anthropic_server.auto(
        claude(
            drafts=[
                f"## Summary\n{JAVA} [S1] {made_up} [S1]\n",
                f"## Summary\n{JAVA} [S1] {hibernate} [S3]\n",
            ]
        )
    )
    tavily_server.auto(
        lambda body: tv.results(
            [page(BAELDUNG)] if "doubles" in body["query"] else [page(SPRING), page(PREPARING)]
        )
    )
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC)
    assert (1.0, 2) == (report.verification["ratio"], report.verification["rounds"])
    sent = [[text for _, text, _ in CLAIM.findall(p)] for p in verify_prompts(anthropic_server)]
    assert [[JAVA, made_up], [hibernate]] == sent
    history = saved(report.folder, "verification.json")["history"]
    assert [JAVA, hibernate] == [c["text"] for c in history[1]["checks"] if c["supported"]]


async def test_a_page_cannot_break_out_of_its_fence(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A page closes the ``<source>`` fence, orders Claude to ignore its rules and opens a
    fake ``S9``: every prompt still holds only the retrieved sources' fences, the order
    stays inside one, and the report cites only retrieved sources. The stand-in obeys
    whatever it finds outside a fence, as a model that took the bait would."""
    evil = tv.hostile("https://spam.example.net/deals")

    def gullible(prompt: str) -> dict[str, Any]:
        outside = ANY_SOURCE.sub("", prompt)
        if "IGNORE ALL PREVIOUS RULES" in outside:
            return {"results": [{"id": sid, "score": 1.0} for sid, _ in ANY_SOURCE.findall(prompt)]}
        return rate(prompt)

    anthropic_server.auto(claude(drafts=[f"## Summary\n{JAVA} [S2] [S9]\n"], rating=gullible))
    tavily_server.auto(lambda body: tv.results([evil, page(SPRING), page(PREPARING)]))
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC)
    retrieved = {s["id"] for s in saved(report.folder, "search_results.json")}
    assert {"S1", "S2", "S3"} == retrieved
    for request in anthropic_server.requests:
        prompt = prompt_of(request.body)
        assert {sid for sid, _ in ANY_SOURCE.findall(prompt)} <= retrieved
        assert "IGNORE ALL PREVIOUS RULES" not in ANY_SOURCE.sub("", prompt)
    # The report numbers sources in order of first use: tell them apart by address.
    address = {s["id"]: s["locator"] for s in saved(report.folder, "search_results.json")}
    relevance = {
        address[v["source"]]: v["relevant"] for v in saved(report.folder, "relevance.json")
    }
    assert (False, True) == (relevance[evil["url"]], relevance[page(SPRING)["url"]])
    assert "[S9]" not in report.markdown and "spam.example.net" not in report.markdown
    assert "Java 8" not in report.markdown
    assert [] == [c for c in re.findall(r"\[(S\d+)\]", report.markdown) if c not in retrieved]


async def test_relevance_is_judged_on_the_title_and_the_snippet(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A page whose text opens with 1,000 characters of navigation but whose Tavily
    snippet is on the topic is rated on the snippet, and kept."""
    menu = "Home | Products | Pricing | Careers | Contact | Login | " * 20
    assert len(menu) > 1_000
    navigated = tv.result(
        SPRING.title,
        SPRING.locator,
        "Spring Boot 3.0 requires Java 17 as a minimum version.",
        0.9,
        raw_content=f"{menu}\n\n{SPRING.text}",
    )
    anthropic_server.auto(claude(drafts=[f"## Summary\n{JAVA} [S1]\n"]))
    tavily_server.auto(lambda body: tv.results([navigated]))
    report = await on_servers(anthropic_server, tavily_server).deep_research(TOPIC)
    (rated,) = [prompt_of(r.body) for r in anthropic_server.requests if stage(r.body) == "rate"]
    assert "Careers" not in rated and "requires Java 17" in rated
    assert "completed" == report.status
    assert [SPRING.locator] == [s["locator"] for s in report.sources]


async def test_the_prompts_that_reason_about_time_carry_the_clocks_date(
    home: Path, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """The assistant's clock dates the session: the query, relevance and synthesis
    prompts say today's date, and ``session.json`` starts then."""
    anthropic_server.auto(claude(drafts=[f"## Summary\n{JAVA} [S1]\n"]))
    tavily_server.auto(lambda body: tv.results([page(SPRING)]))
    assistant = on_servers(anthropic_server, tavily_server)
    assistant.clock = lambda: datetime(2031, 3, 4, 23, 30, tzinfo=UTC)
    report = await assistant.deep_research(TOPIC)
    dated = {
        stage(r.body)
        for r in anthropic_server.requests
        if "Today's date: 2031-03-04." in prompt_of(r.body)
    }
    assert {"query", "rate", "synthesis"} == dated
    assert saved(report.folder, "session.json")["created_at"].startswith("2031-03-04T23:30")
