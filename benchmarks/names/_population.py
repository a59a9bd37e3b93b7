"""The questions: name variants generated from every company of the directory, put in
question templates, and the negatives; split into a tuning and a held-out part."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Final

from research_fsm.sources import CompanyIndex
from research_fsm.sources._profiles import CompanyProfile
from research_fsm.sources._text import LEGAL_SUFFIXES, TICKER_STOPWORDS, key_of, short_name

from ._negatives import (
    DESCRIPTIONS,
    GENERAL,
    NAMED_TEMPLATES,
    NEIGHBOURS,
    OUTSIDE,
    PRODUCTS_AND_PLACES,
)
from ._nicknames import NICKNAMES

HELD_OUT_SHARE: Final = 5
"""One in this many companies (by a hash of the name) is held out."""

TEMPLATES: Final[dict[str, str]] = {
    "bare": "{x}",
    "tell_me": "tell me about {x}",
    "revenue": "what is {x}'s revenue?",
    "ceo": "who is the ceo of {x}",
    "how_doing": "how is {x} doing?",
    "compare": "compare {x} with {other}",
    "follow_up": "what about {x}?",
    "ja_about": "{x}について教えて",
    "ja_revenue": "{x}の売上高は？",
}
"""Question templates; ``{other}`` is a second, well-known company; ``follow_up`` is
asked after a question about ``PREVIOUS``."""

PREVIOUS: Final = "Toyota"
"""The company of the question before a follow-up."""

OTHERS: Final = ("Microsoft", "Apple Inc.")
"""The second company of a comparison (the first that is not the one asked about)."""

_CAMEL_RE: Final = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])|(?<=[A-Z])(?=[A-Z][a-z]{2,})")
_KEYBOARD: Final = {
    "a": "s",
    "b": "v",
    "c": "x",
    "d": "s",
    "e": "r",
    "f": "g",
    "g": "h",
    "h": "j",
    "i": "o",
    "j": "k",
    "k": "l",
    "l": "k",
    "m": "n",
    "n": "m",
    "o": "p",
    "p": "o",
    "q": "w",
    "r": "t",
    "s": "a",
    "t": "r",
    "u": "y",
    "v": "b",
    "w": "e",
    "x": "z",
    "y": "u",
    "z": "x",
}


@dataclass(frozen=True, slots=True)
class Question:
    """One question of the benchmark."""

    text: str
    """The question as typed."""
    kind: str
    """How the name was written (``listed``, ``typo``, ...) or the negative's kind."""
    template: str
    """The template's key (``tell_me``) or the negative's kind."""
    expected: tuple[str, ...]
    """Directory companies the question may be answered about (empty: none)."""
    part: str
    """``tuning`` or ``held_out``."""
    previous: str | None = None
    """The company of the conversation's previous question (follow-ups)."""
    other: str | None = None
    """The second company of a comparison (also fine to answer about)."""
    named: str | None = None
    """For a company outside the directory: its name, to be said not listed."""


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def part_of(key: str) -> str:
    """``held_out`` for one key in ``HELD_OUT_SHARE``, by hash; else ``tuning``."""
    return "held_out" if _digest(key) % HELD_OUT_SHARE == 0 else "tuning"


def _typo(word: str, seed: str) -> str:
    """One deterministic typo inside ``word`` (the first letter kept): a letter
    swapped with its neighbour, dropped, doubled or replaced by a keyboard neighbour."""
    digest = _digest(seed)
    position = 1 + digest % (len(word) - 2)
    letter = word[position].lower()
    operation = (digest >> 8) % 4
    if operation == 0 and word[position] != word[position + 1]:
        return word[:position] + word[position + 1] + word[position] + word[position + 2 :]
    if operation == 1:
        return word[:position] + word[position + 1 :]
    if operation == 2:
        return word[:position] + word[position] + word[position:]
    return word[:position] + _KEYBOARD.get(letter, "e") + word[position + 1 :]


def _words(name: str) -> list[str]:
    return [word for word in _CAMEL_RE.sub(" ", name).split() if word]


