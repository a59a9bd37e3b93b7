"""Company name index: resolve names, aliases and tickers; find companies in text."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from ._base import DataSource
from ._lookup import NameLookup, Resolution
from ._ref import CompanyRef
from ._text import (
    ORDINARY_WORDS,
    TICKER_STOPWORDS,
    key_of,
    name_keys,
    short_name,
)


class CompanyMatch(BaseModel):
    """A company mentioned in a text."""

    model_config = ConfigDict(use_attribute_docstrings=True, frozen=True)

    name: str
    """Canonical name of the company, e.g. ``"Apple Inc."``."""
    matched: str
    """The text as written, e.g. ``"apple"``, ``"$aapl"`` or ``"Microsft"``."""
    score: float
    """1.0 for an exact name, alias or ticker; the similarity ratio for a typo."""


@dataclass
class _Entry:
    ref: CompanyRef
    short_key: str
    tickers: set[str] = field(default_factory=set)


class CompanyIndex:
    """Index of companies by name, short name, alias and ticker.

    Built from one or more lists of ``CompanyRef`` (e.g. the mock source's and
    the directory's): refs with the same short name that share a ticker (or of
    which one has no ticker) are merged into one entry, whose canonical name is
    the first one seen.
    """

    def __init__(self, *ref_lists: Iterable[CompanyRef]) -> None:
        """Index the refs of every list, in order; earlier lists take priority."""
        self._entries: list[_Entry] = []
        self._by_short: dict[str, list[int]] = {}
        for refs in ref_lists:
            for ref in refs:
                self._add(ref)
        self._by_key: dict[str, list[int]] = {}
        self._by_ticker: dict[str, list[int]] = {}
        self._build_lookups()
        self._lookup = NameLookup([entry.ref for entry in self._entries])
        self._by_name = {entry.ref.name: i for i, entry in reversed(list(enumerate(self._entries)))}

    @classmethod
    async def from_sources(cls, sources: Iterable[DataSource]) -> CompanyIndex:
        """Build an index of the companies of ``sources``, in a worker thread."""
        ref_lists = [await source.companies() for source in sources]
        return await asyncio.to_thread(cls, *ref_lists)

    @property
    def refs(self) -> list[CompanyRef]:
        """Copies of the merged companies, in insertion order."""
        return [entry.ref.model_copy(deep=True) for entry in self._entries]

    def __len__(self) -> int:
        """Number of distinct companies."""
        return len(self._entries)

    def _add(self, ref: CompanyRef) -> None:
        short_key = key_of(short_name(ref.name))
        tickers = {ticker.upper() for ticker in ref.tickers}
        for entry_id in self._by_short.get(short_key, []):
            entry = self._entries[entry_id]
            if not tickers or not entry.tickers or tickers & entry.tickers:
                self._merge(entry, ref, tickers)
                return
        self._by_short.setdefault(short_key, []).append(len(self._entries))
        self._entries.append(_Entry(ref.model_copy(deep=True), short_key, tickers))

    @staticmethod
    def _merge(entry: _Entry, ref: CompanyRef, tickers: set[str]) -> None:
        known = {entry.ref.name, *entry.ref.aliases}
        for alias in (ref.name, *ref.aliases):
            if alias not in known:
                entry.ref.aliases.append(alias)
                known.add(alias)
        for ticker in ref.tickers:
            if ticker.upper() not in entry.tickers:
                entry.ref.tickers.append(ticker)
        entry.tickers |= tickers

    def _build_lookups(self) -> None:
        # Canonical names first so that they win over other companies' aliases.
        for entry_id, entry in enumerate(self._entries):
            for key in name_keys(entry.ref.name):
                self._by_key.setdefault(key, []).append(entry_id)
        for entry_id, entry in enumerate(self._entries):
            for alias in entry.ref.aliases:
                for key in name_keys(alias) - ORDINARY_WORDS:
                    ids = self._by_key.setdefault(key, [])
                    if entry_id not in ids:
                        ids.append(entry_id)
        # Primary tickers first so that they win over other companies' secondary ones.
        for primary in (True, False):
            for entry_id, entry in enumerate(self._entries):
                tickers = entry.ref.tickers[:1] if primary else entry.ref.tickers[1:]
                for ticker in tickers:
                    ids = self._by_ticker.setdefault(ticker.upper(), [])
                    if entry_id not in ids:
                        ids.append(entry_id)

    def resolve(self, name: str, *, fuzzy: bool = False) -> CompanyRef | None:
        """The company exactly named ``name`` (name, short name, alias or ticker).

        Names are case-insensitive; so are tickers unless they are ordinary words
        ("on", "it") written in lower case. With ``fuzzy``, a one-word name (legal
        suffixes aside) one typo away from a company name also resolves
        ("Microsft", "amazn inc").
        """
        text = name.strip()
        if text in self._by_name:  # a canonical name as given: "First BanCorp", not "First Bancorp"
            return self._ref(self._by_name[text])
        for key in (key_of(text), key_of(short_name(text))):
            if key in self._by_key:
                return self._ref(self._by_key[key][0])
        ticker = text.removeprefix("$").upper()
        if ticker in self._by_ticker and (
            text.startswith("$") or text.isupper() or ticker not in TICKER_STOPWORDS
        ):
            return self._ref(self._by_ticker[ticker][0])
        if fuzzy:
            ids = self._lookup.resolve(text)
            if len(ids) == 1:
                return self._ref(ids[0])
        return None

    def find_names(self, text: str) -> Resolution:
        """The companies a question names (with the evidence for each), the choices
        when a name fits several or matched too weakly to answer, and the names it
        holds that no company has (see ``NameLookup``)."""
        return self._lookup.find(text)

    def candidates(self, name: str, *, fuzzy: bool = True) -> list[CompanyRef]:
        """The companies ``name`` may mean, as a person means it: one when it names a
        company (name, alias, ticker, one typo, or the start of one company's name:
        "Delta" -> Delta Air Lines), several when it starts the names of several
        ("Deutsche", or "Mitsubishi": Mitsubishi Corporation's short name and the
        start of seven more), none when nothing fits."""
        text = name.strip()
        if not key_of(text):
            return []
        if not fuzzy:
            ref = self.resolve(text)
            return [] if ref is None else [ref]
        return [self._ref(entry_id) for entry_id in self._lookup.resolve(text, weak=True)]

    def starting_with(self, name: str) -> list[CompanyRef]:
        """The companies whose names start with the words of ``name`` and go on
        ("Deutsche" -> Deutsche Bank, Deutsche Börse, ...); none for an ordinary word."""
        if key_of(name) in ORDINARY_WORDS:
            return []
        return [self._ref(entry_id) for entry_id in self._lookup.starting_with(name)]

    def _ref(self, entry_id: int) -> CompanyRef:
        return self._entries[entry_id].ref.model_copy(deep=True)

    def find_in_text(self, text: str) -> list[CompanyMatch]:
        """Companies mentioned in ``text`` with enough evidence, in order of first
        appearance, without repeats (see ``find_names``)."""
        found = self._lookup.find(text)
        return [
            CompanyMatch(
                name=name,
                matched=found.matched[name],
                score=0.9 if found.evidence[name] == "typo" else 1.0,
            )
            for name in found.companies
        ]
