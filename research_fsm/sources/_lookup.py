"""Company names in a question, as people type them, with a precision guard.

Every company gets its name forms (name, short name, aliases, each squashed to letters,
digits and ``&``: "McDonald's", "mc donalds" and "mcdonalds" are one form), the starts
of its name at word boundaries ("exxon" of ExxonMobil, "jp morgan" of JPMorgan Chase)
and its tickers. A question's words are matched, longest span first, by evidence:
an exact form beats a ticker, a ticker beats a start of a name, and all beat a typo. A
typo (one letter added, missing, wrong or swapped) counts only for a word that is not
English, of six letters or more, with one company at that distance; a weaker or
ambiguous match is never answered: it gives the candidates to choose from. Words that
look like a name but match nothing are reported as unknown names.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from rapidfuzz.distance import OSA

from ._clean import UK_PLACES, US_PLACES
from ._english import english_words
from ._ref import CompanyRef
from ._text import COMMON_WORDS, LEGAL_SUFFIXES, ORDINARY_WORDS, TICKER_STOPWORDS, short_name
from ._words import ACRONYMS, PLACES

__all__ = ["NameLookup", "Resolution", "squash"]

MAX_SPAN: Final = 6
"""Longest name, in words, looked for."""

MAX_TYPO_SPAN: Final = 6
"""Longest name, in words, matched with a typo."""

TYPO_MIN: Final = 5
"""Shortest squashed name that may match with a typo; below ``TYPO_ANSWER`` the
match only offers the candidate."""

TYPO_MULTI: Final = 8
"""Shortest squashed name of several words that may match with a typo ("us bacnorp")."""

TYPO_ANSWER: Final = 6
"""Shortest squashed name a typo match answers with."""

MAX_CHOICES: Final = 10
"""Most companies offered for one ambiguous name."""

AMBIGUOUS_OTHERS: Final = 3
"""Other companies whose names start with a short name ("Mitsubishi") that make it
ambiguous: "Mitsubishi" fits eight companies, "Coca-Cola" The Coca-Cola Company and
two bottlers whose names start with it."""

DESCRIPTIVE: Final = frozenset(
    [
        "american",
        "british",
        "swiss",
        "japanese",
        "german",
        "french",
        "european",
        "chinese",
        "korean",
        "indian",
        "canadian",
        "dutch",
        "italian",
        "spanish",
        "swedish",
        "finnish",
        "danish",
        "norwegian",
        "belgian",
        "australian",
        "international",
        "national",
        "global",
        "world",
        "first",
        "standard",
        "public",
        "federal",
        "central",
        "western",
        "northern",
        "southern",
        "eastern",
        "general",
        "united",
    ]
)
"""Words that start many companies' names but, alone, describe ("American rivals")."""

_LATIN: Final = r"0-9A-Za-z\u00c0-\u024f"
_TOKEN_RE: Final = re.compile(rf"\$?[{_LATIN}]+(?:[&'\u2019.:\-/][{_LATIN}]+)*(?:['\u2019]s?)?|&")
_CAMEL_RE: Final = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])|(?<=[A-Z])(?=[A-Z][a-z]{2,})")
_SQUASH_RE: Final = re.compile(r"[^0-9a-z&]")
_SENTENCE_END_RE: Final = re.compile(r"[.!?;:\n\"]|。|？|！")
_JA_AFTER_RE: Final = re.compile(r"^\s*(について|の|は|を|と|が|って|で|に|、|。|？|\?)")

QUESTION_WORDS: Final = frozenset(
    [
        "what",
        "whats",
        "what's",
        "who",
        "whos",
        "how",
        "why",
        "when",
        "where",
        "which",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "tell",
        "show",
        "give",
        "compare",
        "explain",
        "describe",
        "list",
        "find",
        "hi",
        "hello",
        "hey",
        "please",
        "thanks",
        "thank",
        "i",
        "im",
        "i'm",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "it",
        "its",
        "they",
        "their",
        "this",
        "that",
        "these",
        "those",
        "the",
        "a",
        "an",
        "and",
        "or",
        "vs",
        "versus",
        "about",
        "of",
        "on",
        "for",
        "with",
        "to",
        "in",
        "at",
        "by",
        "from",
    ]
)
"""Words that are never a company's name on their own."""

