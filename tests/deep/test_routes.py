"""Every route of the deep-research graph, offline and with a scripted Claude."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from research_fsm import ResearchAssistant
from research_fsm.deep import Found, StaticSearch
from research_fsm.engine import MemoryCheckpointStore

from .conftest import CORPUS, PASTA, TOPIC
from .llm import claude


def _queries(folder: Path) -> list[dict[str, object]]:
    return list(json.loads((folder / "queries.json").read_text(encoding="utf-8")))


async def test_enough_results_take_one_query(home: Path) -> None:
    """A first search that finds top_k results goes straight on: one query, not broadened."""
    web = StaticSearch(CORPUS, mode="docs")
    assistant = ResearchAssistant(store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research("Spring Boot 3 migration", top_k=2)
    assert "completed" == report.status
    assert [("Spring Boot 3 migration", False)] == web.queries
    assert report.folder is not None
    assert 1 == len(_queries(report.folder))
    assert 2 == len(report.sources)


async def test_too_few_results_retry_with_a_broadened_query(
    assistant: ResearchAssistant, web: StaticSearch
) -> None:
    """Fewer results than top_k: the query parser runs again and the search matches any term."""
    report = await assistant.deep_research(TOPIC)
    assert "completed" == report.status
    assert [False, True] == [broadened for _, broadened in web.queries]
    assert report.folder is not None
    assert [1, 2] == [q["attempt"] for q in _queries(report.folder)]
    locators = {s["locator"] for s in report.sources}
    assert PASTA.locator not in locators


async def test_nothing_found_ends_with_an_honest_report(home: Path) -> None:
    """Two searches that find nothing: a report saying so, no citations, no answer."""
    assistant = ResearchAssistant(store=MemoryCheckpointStore(), web_search=StaticSearch([]))
    report = await assistant.deep_research("lattice quantum chromodynamics")
    assert "no_sources" == report.status
    assert "No sources were found" in report.markdown
    assert "[S" not in report.markdown
    assert ("", [], []) == (report.summary, report.key_points, report.sources)
    assert report.folder is not None
    assert 2 == len(_queries(report.folder))


async def test_an_irrelevant_corpus_is_said_to_be_irrelevant(home: Path) -> None:
    """Results that hold too few of the topic's terms are filtered out: no answer."""
    web = StaticSearch([PASTA], mode="docs")
    assistant = ResearchAssistant(store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research("pasta carbonara recipe with eggs")
    assert "no_sources" == report.status
    assert "do not answer" in report.markdown
    assert [] == report.sources


async def test_offline_verification_passes_and_counts_match_the_file(
    assistant: ResearchAssistant,
) -> None:
    """Offline, every claim is a source sentence: all supported in one round, as saved."""
    report = await assistant.deep_research(TOPIC)
    assert report.folder is not None
    saved = json.loads((report.folder / "verification.json").read_text(encoding="utf-8"))
    assert (1, True, 1.0) == (saved["rounds"], saved["passed"], saved["ratio"])
    assert saved["claims"] == report.verification["claims"] > 0
    assert saved["supported"] == report.verification["supported"]


GAP_SOURCE = Found(
    kind="web",
    title="Spring Boot 3 native images",
    locator="https://docs.spring.io/spring-boot/native-image.html",
    text="Spring Boot 3 supports GraalVM native images through Spring AOT processing.",
)


def cite(prompt: str, words: str) -> str:
    """The ``[S#]`` of the fact in a synthesis prompt that holds ``words``."""
    line = next(line for line in prompt.splitlines() if words in line)
    return line[line.rindex("[") :]


def draft(*claims: tuple[str, str]) -> Callable[[str], str]:
    """A synthesis reply: each claim cites the source of the fact holding its key words
    (or, for a made-up claim, the first source in the prompt)."""

    def write(prompt: str) -> str:
        first = cite(prompt, "[S")
        body = " ".join(f"{text} {cite(prompt, key) if key else first}." for text, key in claims)
        return f"## Summary\n{body}\n"

    return write


async def test_failed_verification_searches_the_gaps_then_passes(home: Path) -> None:
    """Under 80% supported: the next round searches for the unsupported claim, analyses the
    new source, and a second draft citing it is verified."""
    web = StaticSearch([*CORPUS[:3], GAP_SOURCE], mode="docs")
    java = ("Spring Boot 3.0 requires Java 17 as a minimum version", "requires Java 17")
    first = draft(java, ("Spring Boot 3 supports GraalVM native images through Spring AOT", ""))
    second = draft(
        java,
        ("Spring Boot 3 supports GraalVM native images through Spring AOT processing", "GraalVM"),
    )
    llm = claude([first, second])
    assistant = ResearchAssistant(llm=llm, store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research("Spring Boot 3 migration", top_k=3)
    assert report.folder is not None
    saved = json.loads((report.folder / "verification.json").read_text(encoding="utf-8"))
    assert [0.5, 1.0] == [entry["ratio"] for entry in saved["history"]]
    purposes = [q["purpose"] for q in _queries(report.folder)]
    assert "gaps" == purposes[-1]
    assert "native images" in report.summary
    assert GAP_SOURCE.locator in {s["locator"] for s in report.sources}


async def test_the_loop_stops_after_two_rounds_and_flags_what_never_held(home: Path) -> None:
    """A claim no source supports: two verification rounds, then the report leaves it out
    and lists it, flagged, under Verification."""
    web = StaticSearch([*CORPUS[:3], GAP_SOURCE], mode="docs")
    made_up = "Spring Boot 3 doubles application startup speed on every platform"
    java = ("Spring Boot 3.0 requires Java 17 as a minimum version", "requires Java 17")
    write = draft(java, (made_up, ""))
    llm = claude([write, write])
    assistant = ResearchAssistant(llm=llm, store=MemoryCheckpointStore(), web_search=web)
    report = await assistant.deep_research("Spring Boot 3 migration")
    assert 2 == report.verification["rounds"]
    assert (False, 0.5) == (report.verification["passed"], report.verification["ratio"])
    assert made_up not in report.summary
    flagged = report.markdown.split("Not supported (left out of this report)")[1]
    assert made_up in flagged
    assert 2 == len([c for c in llm.calls if c.agent == "synthesis"])
    # the second draft repeats the first: its claims keep their checks, no second call
    assert 1 == len([c for c in llm.calls if c.agent == "verification"])