def name_variants(
    profile: CompanyProfile,
    first_words: dict[str, int],
    english: Container[str],
    others: dict[str, str],
) -> list[tuple[str, str]]:
    """(kind, text) of the ways a person may write this company's name."""
    name = profile.name
    short = short_name(name)
    variants: dict[str, str] = {"listed": name}
    if name.lower() != name:
        variants["lowercase"] = name.lower()
    if short and short != name:
        variants["no_suffix"] = short
    words = _words(short)
    first = words[0] if words else ""
    if (
        len(words) > 1
        and len(first) >= 4
        and first.isalpha()
        and first_words.get(first.lower(), 0) == 1
        and first.lower() not in english
        and first.lower() not in LEGAL_SUFFIXES
    ):
        variants["first_word"] = first.lower()
    if len(words) > 1 and " ".join(words) != short:  # ExxonMobil -> Exxon Mobil
        variants["split"] = " ".join(words).lower()
    elif 2 <= len(short.split()) <= 3 and "&" not in short and len(short) <= 18:
        variants["joined"] = "".join(short.split()).lower()
    bare = re.sub(r"['\u2019.!]", "", short).replace("-", " ")
    if bare != short:
        variants["no_punct"] = bare.lower()
    parts = short.split(" & ")
    if len(parts) == 2 and all(part.isalpha() for part in parts):
        variants["initials"] = f"{parts[0][0]}&{parts[1][0]}".lower()
    if profile.symbols_primary:
        symbol = profile.symbols_primary[0]
        base = symbol.split(".")[0]
        # a ticker that is an English word ("HE", "ON", "ALL") typed alone is the word
        if len(base) >= 2 and base.lower() not in english and base not in TICKER_STOPWORDS:
            variants["ticker"] = symbol
    google = next((item.google for item in profile.listings if item.google), None)
    if google and ":" in google:
        variants["ticker_exchange"] = google
    longest = max(short.split(), key=len) if short else ""
    if len(longest) >= 6 and longest.isalpha():
        typo = _typo(longest, name)
        if typo.lower() not in english:  # a typo that makes a word ("every") is that word
            variants["typo"] = short.replace(longest, typo, 1).lower()
    # a variant that is another company's name as listed ("interparfums") names that one
    return [
        (kind, text) for kind, text in variants.items() if others.get(text.lower(), name) == name
    ]


def _fill(template: str, x: str, target: str) -> str:
    other = next(item for item in OTHERS if item != target)
    text = TEMPLATES[template]
    if x.endswith(("'s", "\u2019s")):  # "McDonald's revenue", not "McDonald's's"
        text = text.replace("{x}'s", "{x}")
    return text.format(x=x, other=short_name(other))


def positives(
    profiles: list[CompanyProfile],
    english: Container[str],
    merged: dict[str, str],
    *,
    only: set[str] | None = None,
) -> list[Question]:
    """Every variant of every company (or of those named ``only``) in every template,
    and the nicknames; ``merged`` maps a profile the index merged into another (the
    same company listed twice: "Stabilus" and "STABILUS SE") to the one it answers as."""
    first_words: dict[str, int] = {}
    for profile in profiles:
        words = _words(short_name(profile.name))
        if words:
            first_words[words[0].lower()] = first_words.get(words[0].lower(), 0) + 1
    listed = {profile.name.lower(): profile.name for profile in profiles}
    questions: list[Question] = []
    chosen = [p for p in profiles if only is None or p.name in only]
    for profile in chosen:
        part = part_of(profile.name)
        for kind, x in name_variants(profile, first_words, english, listed):
            questions.extend(_in_templates(x, kind, profile.name, part, merged.get(profile.name)))
    names = {profile.name for profile in profiles}
    for nickname, target in NICKNAMES:
        if target not in names:
            raise ValueError(f"nickname {nickname!r} names {target!r}, not in the directory")
        if only is None or target in only:
            questions.extend(
                _in_templates(nickname, "nickname", target, part_of(target), merged.get(target))
            )
    return questions


def _in_templates(
    x: str, kind: str, target: str, part: str, alias_of: str | None = None
) -> list[Question]:
    out = []
    expected = (target,) if alias_of is None else (target, alias_of)
    for template in TEMPLATES:
        other = next(item for item in OTHERS if item != target)
        out.append(
            Question(
                text=_fill(template, x, target),
                kind=kind,
                template=template,
                expected=expected,
                part=part,
                previous=PREVIOUS if template == "follow_up" and target != PREVIOUS else None,
                other=other if template == "compare" else None,
            )
        )
    return out


def negatives(index: CompanyIndex) -> list[Question]:
    """The questions that name no company of the directory (checked: no name of the
    directory's is one of theirs)."""
    questions = [
        Question(text=text, kind="general", template="general", expected=(), part=part_of(text))
        for text in GENERAL
    ]
    questions += [
        Question(
            text=text,
            kind="product_place",
            template="product_place",
            expected=(),
            part=part_of(text),
        )
        for text in PRODUCTS_AND_PLACES
    ]
    for kind, names in (("outside", OUTSIDE), ("neighbour", NEIGHBOURS)):
        for name in names:
            if index.resolve(name) is not None or key_of(name) in {
                key_of(short_name(ref.name)) for ref in index.starting_with(name)
            }:
                raise ValueError(f"negative {name!r} is a directory name")
            for template in NAMED_TEMPLATES:
                questions.append(
                    Question(
                        text=template.format(x=name),
                        kind=kind,
                        template=_template_key(template),
                        expected=(),
                        part=part_of(name),
                        named=name,
                    )
                )
    for text, fair in DESCRIPTIONS:
        questions.append(
            Question(
                text=text,
                kind="description",
                template="description",
                expected=fair,
                part=part_of(text),
            )
        )
    return questions


def _template_key(template: str) -> str:
    return next(key for key, value in TEMPLATES.items() if value == template)
