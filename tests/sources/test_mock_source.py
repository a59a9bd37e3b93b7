"""Tests of MockDataSource: the design's five companies, deterministic."""

from __future__ import annotations

import asyncio

import pytest

from research_fsm.sources import DataSourceError, MockDataSource, SearchContext

APPLE_NEWS = (
    "Launched Vision Pro, expanding services revenue. Q4 earnings beat expectations with "
    "$89.5B revenue."
)
APPLE_STOCK = "AAPL trading at $195, up 45% YTD. Market cap: $3.0T. P/E ratio: 31.2."


async def test_apple_has_the_design_figures() -> None:
    """Apple's findings carry the design's news and stock texts verbatim."""
    result = await MockDataSource().search("Apple Inc.", SearchContext(query="Tell me about Apple"))
    assert result.findings is not None
    assert ("Apple Inc.", APPLE_NEWS, APPLE_STOCK) == (
        result.findings.company,
        result.findings.recent_news,
        result.findings.stock_info,
    )


async def test_microsoft_has_confidence_ten() -> None:
    """Design scenario 11: "Tell me about Microsoft" gives mock data with confidence 10."""
    result = await MockDataSource().search("Microsoft", SearchContext())
    assert (10, "Microsoft Corporation", "Mock Data Source") == (
        result.confidence,
        result.findings.company if result.findings else None,
        result.source_name,
    )


async def test_unknown_company_has_no_findings_and_confidence_zero() -> None:
    """Design scenario 12: an unknown company gives null findings and confidence 0."""
    result = await MockDataSource().search("RandomCorp", SearchContext())
    assert (None, 0, "company 'RandomCorp' not found in mock data") == (
        result.findings,
        result.confidence,
        result.note,
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("apple", "Apple Inc."),
        ("APPLE INC.", "Apple Inc."),
        ("AAPL", "Apple Inc."),
        ("$aapl", "Apple Inc."),
        ("tesla", "Tesla, Inc."),
        ("Tesla Motors", "Tesla, Inc."),
        ("microsoft corp", "Microsoft Corporation"),
        ("Amazon", "Amazon.com, Inc."),
        ("amazon.com", "Amazon.com, Inc."),
        ("AMZN", "Amazon.com, Inc."),
        ("google", "Alphabet Inc. (Google)"),
        ("Alphabet", "Alphabet Inc. (Google)"),
        ("GOOGL", "Alphabet Inc. (Google)"),
        ("goog", "Alphabet Inc. (Google)"),
        ("Microsft", "Microsoft Corporation"),
    ],
)
async def test_lookup_by_name_alias_and_ticker(name: str, expected: str) -> None:
    """Names, short names, aliases and tickers all resolve, case-insensitively."""
    result = await MockDataSource().search(name, SearchContext())
    assert expected == (result.findings.company if result.findings else None)


async def test_every_company_has_two_sources_on_distinct_hosts() -> None:
    """Each mock company cites at least two sources on different hosts."""
    source = MockDataSource()
    hosts = []
    for ref in await source.companies():
        result = await source.search(ref.name, SearchContext())
        assert result.findings is not None
        hosts.append(len({item.url.split("/")[2] for item in result.findings.sources}))
    assert [2, 2, 2, 2, 2] == hosts


async def test_raw_data_records_the_lookup() -> None:
    """raw_data keeps the searched name, the normalised key and the attempt."""
    result = await MockDataSource().search("GOOGL", SearchContext(attempt=2))
    assert result.findings is not None
    expected = {"searched_name": "GOOGL", "normalized_to": "google", "attempt_number": 2}
    assert expected == result.findings.raw_data


async def test_partial_fields_lower_confidence() -> None:
    """With fields={"stock_info"} only stock info is filled and confidence is 3 + 1."""
    source = MockDataSource(fields={"stock_info"})
    result = await source.search("Apple", SearchContext())
    assert result.findings is not None
    assert (["stock_info"], 4, "partial mock data") == (
        result.findings.populated_fields(),
        result.confidence,
        result.note,
    )


async def test_full_from_attempt_answers_in_full_on_retry() -> None:
    """full_from_attempt=2 gives partial data on attempt 1 and full data on attempt 2."""
    source = MockDataSource(fields=set(), full_from_attempt=2)
    first = await source.search("Tesla", SearchContext(attempt=1))
    second = await source.search("Tesla", SearchContext(attempt=2, feedback="need news"))
    assert (1, 10) == (first.confidence, second.confidence)


async def test_calls_are_recorded() -> None:
    """Every search is recorded with its context, so a test can check retry feedback."""
    source = MockDataSource()
    await source.search("Apple", SearchContext(attempt=2, feedback="more news"))
    assert [("Apple", "more news")] == [(name, ctx.feedback) for name, ctx in source.calls]


def test_unknown_partial_field_is_refused() -> None:
    """fields must name mock fields; a typo raises ValueError."""
    with pytest.raises(ValueError, match="stock_infos"):
        MockDataSource(fields={"stock_infos"})


async def test_fail_with_raises_the_given_error() -> None:
    """fail_with makes every search raise that DataSourceError."""
    error = DataSourceError("timeout", source="Mock Data Source", retryable=True)
    with pytest.raises(DataSourceError) as caught:
        await MockDataSource(fail_with=error).search("Apple", SearchContext())
    assert error is caught.value


async def test_delay_defaults_to_zero_and_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches sleep only when asked: `delay` seconds in every search."""
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    await MockDataSource().search("Apple", SearchContext())
    instant = list(slept)
    source = MockDataSource(delay=0.05)
    await asyncio.gather(*(source.search("Apple", SearchContext()) for _ in range(3)))
    assert ([], [0.05, 0.05, 0.05]) == (instant, slept)


async def test_mock_is_available_and_lists_five_companies() -> None:
    """The mock is always available and knows the design's five companies."""
    source = MockDataSource()
    names = [ref.name for ref in await source.companies()]
    expected = [
        "Apple Inc.",
        "Tesla, Inc.",
        "Microsoft Corporation",
        "Amazon.com, Inc.",
        "Alphabet Inc. (Google)",
    ]
    assert (True, expected) == (source.is_available(), names)
