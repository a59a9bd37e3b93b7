"""Tidy infobox values for display: lists, money, wiki residue, the data's age.

The directory's infobox values are flat strings: a list of products or founders
arrives as its items joined by spaces ("Steve Jobs Steve Wozniak Ronald Wayne").
``split_products`` and ``split_people_names`` recover the items; every word of the
value is kept, in order, so no fact is added or lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "Money",
    "fiscal_year",
    "format_money",
    "parse_money",
    "split_people_names",
    "split_products",
    "strip_wiki_residue",
]

_SEE_SECTION_RE: Final = re.compile(r"\(?\s*See\s*§[^)]*\)?", re.IGNORECASE)
_CITATION_RE: Final = re.compile(r"\[\s*(?:\d+|[a-z]|note \d+|citation needed|nb \d+)\s*\]", re.I)
_CURRENCY_SPACE_RE: Final = re.compile(r"(US\$|A\$|C\$|HK\$|R\$|\$|€|£|¥|₹|₩|₽)\s+(?=\d)")
_WORD_CURRENCY_RE: Final = re.compile(
    r"(\d[\d.,]*)\s*(million|billion|trillion)\s+(Euros?|EUR)\b", re.IGNORECASE
)
_MONEY_RE: Final = re.compile(
    r"(?P<cur>US\$|A\$|C\$|HK\$|R\$|\$|€|£|¥|₹|₩|₽|CHF|SEK|NOK|DKK|EUR|USD|GBP|JPY)?\s*"
    r"(?P<num>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>million|billion|trillion|bn|m)?\b",
    re.IGNORECASE,
)
_YEAR_RE: Final = re.compile(r"\((?:FY\s?)?(\d{4}|\d{2})\)|\bFY\s?(\d{4}|\d{2})\b")
_PARTICLES: Final = frozenset(
    {"van", "der", "de", "den", "von", "da", "del", "di", "la", "le", "du"}
)
_UNITS: Final[dict[str, float]] = {
    "": 1.0,
    "m": 1e6,
    "million": 1e6,
    "bn": 1e9,
    "billion": 1e9,
    "trillion": 1e12,
}
_CURRENCY_NAMES: Final[dict[str, str]] = {
    "$": "US$",
    "USD": "US$",
    "EUR": "€",
    "GBP": "£",
    "JPY": "¥",
}


def strip_wiki_residue(text: str) -> str:
    """``text`` without "(See § Founding)" pointers and citation marks like "[1]"."""
    text = _SEE_SECTION_RE.sub("", text)
    text = _CITATION_RE.sub("", text)
    return " ".join(text.split()).strip(" ,;")


def format_money(text: str) -> str:
    """One money style: "US$ 94.83 billion" -> "US$94.83 billion", "2.4 billion Euros" ->
    "€2.4 billion"; everything else unchanged."""
    text = _CURRENCY_SPACE_RE.sub(r"\1", text)
    text = _WORD_CURRENCY_RE.sub(lambda m: f"€{m.group(1)} {m.group(2)}", text)
    return text.replace("( ", "(").replace(" )", ")")


@dataclass(frozen=True, slots=True)
class Money:
    """An amount read from a money text."""

    currency: str
    """Normalised symbol, e.g. ``"US$"``, ``"€"``, ``"¥"`` (``""`` when not written)."""
    amount: float
    """The amount in units of the currency."""
    text: str
    """The amount as written, tidied, e.g. ``"US$416 billion"``."""


def parse_money(text: str | None, *, prefer: str = "US$") -> Money | None:
    """The amount of a money text ("US$416 billion (2025)"); when it gives the same
    figure in several currencies ("¥45.1 trillion (US$410.89 billion)") the one in
    ``prefer``. Years in parentheses are not amounts."""
    if not text:
        return None
    found: list[Money] = []
    for match in _MONEY_RE.finditer(format_money(text)):
        currency = match.group("cur") or ""
        unit = (match.group("unit") or "").lower()
        if not currency and not unit:
            continue  # a bare number: a year or a footnote, not money
        number = float(match.group("num").replace(",", ""))
        symbol = _CURRENCY_NAMES.get(currency.upper(), currency)
        found.append(Money(symbol, number * _UNITS[unit], match.group().strip()))
    for money in found:
        if money.currency == prefer:
            return money
    return found[0] if found else None


def fiscal_year(*texts: str | None) -> str | None:
    """The fiscal year the figures are for, e.g. "(2025)" or "(FY26)" -> "FY2025", "FY2026"."""
    for text in texts:
        match = _YEAR_RE.search(text or "")
        if match:
            year = match.group(1) or match.group(2)
            return f"FY{'20' + year if len(year) == 2 else year}"
    return None


def _starts_item(word: str) -> bool:
    """Whether a word may begin a list item: capitalised ("Mac", "TV"), a brand
    written "iPhone"/"eBay", or a number."""
    return word[:1].isupper() or word[:1].isdigit() or (len(word) > 1 and word[1].isupper())


def split_products(value: str) -> list[str]:
    """The items of a list the infobox joined with spaces.

    Values with commas or semicolons are split on them. Items start with a
    capitalised word: when some words are lower case, each capital starts an item
    ("Cloud computing Video games"); when all are capitalised (brand names), infobox
    lists are usually in alphabetical order, so the split chosen keeps the items
    sorted with as many items as possible ("Apple TV Apple Watch HomePod" ->
    ["Apple TV", "Apple Watch", "HomePod"]).
    """
    text = strip_wiki_residue(value)
    if re.search(r"[,;]", text):
        items = [item.strip(" .") for item in re.split(r"\s*[,;]\s*", text)]
        return [item for item in items if item]
    words = text.split()
    if len(words) <= 1:
        return words
    if any(not _starts_item(word) for word in words):
        # "Cloud computing Video games": a capital starts each item.
        groups: list[list[str]] = []
        for word in words:
            if _starts_item(word) or not groups:
                groups.append([word])
            else:
                groups[-1].append(word)
        return [" ".join(group) for group in groups]
    return _sorted_split(words)


def _sorted_split(words: list[str]) -> list[str]:
    """Dynamic programme over item boundaries: +1 per item, -1.5 per item that sorts
    before the one it follows; items start only where ``_starts_item`` allows."""
    n = len(words)
    starts = [i == 0 or _starts_item(words[i]) for i in range(n)]
    # ending[j][i]: (best score of words[:j] whose last item is words[i:j], previous item)
    ending: list[dict[int, tuple[float, tuple[int, int] | None]]] = [{} for _ in range(n + 1)]
    for j in range(1, n + 1):
        for i in range(j):
            if not starts[i]:
                continue
            if i == 0:
                ending[j][0] = (1.0, None)
                continue
            item = " ".join(words[i:j]).lower()
            options = [
                (score + 1.0 - (1.5 if " ".join(words[k:i]).lower() > item else 0.0), (k, i))
                for k, (score, _) in ending[i].items()
            ]
            if options:
                ending[j][i] = max(options)
    start = max(ending[n], key=lambda i: ending[n][i][0])
    items: list[str] = []
    cursor: tuple[int, int] | None = (start, n)
    while cursor is not None:
        items.append(" ".join(words[cursor[0] : cursor[1]]))
        cursor = ending[cursor[1]][cursor[0]][1]
    return items[::-1]


def split_people_names(value: str) -> list[str]:
    """The people of a founders value joined by spaces: "Steve Jobs Steve Wozniak" ->
    ["Steve Jobs", "Steve Wozniak"]. Commas, "and" and parentheses are honoured;
    otherwise names are read as given name + family name (particles such as "van
    der" and initials stay inside a name); an odd leftover joins the last name."""
    text = strip_wiki_residue(value)
    if re.search(r",|;|\band\b", text):
        parts = re.split(r"\s*(?:,|;|\band\b)\s*", text)
        return [part for part in parts if part]
    words = re.findall(r"\([^)]*\)|\S+", text)
    names: list[list[str]] = []
    current: list[str] = []
    capitals = 0
    for word in words:
        is_initial = bool(re.fullmatch(r"[A-Z]\.?", word))
        is_note = word.startswith("(")
        if is_note or word.lower() in _PARTICLES or is_initial:
            current.append(word)
            continue
        if capitals == 2:
            names.append(current)
            current, capitals = [], 0
        current.append(word)
        capitals += 1
    if current:
        if capitals == 1 and names and not current[0].startswith("("):
            names[-1].extend(current)
        else:
            names.append(current)
    return [" ".join(name) for name in names]