SLOT_BEFORE: Final = frozenset(
    ["about", "of", "on", "for", "vs", "versus", "with", "and", "compare", "than", "between"]
)
"""Words after which a company's name is expected ("tell me about X", "X vs Y")."""

SLOT_AFTER: Final = frozenset(
    [
        "vs",
        "versus",
        "and",
        "or",
        "stock",
        "stocks",
        "shares",
        "share",
        "revenue",
        "revenues",
        "sales",
        "profit",
        "profits",
        "earnings",
        "ceo",
        "cfo",
        "founder",
        "founders",
        "headquarters",
        "hq",
        "employees",
        "competitors",
        "rivals",
        "news",
        "products",
        "market",
        "dividend",
        "dividends",
        "valuation",
    ]
)
"""Words before which a company's name is expected ("X stock", "X vs Y")."""


_PLACES: Final = PLACES | {fold_place.lower() for fold_place in US_PLACES | UK_PLACES}


def fold(text: str) -> str:
    """Lower case, without accents, with typographic apostrophes made plain."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


@functools.lru_cache(maxsize=65536)
def squash(text: str) -> str:
    """A name's letters, digits and ``&`` only, folded, without a ``.com`` ending:
    "McDonald's" -> "mcdonalds", "Coca-Cola" -> "cocacola", "P&G" -> "p&g"."""
    text = fold(text)
    if ".com" in text:
        text = re.sub(r"\.com\b", "", text)
    return _SQUASH_RE.sub("", text)


def _name_words(name: str) -> list[str]:
    """A name's words, camel case split ("ExxonMobil" -> Exxon, Mobil; "JPMorgan Chase"
    -> JP, Morgan, Chase), hyphens as spaces."""
    text = re.sub(r"\.com\b", "", name).replace("-", " ").replace("/", " ")
    return [word for word in _CAMEL_RE.sub(" ", text).split() if squash(word)]


@dataclass(frozen=True, slots=True)
class _Word:
    raw: str
    norm: str
    """Folded, without a possessive ``'s``."""
    full: str
    """Folded, as written (``"mcdonald's"``)."""
    start: int
    end: int
    sentence_start: bool


def _words(text: str) -> list[_Word]:
    words: list[_Word] = []
    previous_end = 0
    for match in _TOKEN_RE.finditer(text):
        raw = match.group()
        gap = text[previous_end : match.start()]
        if words and gap.startswith(".") and _abbreviation(words[-1].raw):
            gap = gap[1:]  # "St. James's Place", "J. Front Retailing", "Amazon.com Inc. shares"
        starts = not words or bool(_SENTENCE_END_RE.search(gap))
        full = fold(raw.removeprefix("$"))
        norm = re.sub(r"'s?$", "", full)
        words.append(_Word(raw, norm, full, match.start(), match.end(), starts))
        previous_end = match.end()
    return words


def _bare(word: _Word) -> str:
    """The word as written without a possessive "'s" nor a ``$``."""
    return re.sub(r"['\u2019]s$", "", word.raw).removeprefix("$")


def _abbreviation(word: str) -> bool:
    """A word a full stop may follow inside a sentence: an initial, "St", "Inc", "Co"."""
    return len(word) <= 3 or "." in word or word.lower() in LEGAL_SUFFIXES


@dataclass
class Resolution:
    """What a question names, as far as the directory goes."""

    companies: list[str] = field(default_factory=list)
    """Companies named with enough evidence, canonical names, in order."""
    choices: list[str] = field(default_factory=list)
    """Candidates of the first name that fits several companies, or that matched with
    too little evidence to answer (a short typo): the user picks one."""
    unknown: list[str] = field(default_factory=list)
    """Names as written that the directory does not hold ("SpaceX")."""
    evidence: dict[str, str] = field(default_factory=dict)
    """Per company answered: ``exact``, ``ticker``, ``prefix`` or ``typo``."""
    matched: dict[str, str] = field(default_factory=dict)
    """Per company answered: the text as written."""
    weak: str | None = None
    """When the choices come from a match too weak to answer (a short typo): the name
    as written, which no company has exactly."""


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    length: int
    ids: tuple[int, ...]
    kind: str
    ask: bool = False


