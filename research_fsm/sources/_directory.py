"""Offline company directory: real profiles from the data ``pytickersymbols`` bundles."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Final

import structlog

from ._base import (
    CompanyRef,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)
from ._index import CompanyIndex
from ._profiles import CompanyProfile, clean_founded, clean_text, load_profiles, split_people

_log = structlog.get_logger(__name__)

MAX_INDUSTRIES: Final = 6
"""Industries listed in an overview, at most."""

MAX_LISTINGS: Final = 6
"""Share listings shown in stock info, at most."""

INTENT_CAPS: Final[dict[str, int]] = {
    "overview": 9,
    "comparison": 9,
    "leadership": 9,
    "products": 8,
    "stock": 5,
    "competitors": 4,
    "news": 3,
}
"""Highest confidence per intent: the directory has no news, prices nor competitors."""

MISSING_CAP: Final = 3
"""Highest confidence when the asked-for field (people, products) is missing."""

INTENT_NOTES: Final[dict[str, str]] = {
    "news": "the offline directory has no news",
    "stock": "no live share price or market cap in the offline directory",
    "competitors": "no competitor data in the offline directory, industries only",
}
"""What the directory cannot answer, per intent, added to ``SearchResult.note``."""


@dataclass(frozen=True)
class _Directory:
    profiles: dict[str, CompanyProfile]
    index: CompanyIndex
    dataset: str


class _LazyDirectory:
    """Loads the profiles and builds the index once, on first use, thread-safely."""

    def __init__(self, loader: Callable[[], list[CompanyProfile]]) -> None:
        self._loader = loader
        self._lock = threading.Lock()
        self.value: _Directory | None = None

    def get(self) -> _Directory:
        """The directory, loading it first if needed (blocking: call from a thread)."""
        with self._lock:
            if self.value is None:
                start = time.perf_counter()
                profiles = self._loader()
                index = CompanyIndex(profile.to_ref() for profile in profiles)
                try:
                    dataset = f"pytickersymbols {metadata.version('pytickersymbols')}"
                except metadata.PackageNotFoundError:
                    dataset = "pytickersymbols"
                self.value = _Directory({p.name: p for p in profiles}, index, dataset)
                _log.info(
                    "company directory loaded",
                    companies=len(index),
                    seconds=round(time.perf_counter() - start, 3),
                )
            return self.value


_SHARED: Final = _LazyDirectory(load_profiles)


def completeness(profile: CompanyProfile) -> int:
    """How complete a profile is, 0-10: one point per fact present."""
    data = profile.metadata
    facts = (
        profile.industries, data.headquarters, data.founded, data.employees,
        profile.website_url, data.key_people, profile.listings, data.revenue,
        data.net_income, data.products,
    )  # fmt: skip
    return sum(1 for fact in facts if fact)


def intent_confidence(profile: CompanyProfile, intent: str) -> int:
    """Confidence that the profile answers ``intent``: completeness, capped by what
    the directory can say about that intent."""
    cap = INTENT_CAPS.get(intent, INTENT_CAPS["overview"])
    data = profile.metadata
    if (intent == "leadership" and not data.key_people) or (
        intent == "products" and not data.products
    ):
        cap = MISSING_CAP
    if intent == "stock" and not (profile.listings and (data.revenue or data.net_income)):
        cap = MISSING_CAP
    return min(completeness(profile), cap)


def _lines(*pairs: tuple[str, str | None]) -> str | None:
    text = "\n".join(f"{label}: {value}" for label, value in pairs if value)
    return text or None


def _overview(profile: CompanyProfile) -> str | None:
    data = profile.metadata
    industries = "; ".join(profile.industries[:MAX_INDUSTRIES]) or None
    return _lines(
        ("Industries", industries),
        ("Country", profile.country),
        ("Headquarters", data.headquarters and clean_text(data.headquarters)),
        ("Founded", data.founded and clean_founded(data.founded)),
        ("Employees", data.employees and clean_text(data.employees)),
        ("Company type", data.company_type and clean_text(data.company_type)),
        ("Website", profile.website_url),
    )


def _stock_info(profile: CompanyProfile) -> str | None:
    data = profile.metadata
    listings = [
        f"{item.google or item.yahoo}" + (f" ({item.currency})" if item.currency else "")
        for item in profile.listings[:MAX_LISTINGS]
        if item.google or item.yahoo
    ]
    return _lines(
        ("Listings", ", ".join(listings) or None),
        ("Traded as", data.traded_as and clean_text(data.traded_as)),
        ("Index membership", ", ".join(i.replace("_", " ") for i in profile.indices) or None),
        ("ISIN", ", ".join(profile.isins) or None),
        ("Revenue", data.revenue and clean_text(data.revenue)),
        ("Operating income", data.operating_income and clean_text(data.operating_income)),
        ("Net income", data.net_income and clean_text(data.net_income)),
        ("Total assets", data.total_assets and clean_text(data.total_assets)),
        ("Total equity", data.total_equity and clean_text(data.total_equity)),
    )


def profile_findings(profile: CompanyProfile) -> ResearchFindings:
    """Map a profile to findings; every value is taken from the profile."""
    data = profile.metadata
    sources = []
    if profile.wikipedia_url:
        sources.append(SourceRef(title=f"{profile.name} - Wikipedia", url=profile.wikipedia_url))
    if profile.website_url:
        sources.append(SourceRef(title=f"{profile.name} website", url=profile.website_url))
    return ResearchFindings(
        company=profile.name,
        overview=_overview(profile),
        stock_info=_stock_info(profile),
        key_people=_lines(
            ("Key people", data.key_people and split_people(data.key_people)),
            ("Founders", data.founder and clean_text(data.founder)),
        ),
        products=data.products and clean_text(data.products),
        sources=sources,
    )


class DirectorySource:
    """Offline data source over ~1,800 index constituents (no network, no news).

    Profiles come from the Wikipedia-derived data bundled with ``pytickersymbols``;
    they are loaded and indexed once, lazily, in a worker thread.
    """

    name: str = "Company Directory"
    """Reported as ``SearchResult.source_name``."""

    def __init__(self, loader: Callable[[], list[CompanyProfile]] | None = None) -> None:
        """Use the bundled data, or ``loader``'s profiles (for tests)."""
        self._lazy = _SHARED if loader is None else _LazyDirectory(loader)

        self._custom = loader is not None

    def is_available(self) -> bool:
        """Whether the data can be loaded: ``pytickersymbols`` is installed."""
        return self._custom or importlib.util.find_spec("pytickersymbols") is not None

    async def _directory(self) -> _Directory:
        loaded = self._lazy.value
        if loaded is not None:
            return loaded
        try:
            return await asyncio.to_thread(self._lazy.get)
        except Exception as exc:
            message = f"company directory could not be loaded: {exc}"
            raise DataSourceError(message, source=self.name, retryable=False) from exc

    async def company_index(self) -> CompanyIndex:
        """The name index this source built for itself (shared, built once)."""
        return (await self._directory()).index

    async def companies(self) -> Sequence[CompanyRef]:
        """Every company of the directory."""
        return (await self._directory()).index.refs

    async def resolve(self, company: str) -> CompanyRef | None:
        """The directory company named ``company`` (name, alias, ticker or one typo)."""
        return (await self._directory()).index.resolve(company, fuzzy=True)

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Answer from the company's profile; confidence depends on ``context.intent``."""
        directory = await self._directory()
        ref = directory.index.resolve(company, fuzzy=True)
        if ref is None:
            return SearchResult(
                findings=None,
                confidence=0,
                source_name=self.name,
                note=f"company {company!r} not found in directory",
            )
        profile = directory.profiles[ref.name]
        findings = profile_findings(profile)
        findings.raw_data = {
            "searched_name": company,
            "matched": ref.name,
            "dataset": directory.dataset,
            "profile": profile.model_dump(mode="json", exclude_none=True),
        }
        notes = ["offline company profile", INTENT_NOTES.get(context.intent)]
        return SearchResult(
            findings=findings,
            confidence=intent_confidence(profile, context.intent),
            source_name=self.name,
            note="; ".join(note for note in notes if note),
        )
