"""Offline company directory: real profiles from the data ``pytickersymbols`` bundles."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Final

from .._logging import get_logger
from .._tracing import search_span
from ._base import (
    DataScope,
    DataSource,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)
from ._describe import DescriptionIndex
from ._format import fiscal_year, format_money, split_products
from ._index import CompanyIndex
from ._peers import PeerIndex, PeerRanking
from ._profiles import CompanyProfile, clean_founded, clean_value, load_profiles, split_people
from ._ref import CompanyRef

_log = get_logger(__name__)

MAX_INDUSTRIES: Final = 6
"""Industries listed in an overview, at most."""

MAX_LISTINGS: Final = 6
"""Share listings shown in stock info, at most."""

INTENT_CAPS: Final[dict[str, int]] = {
    "overview": 9,
    "comparison": 9,
    "leadership": 9,
    "products": 8,
    "financials": 9,
    "competitors": 8,
    "stock": 4,
    "strategy": 3,
    "news": 3,
}
"""Highest confidence per intent: the directory has no news, share prices nor strategy."""

UNAVAILABLE: Final[tuple[str, ...]] = ("news", "share_price", "strategy")
"""Topics the directory never has."""

HINT: Final = "set TAVILY_API_KEY for live data"
"""How to get what the directory lacks."""

MISSING_CAP: Final = 3
"""Highest confidence when the asked-for field (people, products) is missing."""

INTENT_NOTES: Final[dict[str, str]] = {
    "news": "the offline directory has no news",
    "stock": "no live share price or market cap in the offline directory",
    "strategy": "no strategy or plans in the offline directory, products only",
}
"""What the directory cannot answer, per intent, added to ``SearchResult.note``."""


@dataclass(frozen=True)
class _Directory:
    profiles: dict[str, CompanyProfile]
    index: CompanyIndex
    dataset: str
    peers: PeerIndex
    findings: dict[str, ResearchFindings] = field(default_factory=dict)
    """``profile_findings`` of each profile asked about, computed once (copied on use)."""

    @functools.cached_property
    def indices(self) -> list[str]:
        """The stock indices the directory covers, the largest first."""
        counts: dict[str, int] = {}
        for profile in self.profiles.values():
            for index in profile.indices:
                name = index.replace("_", " ")
                counts[name] = counts.get(name, 0) + 1
        return sorted(counts, key=lambda name: (-counts[name], name))

    def findings_of(self, name: str) -> ResearchFindings:
        """The findings of profile ``name`` (a copy the caller may change)."""
        cached = self.findings.get(name)
        if cached is None:
            cached = profile_findings(self.profiles[name], self.peers.rank(name))
            self.findings[name] = cached
        return cached.model_copy(deep=True)


class _LazyDirectory:
    """Loads the profiles and builds the index once, on first use, thread-safely."""

    def __init__(self, loader: Callable[[], list[CompanyProfile]]) -> None:
        self._loader = loader
        self._lock = threading.Lock()
        self.value: _Directory | None = None
        self.descriptions: DescriptionIndex | None = None

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
                self.value = _Directory(
                    {p.name: p for p in profiles}, index, dataset, PeerIndex(profiles)
                )
                _log.info(
                    "company directory loaded",
                    companies=len(index),
                    seconds=round(time.perf_counter() - start, 3),
                )
            return self.value

    def get_descriptions(self) -> DescriptionIndex:
        """The description index, built on first use only (blocking: call from a thread)."""
        directory = self.get()
        with self._lock:
            if self.descriptions is None:
                self.descriptions = DescriptionIndex(directory.profiles.values())
            return self.descriptions


_SHARED: Final = _LazyDirectory(load_profiles)


NOT_LISTED: Final = "not in the offline directory"
"""How a directory search's note starts when the company is not in it."""


def not_listed_note(companies: int, indices: list[str]) -> str:
    """The note of a search for a company the directory does not hold: how many
    companies it has, and from which indices."""
    return f"{NOT_LISTED} of {companies:,} companies from {', '.join(indices)}"


def completeness(profile: CompanyProfile) -> int:
    """How complete a profile is, 0-10: one point per fact present."""
    data = profile.metadata
    facts = (
        profile.industries,
        data.headquarters,
        data.founded,
        data.employees,
        profile.website_url,
        data.key_people,
        profile.listings,
        data.revenue,
        data.net_income,
        data.products,
    )
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


def _money(value: str | None) -> str | None:
    return value and format_money(clean_value(value))


def _overview(profile: CompanyProfile) -> str | None:
    data = profile.metadata
    unique: dict[str, str] = {}
    for label in profile.industries:
        # "Consumer electronics Software services" is a list run together
        words = label.split()
        run_together = all(w.isalpha() for w in words) and any(w.islower() for w in words)
        parts = split_products(label) if run_together else [label]
        for item in parts:
            unique.setdefault(" ".join(item.lower().split()), clean_value(item))
    industries = "; ".join(list(unique.values())[:MAX_INDUSTRIES]) or None
    return _lines(
        ("Industries", industries),
        ("Country", profile.country),
        ("Headquarters", data.headquarters and clean_value(data.headquarters)),
        ("Founded", data.founded and clean_founded(data.founded)),
        ("Employees", data.employees and clean_value(data.employees)),
        ("Company type", data.company_type and clean_value(data.company_type)),
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
        ("Index membership", _indices(profile)),
        ("ISIN", ", ".join(profile.isins) or None),
        ("Revenue", _money(data.revenue)),
        ("Operating income", _money(data.operating_income)),
        ("Net income", _money(data.net_income)),
        ("Total assets", _money(data.total_assets)),
        ("Total equity", _money(data.total_equity)),
    )