class NameLookup:
    """The name forms, name starts and tickers of a list of companies."""

    def __init__(self, refs: Sequence[CompanyRef]) -> None:
        """Index ``refs`` (their order is the entry ids' order)."""
        self._names = [ref.name for ref in refs]
        self._forms: dict[str, list[int]] = {}
        self._short_only: dict[str, set[int]] = {}
        self._full: dict[str, set[int]] = {}
        self._prefixes: dict[str, list[int]] = {}
        self._tickers: dict[str, list[tuple[int, int]]] = {}
        self._typo_keys: dict[str, set[str]] | None = None
        self._lock = threading.Lock()
        for entry_id, ref in enumerate(refs):
            self._add_forms(entry_id, ref)
        # (rank, entry): symbols as listed first, primary first; then without exchange
        order = ((False, True), (False, False), (True, True), (True, False))
        seen: set[tuple[str, int]] = set()
        for rank, (plain, primary) in enumerate(order):
            for entry_id, ref in enumerate(refs):
                for ticker in ref.tickers[:1] if primary else ref.tickers[1:]:
                    keys = _ticker_keys(ticker)
                    for key in keys[1:] if plain else keys[:1]:
                        if (key, entry_id) not in seen:
                            seen.add((key, entry_id))
                            self._tickers.setdefault(key, []).append((rank, entry_id))

    def _typos(self) -> dict[str, set[str]]:
        """Each name form (and start of one company's name) under each of its one-letter
        deletions: built on the first typo looked up (blocking, about 0.1 s)."""
        with self._lock:
            if self._typo_keys is None:
                keys: dict[str, set[str]] = {}
                unique = [k for k, v in self._prefixes.items() if len(v) == 1]
                for key in [*self._forms, *unique]:
                    if len(key) >= TYPO_MIN and not key.isdigit():
                        for variant in _deletions(key) | {key}:
                            keys.setdefault(variant, set()).add(key)
                self._typo_keys = keys
            return self._typo_keys

    def _add_forms(self, entry_id: int, ref: CompanyRef) -> None:
        short = short_name(ref.name)
        names = [ref.name, re.sub(r"\s*\([^)]*\)", "", ref.name), short, *ref.aliases]
        names += ref.former_names  # whole names only: no prefixes below ("Acme" is no Cintas)
        halves = short.split(" & ")
        if len(halves) == 2 and all(half.isalpha() for half in halves):
            names += [f"{halves[0][0]}&{halves[1][0]}", short.replace(" & ", " and ")]
        for name in dict.fromkeys(names):
            key = squash(name)
            if key:
                ids = self._forms.setdefault(key, [])
                if entry_id not in ids:
                    ids.append(entry_id)
        full_keys = {squash(ref.name), squash(re.sub(r"\s*\([^)]*\)", "", ref.name))}
        for key in full_keys:
            self._full.setdefault(key, set()).add(entry_id)
        alias_keys = {squash(a) for a in ref.aliases if squash(a) != squash(short)}
        if squash(short) not in full_keys | alias_keys:
            self._short_only.setdefault(squash(short), set()).add(entry_id)
        for name in dict.fromkeys([re.sub(r"\s*\([^)]*\)", "", ref.name), short, *ref.aliases]):
            words = _name_words(name)
            for length in range(1, len(words)):
                key = squash("".join(words[:length]))
                if key and entry_id not in self._forms.get(key, ()):
                    ids = self._prefixes.setdefault(key, [])
                    if entry_id not in ids:
                        ids.append(entry_id)

    def starting_with(self, text: str) -> list[int]:
        """Entries whose names start with ``text`` at a word boundary and go on."""
        return list(self._prefixes.get(squash(text), []))

    def name(self, entry_id: int) -> str:
        """The canonical name of an entry."""
        return self._names[entry_id]

    # -- one name ----------------------------------------------------------------

    def resolve(self, text: str, *, weak: bool = False) -> list[int]:
        """Entries the whole of ``text`` names: one when it is a name, ticker, start of
        one name or a clear typo; several when ambiguous; none when nothing fits. A
        short typo's candidate counts only with ``weak``."""
        words = _words(text)
        if not words:
            return []
        hit = (
            self._span_hit(text, words, 0, len(words), whole=True)
            if len(words) <= MAX_SPAN
            else None
        )
        if hit is None and len(words) <= MAX_TYPO_SPAN:
            hit = self._typo_hit(words, 0, len(words))
        return list(hit.ids) if hit is not None and (weak or not hit.ask) else []

    # -- a question -------------------------------------------------------------

    def find(self, text: str) -> Resolution:
        """The companies a question names, the choices when a name is ambiguous, and
        the names it has that the directory does not."""
        words = _words(text)
        hits: list[_Hit] = []
        covered = [False] * len(words)
        position = 0
        while position < len(words):
            hit = self._best_at(text, words, position)
            if hit is None:
                position += 1
                continue
            hits.append(hit)
            for i in range(hit.start, hit.start + hit.length):
                covered[i] = True
            position += hit.length
        hits.sort(key=lambda item: item.start)
        result = Resolution()
        for hit in hits:
            names = [self._names[i] for i in hit.ids]
            if hit.ask and not result.choices:
                first, last = words[hit.start], words[hit.start + hit.length - 1]
                result.weak = text[first.start : last.end]
            if len(names) == 1 and not hit.ask:
                if names[0] not in result.companies:
                    result.companies.append(names[0])
                    result.evidence[names[0]] = hit.kind
                    first, last = words[hit.start], words[hit.start + hit.length - 1]
                    result.matched[names[0]] = text[first.start : last.end]
            elif not result.choices:
                result.choices = names[:MAX_CHOICES]
        result.unknown = self._unknown(text, words, covered)
        return result

    def _best_at(self, text: str, words: list[_Word], position: int) -> _Hit | None:
        """The longest name at ``position``: at each length an exact form, ticker or
        start of a name first, then a typo (so "getty reatly" is Getty Realty, not
        Getty Realty and Realty Income)."""
        longest = min(MAX_SPAN, len(words) - position)
        for length in range(longest, 0, -1):
            if _crosses_sentence(words, position, length):
                continue
            hit = self._span_hit(text, words, position, length, whole=len(words) == length)
            if hit is not None and (
                self._stands_as_name(text, words, position, length)
                or not self._plain_words(words, position, length)
            ):
                if (
                    hit.kind == "prefix"
                    and len(hit.ids) == 1
                    and length == 1
                    and not _title(words[position])
                    and not _strong_slot(text, words, position)
                    and self._plain_words(words, position, 1)
                ):
                    return None
                if hit.kind == "prefix" and self._name_goes_on(words, position + length):
                    continue  # "Royal Mail" is not the start of Royal Caribbean's name
                return hit
            if length <= MAX_TYPO_SPAN:
                hit = self._typo_hit(words, position, length)
                if hit is not None:
                    return hit
        return None

    @staticmethod
    def _name_goes_on(words: list[_Word], start: int) -> bool:
        """Whether the name typed goes on past ``start`` with a capitalised word that is
        no legal suffix, in a sentence not written in title case: "Royal Mail", "Royal
        Dutch Shell" name something else than the company whose name starts "Royal"."""
        if start >= len(words) or words[start].sentence_start:
            return False
        after = words[start]
        if not _title(after) or after.norm in LEGAL_SUFFIXES or after.norm in QUESTION_WORDS:
            return False
        letters = [word for word in words if word.raw[:1].isalpha()]
        return sum(_title(word) for word in letters) * 10 < len(letters) * 6

    def _span_hit(
        self, text: str, words: list[_Word], start: int, length: int, *, whole: bool
    ) -> _Hit | None:
        window = words[start : start + length]
        key = squash("".join(word.norm for word in window))
        if not key or (length == 1 and (window[0].norm in QUESTION_WORDS or key in _PLACES)):
            return None
        if length == 1:
            slot = whole or _in_slot(text, words, start, 1)
            ticker = self._ticker_hit(window[0], start, slot, whole)
            named = self._forms.get(key, [])
            started = [i for i in self._prefixes.get(key, []) if ticker and i not in ticker.ids]
            if ticker is not None and named and set(named) != set(ticker.ids):
                if _bare(window[0]).isupper():  # "HP": HP Inc. by name, Helmerich & Payne by ticker
                    both = [*ticker.ids, *(i for i in named if i not in ticker.ids)]
                    return _Hit(start, 1, tuple(both), "ticker")
            elif ticker is not None and started and not named:
                # "zurn": Zurich Insurance's symbol, and the start of Zurn Elkay's name
                return _Hit(start, 1, (*ticker.ids, *started), "ticker")
            elif ticker is not None:
                return ticker
        written = squash("".join(word.norm for word in window[:-1]) + window[-1].full)
        as_typed = squash("".join(word.full for word in window))  # "the wendy's company"
        plural = key[:-1] if key.endswith("s") and len(key) > 4 else ""
        for candidate in dict.fromkeys((key, written, as_typed, plural)):
            ids = self._forms.get(candidate) if candidate else None
            if (
                ids and len(ids) > 1
            ):  # "Stabilus" is Stabilus, not STABILUS SE; "Inter Parfums" asks
                typed = fold(" ".join(_bare(word) for word in window))
                ids = [i for i in ids if fold(self._names[i]) == typed] or ids
            if ids:
                others = [i for i in self._prefixes.get(candidate, []) if i not in ids]
                short_only = self._short_only.get(candidate, set())
                if len(ids) == 1 and ids[0] in short_only and len(others) >= AMBIGUOUS_OTHERS:
                    return _Hit(start, length, tuple([ids[0], *others]), "prefix")
                return _Hit(start, length, tuple(ids), "exact")
        ids = self._prefixes.get(key)
        if ids and len(key) >= 3 and not (length == 1 and key in DESCRIPTIVE):
            # "NTT" starts NTT Data's name but is another company's nickname: offer it
            return _Hit(start, length, tuple(ids), "prefix", ask=len(key) <= 3)
        return None

    def _ticker_hit(self, word: _Word, start: int, slot: bool, whole: bool) -> _Hit | None:
        """A ticker: with ``$`` or an exchange, in capitals (not an English word), or in
        lower case where a name goes (``slot``: "whats up with msft")."""
        raw = word.raw.removesuffix("'s").removesuffix("\u2019s")
        symbol = raw.removeprefix("$").upper()
        ranked = self._tickers.get(symbol)
        if not ranked:
            return None
        best = min(rank for rank, _ in ranked)
        ids = tuple(entry_id for rank, entry_id in ranked if rank == best)
        marked = raw.startswith("$") or ":" in raw or "." in raw
        if not marked and not raw.isupper() and (best >= 2 or _title(word)):
            return None  # "App's", "zurn": a word, or a symbol without its exchange typed low
        if not marked:
            if symbol.isdigit() and not slot:
                return None
            lower = word.norm
            if raw.isupper():
                if symbol in TICKER_STOPWORDS or len(symbol) < 2:
                    return None
            elif (
                not slot
                or len(lower) < (2 if whole else 3)
                or lower in COMMON_WORDS
                or (_is_english(lower) and not (whole and len(lower) <= 2))
            ):
                return None
        return _Hit(start, 1, ids, "ticker")

    def _typo_hit(self, words: list[_Word], start: int, length: int) -> _Hit | None:
        """A name one letter away from the words (added, missing, wrong or swapped):
        one word that is no English word, or several of ``TYPO_MULTI`` letters or more; a name shorter than ``TYPO_ANSWER`` or several names at that
        distance only give the candidates."""
        window = words[start : start + length]
        if window[0].norm in QUESTION_WORDS or window[-1].raw == "&":
            return None
        if length == 1 and window[0].norm in _PLACES:
            return None
        key = squash("".join(word.norm for word in window))
        if not key.replace("&", "").isalpha():
            return None
        if length == 1 and (window[0].norm in COMMON_WORDS or _is_english(window[0].norm)):
            return None
        if len(key) < (TYPO_MIN if length == 1 else TYPO_MULTI):
            return None
        found: set[str] = set()
        typos = self._typos()
        for variant in _deletions(key) | {key}:
            found |= typos.get(variant, set())
        keys = sorted(k for k in found if k != key and OSA.distance(k, key) == 1)
        keys = [k for k in keys if not (k == key + "s" or key == k + "s")]
        if not keys:
            return None
        ids: list[int] = []
        for k in keys:
            for entry_id in self._forms.get(k) or self._prefixes.get(k, []):
                if entry_id not in ids:
                    ids.append(entry_id)
        core = squash("".join(word.norm for word in window if word.norm not in LEGAL_SUFFIXES))
        weak = len(core) < (TYPO_ANSWER if length == 1 else TYPO_MULTI)  # "Amazn Inc." is "amazn"
        # the start of a name with a letter added ("Globex": "Globe" of Globe Life) is
        # another word as likely as a typo of a shortened name: ask, never answer
        partial = all(k not in self._forms and key.startswith(k) for k in keys)
        return _Hit(start, length, tuple(ids), "typo", len(ids) > 1 or weak or partial)

    # -- the guard ----------------------------------------------------------------

    @staticmethod
    def _plain_words(words: list[_Word], start: int, length: int) -> bool:
        """Whether every word of the span is an ordinary English word."""
        return all(
            word.norm in COMMON_WORDS or word.norm in QUESTION_WORDS or _is_english(word.norm)
            for word in words[start : start + length]
        )

    def _stands_as_name(self, text: str, words: list[_Word], start: int, length: int) -> bool:
        """Whether English words stand where a name goes: capitalised inside a sentence
        ("shares of Target"), or in a name's place ("about target", "target's ceo");
        not inside another proper noun ("Mount Everest", "Epic Games") nor a place's
        name ("the Amazon rainforest")."""
        window = words[start : start + length]
        previous = words[start - 1] if start else None
        if (
            previous is not None
            and not window[0].sentence_start
            and previous.raw[:1].isupper()
            and previous.norm not in QUESTION_WORDS
            and any(ch.islower() for ch in previous.raw[1:])
        ):
            return False
        after = words[start + length] if start + length < len(words) else None
        if (
            previous is not None
            and previous.norm == "the"
            and after is not None
            and after.raw.islower()
            and after.norm not in SLOT_AFTER
            and after.norm not in QUESTION_WORDS
        ):
            return False
        if all(_title(word) for word in window) and not window[0].sentence_start:
            return True
        if len(words) == length:
            return True
        return _in_slot(text, words, start, length)

    def _unknown(self, text: str, words: list[_Word], covered: list[bool]) -> list[str]:
        """Runs of name-like words no company matched ("SpaceX", "Reliance Industries",
        "Mickey D's"): capitalised or not English, and read as a name when one of them
        is not English and the run is capitalised or stands where a name goes, or when
        capitalised English words stand inside a sentence where a name goes."""
        names: list[str] = []
        position = 0
        short = len(words) <= 3
        while position < len(words):
            end = position
            while end < len(words) and not covered[end] and self._name_like(words[end]):
                end += 1
            if end == position:
                position += 1
                continue
            run = words[position:end]
            foreign = [not _is_english(word.norm) for word in run]
            capitals = [_capitalised(word) for word in run]
            slot = short or _in_slot(text, words, position, end - position)
            starts = run[0].sentence_start
            if any(f and (c or slot) for f, c in zip(foreign, capitals, strict=True)) or (
                all(capitals) and slot and (short or not starts) and not _all_caps(words)
            ):
                names.append(text[run[0].start : run[-1].end])
            position = end
        return [re.sub(r"['\u2019]s$", "", name) for name in names]

    @staticmethod
    def _name_like(word: _Word) -> bool:
        norm = word.norm
        if not any(ch.isalpha() for ch in norm) or norm in _PLACES or norm in DESCRIPTIVE:
            return False
        if norm in QUESTION_WORDS or word.raw.upper() in ACRONYMS:
            return word.raw == "&"
        if norm in LEGAL_SUFFIXES or word.raw == "&":
            return True
        return _capitalised(word) or (norm not in COMMON_WORDS and not _is_english(norm))


