"""Tests of DirectorySource: real, offline profiles from pytickersymbols' bundled data."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import defaultdict
from typing import Any

import pytest
from pytickersymbols import PyTickerSymbols  # type: ignore[import-untyped]

from research_fsm.sources import DataSourceError, DirectorySource, SearchContext
from research_fsm.sources._directory import profile_findings
from research_fsm.sources._profiles import CompanyProfile, ProfileMetadata, load_profiles

LABEL_RE = re.compile(r"^[A-Z][A-Za-z]+(?: [a-z]+)?: ", re.MULTILINE)
WORD_RE = re.compile(r"[^\W_]+")


@pytest.fixture(scope="module")
def raw_records() -> dict[str, list[dict[str, Any]]]:
    """Every raw record of the bundled data, by company name."""
    data = PyTickerSymbols()
    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for index in data.get_all_indices():
        for record in data.get_stocks_by_index(index):
            records[record["name"]].append(record)
    return records


def apple_raw(raw_records: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    metadata: dict[str, Any] = raw_records["Apple Inc."][0]["metadata"]
    return metadata


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Apple Inc.", "Apple Inc."),
        ("apple", "Apple Inc."),
        ("AAPL", "Apple Inc."),
        ("$tsla", "Tesla, Inc."),
        ("Tesla Inc", "Tesla, Inc."),
        ("Google", "Alphabet Inc."),
        ("GOOG", "Alphabet Inc."),
        ("nvidia", "Nvidia"),
        ("Microsft", "Microsoft"),
        ("Coca Cola", "The Coca-Cola Company"),
        ("Nestle", "Nestlé SA"),
    ],
)
async def test_lookup_by_name_alias_and_ticker(name: str, expected: str) -> None:
    """Canonical names, short names, aliases, tickers and one typo all resolve."""
    result = await DirectorySource().search(name, SearchContext())
    assert expected == (result.findings.company if result.findings else None)


async def test_unknown_company_is_not_found() -> None:
    """An unknown company gives no findings, confidence 0 and a note saying it is not
    in the directory, how many companies it holds and from which indices."""
    result = await DirectorySource().search("Acme Corp", SearchContext())
    note = result.note or ""
    assert (None, 0, True, True) == (
        result.findings,
        result.confidence,
        re.match(r"not in the offline directory of 1,\d{3} companies from ", note) is not None,
        all(index in note for index in ("S&P 500", "NIKKEI 225", "FTSE 100", "DAX")),
    )


async def test_apple_figures_are_the_data_values(
    raw_records: dict[str, list[dict[str, Any]]],
) -> None:
    """Apple's revenue, net income and headcount are the bundled values, unchanged."""
    raw = apple_raw(raw_records)
    result = await DirectorySource().search("Apple", SearchContext())
    assert result.findings is not None
    stock, overview = result.findings.stock_info or "", result.findings.overview or ""
    assert [f"Revenue: {raw['revenue']}", f"Net income: {raw['net_income']}", True] == [
        next(line for line in stock.splitlines() if line.startswith("Revenue")),
        next(line for line in stock.splitlines() if line.startswith("Net income")),
        f"Employees: {raw['employees']}" in overview,
    ]


async def test_apple_people_are_the_data_names(
    raw_records: dict[str, list[dict[str, Any]]],
) -> None:
    """Apple's key people are the names of the bundled infobox, one per entry."""
    raw = apple_raw(raw_records)
    people = re.findall(r"([A-Z][\w.]*(?: [A-Z][\w.]*)*) \(", raw["key_people"])
    result = await DirectorySource().search("Apple", SearchContext(intent="leadership"))
    assert result.findings is not None
    first_line = (result.findings.key_people or "").splitlines()[0]
    expected = "Key people: " + "; ".join(
        f"{name} ({role.strip()})"
        for name, role in zip(people, re.findall(r"\(([^)]*)\)", raw["key_people"]), strict=True)
    )
    assert expected == first_line


async def test_apple_sources_are_the_data_urls(
    raw_records: dict[str, list[dict[str, Any]]],
) -> None:
    """Sources are the Wikipedia URL and the website of the data, nothing else."""
    raw = apple_raw(raw_records)
    result = await DirectorySource().search("AAPL", SearchContext())
    assert result.findings is not None
    urls = [ref.url for ref in result.findings.sources]
    assert [raw["wikipedia_url"], f"https://{raw['website']}"] == urls


async def test_offline_data_has_no_news_fields() -> None:
    """recent_news and key_developments stay empty: the data holds neither."""
    result = await DirectorySource().search("Siemens", SearchContext(intent="news"))
    assert result.findings is not None
    assert (None, None) == (result.findings.recent_news, result.findings.key_developments)


