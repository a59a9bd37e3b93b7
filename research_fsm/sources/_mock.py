"""Deterministic mock data source with the five companies of the design."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from ._base import (
    DataSource,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)
from ._index import CompanyIndex
from ._ref import CompanyRef

MOCK_FIELDS: Final[tuple[str, ...]] = ("recent_news", "stock_info", "key_developments")
"""The finding fields the mock data fills."""


@dataclass(frozen=True)
class _MockCompany:
    key: str
    ref: CompanyRef
    recent_news: str
    stock_info: str
    key_developments: str
    sources: tuple[SourceRef, ...]


def _company(
    key: str,
    name: str,
    aliases: list[str],
    tickers: list[str],
    texts: tuple[str, str, str],
    sources: tuple[tuple[str, str], ...],
) -> _MockCompany:
    return _MockCompany(
        key=key,
        ref=CompanyRef(name=name, aliases=aliases, tickers=tickers),
        recent_news=texts[0],
        stock_info=texts[1],
        key_developments=texts[2],
        sources=tuple(SourceRef(title=title, url=url) for title, url in sources),
    )


MOCK_COMPANIES: Final[dict[str, _MockCompany]] = {
    item.key: item
    for item in (
        _company(
            "apple",
            "Apple Inc.",
            ["Apple"],
            ["AAPL"],
            (
                "Launched Vision Pro, expanding services revenue. Q4 earnings beat "
                "expectations with $89.5B revenue.",
                "AAPL trading at $195, up 45% YTD. Market cap: $3.0T. P/E ratio: 31.2.",
                "AI integration across product line with Apple Intelligence. M3 chip family "
                "rollout complete. Services revenue hit all-time high.",
            ),
            (
                ("Apple Investor Relations", "https://investor.apple.com/"),
                ("Apple Inc. - Wikipedia", "https://en.wikipedia.org/wiki/Apple_Inc."),
            ),
        ),
        _company(
            "tesla",
            "Tesla, Inc.",
            ["Tesla", "Tesla Motors"],
            ["TSLA"],
            (
                "Cybertruck deliveries ramping up to 2,500/week. Q3 deliveries exceeded "
                "435,000 vehicles.",
                "TSLA trading at $242, volatile quarter with 15% swings. Market cap: $770B.",
                "FSD v12 rollout with end-to-end neural networks. Energy storage deployments "
                "up 90% YoY. Megapack demand exceeds supply.",
            ),
            (
                ("Tesla Investor Relations", "https://ir.tesla.com/"),
                ("Tesla, Inc. - Wikipedia", "https://en.wikipedia.org/wiki/Tesla,_Inc."),
            ),
        ),
        _company(
            "microsoft",
            "Microsoft Corporation",
            ["Microsoft"],
            ["MSFT"],
            (
                "Copilot integration across Office 365 suite. Azure revenue growth of 29% YoY.",
                "MSFT trading at $378, up 52% YTD. Market cap: $2.8T. Dividend yield: 0.8%.",
                "OpenAI partnership deepening with exclusive cloud deal. GitHub Copilot reached "
                "1.3M paid subscribers. Xbox Game Pass at 34M subscribers.",
            ),
            (
                ("Microsoft Investor Relations", "https://www.microsoft.com/en-us/investor"),
                ("Microsoft - Wikipedia", "https://en.wikipedia.org/wiki/Microsoft"),
            ),
        ),
        _company(
            "amazon",
            "Amazon.com, Inc.",
            ["Amazon", "Amazon.com"],
            ["AMZN"],
            (
                "AWS re:Invent announced new AI services. Prime membership exceeded 200M globally.",
                "AMZN trading at $153, up 68% YTD. Market cap: $1.6T.",
                "Bedrock AI platform gaining enterprise traction. One Medical integration "
                "complete. Drone delivery expanding to new markets.",
            ),
            (
                ("Amazon Investor Relations", "https://ir.aboutamazon.com/"),
                ("Amazon (company) - Wikipedia", "https://en.wikipedia.org/wiki/Amazon_(company)"),
            ),
        ),
        _company(
            "google",
            "Alphabet Inc. (Google)",
            ["Alphabet", "Alphabet Inc.", "Google"],
            ["GOOGL", "GOOG"],
            (
                "Gemini Ultra launched as GPT-4 competitor. Antitrust ruling impact being "
                "assessed.",
                "GOOGL trading at $141, up 55% YTD. Market cap: $1.8T.",
                "Bard rebranded to Gemini. Cloud revenue crossed $10B/quarter. Waymo expanding "
                "robotaxi service.",
            ),
            (
                ("Alphabet Investor Relations", "https://abc.xyz/investor/"),
                ("Alphabet Inc. - Wikipedia", "https://en.wikipedia.org/wiki/Alphabet_Inc."),
            ),
        ),
    )
}
"""The design's ``MOCK_RESEARCH_DATA``, keyed by its lookup key."""