def _title(word: _Word) -> bool:
    """Title case ("Target", "T"), not all capitals ("NOW" is shouted, not a name)."""
    return word.raw[:1].isupper() and (len(word.raw) == 1 or not word.raw.isupper())


def _capitalised(word: _Word) -> bool:
    return word.raw[:1].isupper() or any(ch.isupper() for ch in word.raw[1:])


def _in_slot(text: str, words: list[_Word], start: int, length: int) -> bool:
    before = words[start - 1].norm if start else ""
    last = words[start + length - 1]
    after = words[start + length].norm if start + length < len(words) else ""
    possessive = last.raw.endswith(("'s", "\u2019s", "s'"))
    rest = text[last.end :]
    clause_end = not after or bool(re.match(r"\s*[?.!,;:(]", rest))
    if _JA_AFTER_RE.match(rest) or possessive or after in SLOT_AFTER:
        return True
    if before == "compare" and after in ("with", "to", "against", "and"):
        return True
    if (
        before in ("to", "is", "does", "did")
        and clause_end
        and re.search(r"\bcompar|\bvs\b", text, re.I)
    ):
        return True
    if before in _BEING and after in _HOW_IT_GOES and start >= 2:  # "how is X doing?"
        return words[start - 2].norm == "how"
    return before in SLOT_BEFORE and (clause_end or after in SLOT_AFTER)


