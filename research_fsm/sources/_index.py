"""Company name index: resolve names, aliases and tickers; find companies in text."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from pydantic import BaseModel, ConfigDict

from ._base import DataSource
from ._lookup import NameLookup, Resolution
from ._ref import CompanyRef
from ._text import (
    COMMON_WORDS,
    ORDINARY_WORDS,
    TICKER_STOPWORDS,
    Token,
    is_ticker_like,
    key_of,
    name_keys,
    short_name,
    tokenize,
)

MAX_NGRAM: Final = 5
"""Longest company name, in words, looked for in text."""

FUZZY_MIN_LENGTH: Final = 5
"""Shortest word (and company name) that may match with a typo."""

FUZZY_CUTOFF: Final = 0.88
"""Lowest ``difflib`` similarity ratio accepted for a fuzzy match."""

TYPO_CUTOFF: Final = 0.8
"""Lowest ratio ``closest`` accepts: one wrong letter in a six-letter name ("nvidea")."""

AMBIGUOUS_OTHERS: Final = 2
"""Other companies whose names start with a short name ("Mitsubishi") that make it
ambiguous: "Mitsubishi" fits eight companies, "Apple" only Apple Inc. and one REIT."""


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


def _capitalised(token: Token) -> bool:
    """Title case: "Target" or "T", not "target" nor the all-caps "TARGET"."""
    return token.raw[:1].isupper() and (len(token.raw) == 1 or not token.raw.isupper())


def _in_proper_noun(tokens: Sequence[Token], position: int) -> bool:
    """Whether the word at ``position`` follows a title-case word inside a sentence
    ("Bill Gates", "Search Engine"), i.e. is part of some other proper noun."""
    if position == 0 or tokens[position].sentence_start:
        return False
    previous = tokens[position - 1].raw
    return previous[:1].isupper() and any(ch.islower() for ch in previous[1:])


def _case_allows(tokens: Sequence[Token], position: int, length: int, shouting: bool) -> bool:
    """Whether the words at ``position`` may be read as a company name.

    A name made only of ordinary words needs capitals ("Best Buy", "Target");
    a one-word one must also not be part of another proper noun, and a very
    common word ("Now", "Next") must not start the sentence. Names of three
    letters or fewer must not be written in lower case ("ING", not "ing").
    In an all-caps text, names made of ordinary words are never read.
    """
    window = tokens[position : position + length]
    if all(token.norm in COMMON_WORDS for token in window):
        if shouting or not all(_capitalised(token) for token in window):
            return False
        if length > 1:
            return True
        token = window[0]
        if token.norm in ORDINARY_WORDS and token.sentence_start:
            return False
        return not _in_proper_noun(tokens, position)
    if length == 1 and len(window[0].norm) <= 3:
        return window[0].raw != window[0].raw.lower()
    return True


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _plural_pair(first: str, second: str) -> bool:
    return first == second + "s" or second == first + "s"


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
        self._by_prefix: dict[str, list[int]] = {}
        self._by_ticker: dict[str, list[int]] = {}
        self._fuzzy: dict[str, set[str]] = {}
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
        for entry_id, entry in enumerate(self._entries):
            words = key_of(entry.ref.name).split()
            for length in range(1, len(words)):
                prefix = " ".join(words[:length])
                if prefix not in ORDINARY_WORDS:
                    self._by_prefix.setdefault(prefix, []).append(entry_id)
        # Primary tickers first so that they win over other companies' secondary ones.
        for primary in (True, False):
            for entry_id, entry in enumerate(self._entries):
                tickers = entry.ref.tickers[:1] if primary else entry.ref.tickers[1:]
                for ticker in tickers:
                    ids = self._by_ticker.setdefault(ticker.upper(), [])
                    if entry_id not in ids:
                        ids.append(entry_id)
        for key in self._by_key:
            if len(key) >= FUZZY_MIN_LENGTH and key.isalpha() and key not in COMMON_WORDS:
                for variant in _deletions(key) | {key}:
                    self._fuzzy.setdefault(variant, set()).add(key)

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
        return [self._ref(entry_id) for entry_id in self._by_prefix.get(key_of(name), [])]

    def _short_name_only(self, entry_id: int, key: str) -> bool:
        """Whether ``key`` reaches the entry only as its name without legal suffix
        ("Mitsubishi" for "Mitsubishi Corporation"), not as its name or an alias."""
        ref = self._entries[entry_id].ref
        if key == key_of(ref.name):
            return False
        short = key_of(short_name(ref.name))
        return key == short and not any(
            key == key_of(alias) for alias in ref.aliases if key_of(alias) != short
        )

    def closest(self, word: str, *, cutoff: float = TYPO_CUTOFF) -> CompanyRef | None:
        """The company whose one-word name ``word`` (any case) is a typo of, at most
        one letter added, missing or wrong ("micrsoft", "nvidea"), or ``None``."""
        tokens = tokenize(word)
        if len(tokens) != 1:
            return None
        token = tokens[0]
        found = self._fuzzy_match(token, capital=False, cutoff=cutoff)
        return None if found is None else self._ref(self._by_key[found[0]][0])

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

    @staticmethod
    def _is_shouting(tokens: Sequence[Token]) -> bool:
        words = [token.raw for token in tokens if token.raw.isalpha()]
        upper = [word for word in words if len(word) >= 2 and word.isupper()]
        return len(words) >= 3 and len(upper) * 10 >= len(words) * 6

    def _match_at(
        self, tokens: Sequence[Token], position: int, shouting: bool
    ) -> tuple[int, int, float] | None:
        """(entry id, words consumed, score) of a company mention at ``position``."""
        longest = min(MAX_NGRAM, len(tokens) - position)
        for length in range(longest, 0, -1):
            window = tokens[position : position + length]
            ids = self._by_key.get(" ".join(token.norm for token in window))
            if ids and _case_allows(tokens, position, length, shouting):
                return ids[0], length, 1.0
        token = tokens[position]
        if token.raw.startswith("$"):
            ticker = token.raw[1:].upper()
        else:
            ticker = token.raw if not shouting and is_ticker_like(token.raw) else ""
        if ticker in self._by_ticker:
            return self._by_ticker[ticker][0], 1, 1.0
        fuzzy = None if _in_proper_noun(tokens, position) else self._fuzzy_match(token)
        if fuzzy is not None:
            key, score = fuzzy
            return self._by_key[key][0], 1, score
        return None

    def _fuzzy_match(
        self, token: Token, *, capital: bool = True, cutoff: float = FUZZY_CUTOFF
    ) -> tuple[str, float] | None:
        """(key, ratio) of the one-word name ``token`` is a typo of; in text
        (``capital``) only capitalised words are tried."""
        word = token.norm
        if (
            len(word) < FUZZY_MIN_LENGTH
            or not word.isalpha()
            or word in COMMON_WORDS
            or (capital and not _capitalised(token))
        ):
            return None
        candidates: set[str] = set()
        for variant in _deletions(word) | {word}:
            candidates |= self._fuzzy.get(variant, set())
        best: tuple[str, float] | None = None
        for key in sorted(candidates):
            if key == word or _plural_pair(key, word):
                continue
            score = difflib.SequenceMatcher(None, word, key).ratio()
            if score >= cutoff and (best is None or score > best[1]):
                best = (key, round(score, 3))
        return best