@pytest.mark.parametrize(
    ("intent", "expected"),
    [
        ("overview", 9),
        ("comparison", 9),
        ("leadership", 9),
        ("products", 8),
        ("financials", 9),
        ("competitors", 8),
        ("stock", 4),
        ("strategy", 3),
        ("news", 3),
    ],
)
async def test_confidence_follows_the_intent(intent: str, expected: int) -> None:
    """A full profile is 9 for an overview but low for news, share prices and strategy,
    which the directory cannot have."""
    result = await DirectorySource().search("Apple", SearchContext(intent=intent))
    assert expected == result.confidence


async def test_news_intent_note_says_there_is_no_news() -> None:
    """The note tells the validator why news confidence is low."""
    result = await DirectorySource().search("Apple", SearchContext(intent="news"))
    assert "offline company profile; the offline directory has no news" == result.note


def test_every_word_and_number_of_every_profile_comes_from_the_data(
    raw_records: dict[str, list[dict[str, Any]]],
) -> None:
    """No invented facts: each word of every profile's findings is in its raw records."""
    invented: dict[str, set[str]] = {}
    for profile in load_profiles():
        findings = profile_findings(profile)
        raw_text = json.dumps(raw_records[profile.name], ensure_ascii=False)
        texts = [findings.overview, findings.stock_info, findings.key_people, findings.products]
        body = "\n".join(text for text in texts if text)
        place_as_country = any("," in str(r.get("country")) for r in raw_records[profile.name])
        body = "\n".join(
            line
            for line in body.splitlines()
            if not line.startswith("Index membership:")
            and not (place_as_country and line.startswith("Country:"))  # a city: its country
        )
        body = LABEL_RE.sub("", body).replace("https://", "")
        missing = {word for word in WORD_RE.findall(body) if word not in raw_text}
        if missing:
            invented[profile.name] = missing
    assert {} == invented


def test_every_source_url_is_a_data_url(raw_records: dict[str, list[dict[str, Any]]]) -> None:
    """Every source URL of every profile is its Wikipedia URL or its website."""
    wrong = {}
    for profile in load_profiles():
        raw = json.dumps(raw_records[profile.name], ensure_ascii=False)
        urls = [ref.url for ref in profile_findings(profile).sources]
        bad = [url for url in urls if url not in raw and url.removeprefix("https://") not in raw]
        if bad:
            wrong[profile.name] = bad
    assert {} == wrong


async def test_companies_lists_the_whole_directory() -> None:
    """companies() returns ~1,800 refs, Apple among them with its ticker."""
    refs = await DirectorySource().companies()
    apple = next(ref for ref in refs if ref.name == "Apple Inc.")
    assert (True, "AAPL") == (len(refs) > 1500, apple.tickers[0])


def _tiny_profiles(calls: list[str]) -> list[CompanyProfile]:
    calls.append(threading.current_thread().name)
    return [
        CompanyProfile(
            name="Widget Works Inc.",
            symbols_primary=["WDGT"],
            industries=["Widgets"],
            metadata=ProfileMetadata(key_people="Ann Lee (CEO)"),
        )
    ]


async def test_index_is_built_once_in_a_worker_thread() -> None:
    """Concurrent first searches load the data once, off the event loop's thread."""
    calls: list[str] = []
    source = DirectorySource(loader=lambda: _tiny_profiles(calls))
    results = await asyncio.gather(
        *(source.search("Widget Works", SearchContext()) for _ in range(10))
    )
    found = {result.findings.company for result in results if result.findings}
    assert (1, {"Widget Works Inc."}, True) == (
        len(calls),
        found,
        calls[0] != threading.main_thread().name,
    )


async def test_sparse_profile_scores_low_for_leadership_without_people() -> None:
    """A profile without key people scores at most 3 for a leadership question."""
    profile = CompanyProfile(name="Bare Co", industries=["Widgets"], symbols_primary=["BARE"])
    source = DirectorySource(loader=lambda: [profile])
    result = await source.search("Bare Co", SearchContext(intent="leadership"))
    assert 1 == result.confidence


async def test_loader_failure_is_a_data_source_error() -> None:
    """If the data cannot be loaded, search raises a non-retryable DataSourceError."""

    def broken() -> list[CompanyProfile]:
        raise OSError("disk gone")

    with pytest.raises(DataSourceError) as caught:
        await DirectorySource(loader=broken).search("Apple", SearchContext())
    assert ("Company Directory", False) == (caught.value.source, caught.value.retryable)
