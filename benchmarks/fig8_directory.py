"""Figure 8: the offline company directory: index build and lookups.

Build: a new ``DirectorySource(loader=load_profiles)`` answering its first
``companies()`` (loads the ~1,800 profiles bundled with ``pytickersymbols``
and builds the name index), split into loading the profiles and building the
``CompanyIndex``; and building the assistant's graph on the loaded directory
(which reuses the directory's index). The first build of the process (cold
imports) is reported apart; the rest are medians.

Lookups, per query: ``CompanyIndex.resolve(name, fuzzy=True)`` over names,
aliases, tickers, typos and unknown names; ``find_in_text`` over questions;
``DirectorySource.search`` (profile -> findings) over companies.
LangGraph has no counterpart: its columns are "n/a".
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ._common import FigureResult, Row, Sizes, fmt, md_table, median

TITLE = "DirectorySource: index build and lookups"
NAMES = [
    "Apple",
    "Apple Inc.",
    "apple inc",
    "AAPL",
    "$msft",
    "Microsoft",
    "Microsft",
    "Alphabet",
    "Google",
    "Tesla",
    "Siemens",
    "SAP",
    "Nestle",
    "Volkswagen",
    "Amazn",
    "Deutsche Bank",
    "Acme Widgets",
    "Zzyzx Corp",
]
QUESTIONS = [
    "What's happening with Apple?",
    "Compare Microsoft and Alphabet on revenue",
    "Who is the CEO of Siemens?",
    "Tell me about the company",
    "How is NVDA doing this year?",
    "What products does Nestle sell, and how does it compare with Unilever?",
    "Is Microsft a good investment?",
    "what about their stock?",
]
SEARCH_COMPANIES = ["Apple Inc.", "Microsoft", "Siemens", "SAP", "Volkswagen", "Unknown Co"]


async def _build(load_profiles: Any) -> dict[str, float]:
    from research_fsm.sources import CompanyIndex, DirectorySource

    t0 = time.perf_counter()
    source = DirectorySource(loader=load_profiles)
    await source.companies()
    t1 = time.perf_counter()
    profiles = load_profiles()
    t2 = time.perf_counter()
    CompanyIndex(profile.to_ref() for profile in profiles)
    t3 = time.perf_counter()
    from research_fsm import ResearchAssistant
    from research_fsm.engine import MemoryCheckpointStore

    await ResearchAssistant(source=source, store=MemoryCheckpointStore()).graph()
    t4 = time.perf_counter()
    return {"first_use": t1 - t0, "load": t2 - t1, "index": t3 - t2, "assistant_index": t4 - t3}


def _per_call_us(fn: Any, items: list[Any], rounds: int) -> float:
    for item in items:
        fn(item)
    t0 = time.perf_counter()
    for _ in range(rounds):
        for item in items:
            fn(item)
    return (time.perf_counter() - t0) / (rounds * len(items)) * 1e6


async def _search_us(source: Any, rounds: int) -> float:
    from research_fsm.sources import SearchContext

    context = SearchContext(query="overview", intent="overview")
    for name in SEARCH_COMPANIES:
        await source.search(name, context)
    t0 = time.perf_counter()
    for _ in range(rounds):
        for name in SEARCH_COMPANIES:
            await source.search(name, context)
    return (time.perf_counter() - t0) / (rounds * len(SEARCH_COMPANIES)) * 1e6


def run(sizes: Sizes, peer: bool) -> FigureResult:
    from research_fsm.sources import CompanyIndex, DirectorySource
    from research_fsm.sources._profiles import load_profiles

    fig = FigureResult(8, TITLE)
    builds = [asyncio.run(_build(load_profiles)) for _ in range(sizes.fig8_builds + 1)]
    cold, warm = builds[0], builds[1:]
    build = {k: median([b[k] for b in warm]) for k in cold}
    profiles = load_profiles()
    index = CompanyIndex(profile.to_ref() for profile in profiles)
    rounds = sizes.fig8_rounds
    resolve_us = _per_call_us(lambda q: index.resolve(q, fuzzy=True), NAMES, rounds)
    find_us = _per_call_us(index.find_in_text, QUESTIONS, rounds)
    source = DirectorySource(loader=load_profiles)
    search_us = asyncio.run(_search_us(source, rounds))
    per_name = [
        (
            q,
            fmt(_per_call_us(lambda x: index.resolve(x, fuzzy=True), [q], rounds)),
            getattr(index.resolve(q, fuzzy=True), "name", None),
        )
        for q in NAMES
    ]
    per_question = [
        (
            q,
            fmt(_per_call_us(index.find_in_text, [q], rounds)),
            ", ".join(m.name for m in index.find_in_text(q)) or "-",
        )
        for q in QUESTIONS
    ]

    fig.rows += [
        Row(
            metric=f"directory first use: load {len(profiles):,} profiles + build the index",
            unit="ms",
            research_fsm=build["first_use"] * 1e3,
        ),
        Row(metric="building the CompanyIndex alone", unit="ms", research_fsm=build["index"] * 1e3),
        Row(
            metric="the assistant's graph on a loaded directory (reuses its index)",
            unit="ms",
            research_fsm=build["assistant_index"] * 1e3,
        ),
        Row(
            metric="resolve a name (exact, alias, ticker, typo, unknown)",
            unit="µs/query",
            research_fsm=resolve_us,
        ),
        Row(metric="find companies in a question", unit="µs/query", research_fsm=find_us),
        Row(
            metric="DirectorySource.search (profile -> findings)",
            unit="µs/query",
            research_fsm=search_us,
        ),
    ]
    fig.detail = {
        "companies": len(index),
        "profiles": len(profiles),
        "builds": sizes.fig8_builds,
        "rounds": rounds,
        "cold_build_s": cold,
        "build_s": build,
        "resolve_us": resolve_us,
        "find_in_text_us": find_us,
        "search_us": search_us,
    }
    fig.detail_md = [
        f"{len(profiles):,} profiles, {len(index):,} companies in the index. Build: median of "
        f"{sizes.fig8_builds} builds after a first one in this process (first: "
        f"{fmt(cold['first_use'] * 1e3, 'ms')} for first use, of which loading "
        f"{fmt(cold['load'] * 1e3, 'ms')}). Warm: load {fmt(build['load'] * 1e3, 'ms')}, "
        f"index {fmt(build['index'] * 1e3, 'ms')}, the assistant's graph (reusing the directory's index) "
        f"{fmt(build['assistant_index'] * 1e3, 'ms')}. Lookups: {rounds} rounds over the lists below.",
        "",
        *md_table(["name", "µs", "resolves to"], per_name),
        "",
        *md_table(["question", "µs", "companies found"], per_question),
    ]
    return fig