_BEING: Final = frozenset(["is", "are", "was", "has", "have"])
_HOW_IT_GOES: Final = frozenset(["doing", "performing", "faring", "going", "been", "done"])
""""How is X doing?", "how has X been doing", "how are X performing": the words around a
name asked after by how it goes."""


def _strong_slot(text: str, words: list[_Word], position: int) -> bool:
    """Whether a lower-case word is surely meant as a name: the whole question, after
    "about"/"vs"/"compare", or with a possessive ("delta's")."""
    if len(words) == 1:
        return True
    before = words[position - 1].norm if position else ""
    word = words[position]
    return before in ("about", "vs", "versus", "compare") or word.raw.endswith(("'s", "\u2019s"))


def _crosses_sentence(words: list[_Word], start: int, length: int) -> bool:
    return any(word.sentence_start for word in words[start + 1 : start + length])


def _all_caps(words: list[_Word]) -> bool:
    letters = [word.raw for word in words if word.raw.isalpha()]
    upper = [word for word in letters if len(word) >= 2 and word.isupper()]
    return len(letters) >= 3 and len(upper) * 10 >= len(letters) * 6


def _is_english(word: str) -> bool:
    """An English word, or an inflection of one ("games", "tyres", "cities", "baked")."""
    words = english_words()
    if word in ORDINARY_WORDS or word in words:
        return True
    stems = []
    if word.endswith("s") and len(word) > 3:
        stems += [word[:-1], word[:-2] if word.endswith("es") else ""]
        stems += [word[:-3] + "y"] if word.endswith("ies") else []
    if word.endswith("ed") and len(word) > 6:
        stems += [word[:-2], word[:-1]]
    if word.endswith("ing") and len(word) > 6:
        stems += [word[:-3], word[:-3] + "e"]
    return any(stem in words for stem in stems if stem)


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _ticker_keys(ticker: str) -> list[str]:
    """The symbol as listed, then without its exchange: "NASDAQ:AAPL", "AAPL"; "7203.T",
    "7203"; "ITRK.L", "ITRK"."""
    symbol = ticker.upper()
    keys = [symbol]
    if ":" in symbol:
        keys.append(symbol.split(":", 1)[1])
    base, dot, _ = symbol.partition(".")
    if dot and len(base) >= 2:
        keys.append(base)
    return keys