_BY_NAME: Final[dict[str, _MockCompany]] = {item.ref.name: item for item in MOCK_COMPANIES.values()}


def mock_confidence(findings: ResearchFindings) -> int:
    """The design's score: 3 each for news, stock and developments, 1 for a name."""
    score = sum(3 for name in MOCK_FIELDS if getattr(findings, name))
    return score + (1 if findings.company else 0)


class MockDataSource(DataSource):
    """Fast, deterministic data source for development and tests (no network).

    Knows Apple, Tesla, Microsoft, Amazon and Alphabet (Google) by canonical name,
    short name, alias and ticker, case-insensitively, and with one typo.
    """

    name: str = "Mock Data Source"
    """Reported as ``SearchResult.source_name``."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        fail_with: DataSourceError | None = None,
        fields: Collection[str] | None = None,
        full_from_attempt: int | None = None,
    ) -> None:
        """Configure the mock for a test.

        Args:
            delay: seconds to sleep in every search, to simulate the network.
            fail_with: raised by every search instead of answering.
            fields: only these finding fields are filled (partial data, lower
                confidence); ``None`` fills all of ``MOCK_FIELDS``.
            full_from_attempt: from this ``SearchContext.attempt`` on, ignore
                ``fields`` and answer in full (a retry that succeeds).
        """
        unknown = set(fields or ()) - set(MOCK_FIELDS)
        if unknown:
            raise ValueError(f"unknown mock fields {sorted(unknown)}; allowed: {MOCK_FIELDS}")
        self._delay = delay
        self._fail_with = fail_with
        self._fields = None if fields is None else frozenset(fields)
        self._full_from_attempt = full_from_attempt
        self._index = CompanyIndex(item.ref for item in MOCK_COMPANIES.values())
        self.calls: list[tuple[str, SearchContext]] = []
        """Every ``search`` call, in order, for assertions in tests."""

    def is_available(self) -> bool:
        """Always true: the mock needs no key nor network."""
        return True

    async def companies(self) -> Sequence[CompanyRef]:
        """The five mock companies."""
        return [item.ref.model_copy(deep=True) for item in MOCK_COMPANIES.values()]

    def _fields_for(self, attempt: int) -> frozenset[str]:
        if self._fields is None or (
            self._full_from_attempt is not None and attempt >= self._full_from_attempt
        ):
            return frozenset(MOCK_FIELDS)
        return self._fields

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Answer from the mock data; unknown companies give no findings and confidence 0."""
        self.calls.append((company, context))
        if self._delay > 0:
            await asyncio.sleep(self._delay)
        if self._fail_with is not None:
            raise self._fail_with
        ref = self._index.resolve(company, fuzzy=True)
        if ref is None:
            return SearchResult(
                findings=None,
                confidence=0,
                source_name=self.name,
                note=f"company {company!r} not found in mock data",
            )
        data = _BY_NAME[ref.name]
        fields = self._fields_for(context.attempt)
        findings = ResearchFindings(
            company=data.ref.name,
            recent_news=data.recent_news if "recent_news" in fields else None,
            stock_info=data.stock_info if "stock_info" in fields else None,
            key_developments=data.key_developments if "key_developments" in fields else None,
            sources=[source.model_copy() for source in data.sources],
            raw_data={
                "searched_name": company,
                "normalized_to": data.key,
                "attempt_number": context.attempt,
            },
        )
        partial = fields != frozenset(MOCK_FIELDS)
        return SearchResult(
            findings=findings,
            confidence=mock_confidence(findings),
            source_name=self.name,
            note="partial mock data" if partial else None,
        )