def _indices(profile: CompanyProfile) -> str | None:
    return ", ".join(i.replace("_", " ") for i in profile.indices) or None


def _ceo(key_people: str | None) -> str | None:
    """The person whose role names the CEO, from "Name (role); Name (role)"."""
    for entry in (key_people or "").split("; "):
        name, _, role = entry.partition("(")
        if "ceo" in role.lower() or "chief executive" in role.lower():
            return name.strip()
    return None


def _facts(profile: CompanyProfile, key_people: str | None) -> dict[str, str]:
    data = profile.metadata
    facts = {
        "revenue": _money(data.revenue),
        "net_income": _money(data.net_income),
        "employees": data.employees and clean_value(data.employees),
        "headquarters": data.headquarters and clean_value(data.headquarters),
        "founded": data.founded and clean_founded(data.founded),
        "ceo": _ceo(key_people),
        "indices": _indices(profile),
    }
    return {key: value for key, value in facts.items() if value}


def scope_of(profile: CompanyProfile) -> DataScope:
    """What the directory lacks, and the year its figures are for."""
    data = profile.metadata
    year = fiscal_year(data.revenue, data.net_income, data.employees)
    as_of = f"figures as of {year} from the bundled directory" if year else None
    return DataScope(
        source="the offline directory", unavailable=list(UNAVAILABLE), hint=HINT, as_of=as_of
    )


def profile_findings(profile: CompanyProfile, peers: PeerRanking | None = None) -> ResearchFindings:
    """Map a profile (and its industry ranking) to findings; every value is taken
    from the profile or the directory."""
    data = profile.metadata
    key_people = data.key_people and split_people(data.key_people)
    founders = ", ".join(profile.founder_names())
    products = ", ".join(profile.product_items())
    sources = []
    if profile.wikipedia_url:
        sources.append(SourceRef(title=f"{profile.name} - Wikipedia", url=profile.wikipedia_url))
    if profile.website_url:
        sources.append(SourceRef(title=f"{profile.name} website", url=profile.website_url))
    return ResearchFindings(
        company=profile.name,
        overview=_overview(profile),
        stock_info=_stock_info(profile),
        key_people=_lines(("Key people", key_people), ("Founders", founders or None)),
        products=products or None,
        competitors=peers.describe() if peers is not None else None,
        sources=sources,
        facts=_facts(profile, key_people),
        scope=scope_of(profile),
    )


class DirectorySource(DataSource):
    """Offline data source over ~1,800 index constituents (no network, no news).

    Profiles come from the Wikipedia-derived data bundled with ``pytickersymbols``;
    they are loaded and indexed once, lazily, in a worker thread.
    """

    name: str = "Company Directory"
    """Reported as ``SearchResult.source_name``."""
    reads_feedback: bool = False
    """Answers by name from fixed data: a retry with feedback finds the same."""

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

    async def profiles(self) -> list[CompanyProfile]:
        """Every profile of the directory, in its order (the loaded objects: read only)."""
        return list((await self._directory()).profiles.values())

    async def companies(self) -> Sequence[CompanyRef]:
        """Every company of the directory."""
        return (await self._directory()).index.refs

    async def resolve(self, company: str) -> CompanyRef | None:
        """The directory company named ``company`` (name, alias, ticker or one typo)."""
        return (await self._directory()).index.resolve(company, fuzzy=True)

    async def peers(self, company: str) -> PeerRanking | None:
        """``company`` (any name the index resolves) among the directory's companies
        of its industry, ranked by revenue; ``None`` if unknown or alone in it."""
        directory = await self._directory()
        ref = directory.index.resolve(company, fuzzy=True)
        return None if ref is None else directory.peers.rank(ref.name)

    async def describe(self, text: str) -> list[str]:
        """Companies whose products or industries match a description ("the one that
        makes iphones"), best first: one name when one company clearly matches, else
        up to three candidates (empty when nothing matches)."""
        descriptions = self._lazy.descriptions
        if descriptions is None:
            descriptions = await asyncio.to_thread(self._lazy.get_descriptions)
        return descriptions.match(text)

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Answer from the company's profile; confidence depends on ``context.intent``."""
        with search_span(self.name, company) as span:
            result = await self._search(company, context)
            span.set_attribute("research_fsm.search.results", 0 if result.findings is None else 1)
            return result

    async def _search(self, company: str, context: SearchContext) -> SearchResult:
        directory = await self._directory()
        ref = directory.index.resolve(company, fuzzy=True)
        if ref is None:
            return SearchResult(
                findings=None,
                confidence=0,
                source_name=self.name,
                note=not_listed_note(len(directory.profiles), directory.indices),
            )
        profile = directory.profiles[ref.name]
        findings = directory.findings_of(profile.name)
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
