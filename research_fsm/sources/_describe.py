"""Find a company from a description ("the one that makes iphones", "the electric car
company") through the products and industry fields of the directory."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Final

from ._format import parse_money
from ._peers import USD_RATES
from ._profiles import CompanyProfile
from ._text import ORDINARY_WORDS, fold
from ._words import PLACES

__all__ = ["DESCRIPTION_WORDS", "DescriptionIndex", "description_terms"]

SYNONYMS: Final[dict[str, tuple[str, ...]]] = {
    "car": ("car", "automobile", "automotive", "auto", "vehicle"),
    "electric": ("electric", "ev", "renewable"),
    "phone": ("phone", "smartphone", "iphone", "handheld"),
    "chip": ("chip", "semiconductor", "processor", "gpu"),
    "search": ("search", "internet"),
    "game": ("game", "console", "gaming"),
    "drug": ("drug", "pharmaceutical", "medicine", "pharma"),
    "beer": ("beer", "brewer", "brewery", "beverage"),
    "bank": ("bank", "banking"),
    "plane": ("plane", "aircraft", "aerospace"),
    "software": ("software",),
}
"""Everyday words and the words the data uses for them (all singular)."""

_DESCRIPTION_WORDS = """
    one company firm business maker makes make made making sells sell selling produces
    produce builds build the that which who with of for a an it its famous known big
    biggest largest main guys corp brand behind
"""
DESCRIPTION_WORDS: Final = frozenset(_DESCRIPTION_WORDS.split())
"""Words of a description that say nothing about what the company does."""

_WORD_RE: Final = re.compile(r"[a-z0-9]+")
MIN_SCORE: Final = 4.0
"""A company must match at least this well (weight 2 times the word's rarity,
``log(1 + companies / companies with the word)``) to be suggested."""
CLEAR_MARGIN: Final = 1.5
"""The best match is taken alone when it scores this many times the next one."""


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [_singular(word) for word in _WORD_RE.findall(fold(text))]


def description_terms(text: str) -> list[str]:
    """The words of a description that may name a product or an industry."""
    return [
        word
        for word in _words(text)
        if word in SYNONYMS
        or (
            word not in DESCRIPTION_WORDS
            and word not in ORDINARY_WORDS
            and word not in PLACES
            and len(word) > 1
        )
    ]


class DescriptionIndex:
    """Products and industries of each company, by word."""

    def __init__(self, profiles: Iterable[CompanyProfile]) -> None:
        """Index the words of the products and industries of ``profiles``."""
        self._weights: dict[str, dict[str, int]] = {}
        self._revenue: dict[str, float] = {}
        self._products: dict[str, str] = {}
        for profile in profiles:
            self._products[profile.name] = profile.metadata.products or ""
            money = parse_money(profile.metadata.revenue)
            rate = USD_RATES.get(money.currency, 0.0) if money else 0.0
            self._revenue[profile.name] = money.amount * rate if money else 0.0
            for weight, text in (
                (2, profile.metadata.products or ""),
                (2, " ".join(profile.industries)),
            ):
                for word in set(_words(text)):
                    entry = self._weights.setdefault(word, {})
                    entry[profile.name] = max(entry.get(profile.name, 0), weight)

    def match(self, text: str) -> list[str]:
        """One company when it clearly matches, else up to three candidates, best
        first; empty when no company matches at least ``MIN_SCORE``."""
        scores: dict[str, float] = {}
        total = max(len(self._revenue), 1)
        for term in dict.fromkeys(description_terms(text)):
            weights: dict[str, int] = {}
            for variant in SYNONYMS.get(term, (term,)):  # a word and its synonyms are one term
                for name, weight in self._weights.get(variant, {}).items():
                    weights[name] = max(weights.get(name, 0), weight)
            rarity = math.log(1 + total / max(len(weights), 1))  # rarer terms count more
            for name, weight in weights.items():
                scores[name] = scores.get(name, 0.0) + weight * rarity
        ranked = sorted(
            (name for name, score in scores.items() if score >= MIN_SCORE),
            key=lambda name: (-scores[name], -self._revenue.get(name, 0.0), name),
        )
        if not ranked:
            return []
        if len(ranked) == 1 or scores[ranked[0]] >= CLEAR_MARGIN * scores[ranked[1]]:
            return ranked[:1] if self._names_its_product(text, ranked[0]) else []
        return ranked[:3]

    def _names_its_product(self, text: str, name: str) -> bool:
        """Whether the product names the description capitalises ("Windows", "iPhone")
        are written so in the company's products: "the company behind Windows" is not
        a maker of windows."""
        proper = [
            word
            for word in re.findall(r"(?<=\s)[A-Za-z][a-z]*[A-Z][A-Za-z]*|(?<=\s)[A-Z][a-z]+", text)
            if word.lower() not in DESCRIPTION_WORDS
        ]
        products = self._products.get(name, "")
        return all(
            re.search(rf"\b{re.escape(word.rstrip('s'))}", products) is not None for word in proper
        )
