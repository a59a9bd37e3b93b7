"""Text normalisation for company names: tokens, keys, short names, stopwords."""

from __future__ import annotations

import re
import unicodedata
from typing import Final, NamedTuple

from ._words import ACRONYMS, NAMES_THAT_ARE_WORDS, ORDINARY_WORDS

__all__ = [
    "COMMON_WORDS",
    "LEGAL_SUFFIXES",
    "ORDINARY_WORDS",
    "TICKER_STOPWORDS",
    "Token",
    "fold",
    "is_ticker_like",
    "key_of",
    "name_keys",
    "short_name",
    "tokenize",
]

_TOKEN_RE: Final = re.compile(r"\$?[^\W_](?:[\w&'\u2019./\-]*[^\W_])?|&")
_SENTENCE_END_RE: Final = re.compile(r"[.!?:;\n\"\u201c\u201d(\[|*#>\u2022]")
_PARENTHETICAL_RE: Final = re.compile(r"\s*\([^)]*\)")

LEGAL_SUFFIXES: Final[frozenset[str]] = frozenset(
    {
        "a/s",
        "ab",
        "ag",
        "asa",
        "bhd",
        "co",
        "companies",
        "company",
        "corp",
        "corporation",
        "cv",
        "gmbh",
        "group",
        "holding",
        "holdings",
        "inc",
        "incorporated",
        "kgaa",
        "kk",
        "limited",
        "llc",
        "lp",
        "ltd",
        "na",
        "nv",
        "oyj",
        "plc",
        "sa",
        "sab",
        "se",
        "spa",
    }
)
"""Words stripped from the end of a name to make its short name (dots ignored)."""

COMMON_WORDS: Final[frozenset[str]] = ORDINARY_WORDS | NAMES_THAT_ARE_WORDS
"""Words never fuzzy-matched, and matched as one-word company names only when
capitalised (see ``_index``)."""

TICKER_STOPWORDS: Final[frozenset[str]] = ACRONYMS | {
    word.upper() for word in COMMON_WORDS if len(word) <= 5
}
"""Upper-case words that are never read as ticker symbols without a ``$``."""


class Token(NamedTuple):
    """One word of a text, with its normalised form."""

    raw: str
    """The word as written, trailing punctuation removed (``"$aapl"``, ``"Apple's"``)."""
    norm: str
    """Folded form used as a key (``"aapl"``, ``"apple"``)."""
    start: int
    """Offset of the word in the text."""
    sentence_start: bool
    """Whether the word starts a sentence."""


def fold(text: str) -> str:
    """Lower-case ``text`` and strip accents and typographic quotes."""
    if text.isascii():  # nothing to decompose (most names and questions): just lower-case
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def _norm_word(raw: str) -> str:
    word = fold(raw.removeprefix("$"))
    word = word.removesuffix("'s")
    return word.replace("'", "")


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into word tokens (``$`` prefixes and inner ``.&'-/`` kept)."""
    tokens: list[Token] = []
    previous_end = 0
    for match in _TOKEN_RE.finditer(text):
        gap = text[previous_end : match.start()]
        starts = not tokens or bool(_SENTENCE_END_RE.search(gap))
        tokens.append(Token(match.group(), _norm_word(match.group()), match.start(), starts))
        previous_end = match.end()
    return tokens


def key_of(text: str) -> str:
    """The lookup key of a name or phrase: its folded words joined by spaces."""
    return " ".join(token.norm for token in tokenize(text) if token.norm)


def short_name(name: str) -> str:
    """``name`` without parentheticals, legal suffixes, a leading "The" or ``.com``.

    ``"Apple Inc."`` -> ``"Apple"``, ``"Amazon.com, Inc."`` -> ``"Amazon"``,
    ``"Alphabet Inc. (Google)"`` -> ``"Alphabet"``, ``"ING Group"`` -> ``"ING"``.
    """
    words = _PARENTHETICAL_RE.sub("", name).replace(",", " ").split()
    while len(words) > 1:
        last = words[-1].lower().replace(".", "")
        if last in LEGAL_SUFFIXES or last == "&":
            words.pop()
        else:
            break
    if len(words) > 1 and words[0].lower() == "the":
        words.pop(0)
    if words and words[-1].lower().endswith(".com") and len(words[-1]) > 4:
        words[-1] = words[-1][:-4]
    return " ".join(words).strip()


def name_keys(name: str) -> set[str]:
    """All keys ``name`` can be written as: full, short, and with hyphens as spaces.

    A short name that is one frequent English word ("Next" for "Next plc") is left
    out: such companies are found by their full name only.
    """
    keys = {key_of(name), key_of(_PARENTHETICAL_RE.sub("", name))}
    short = key_of(short_name(name))
    if short not in ORDINARY_WORDS:
        keys.add(short)
    keys |= {key.replace("-", " ") for key in keys if "-" in key}
    keys.discard("")
    return keys


def is_ticker_like(raw: str) -> bool:
    """Whether a bare word may be a ticker: upper case, two or more characters, a
    letter, and not an ordinary word or acronym."""
    return (
        len(raw) >= 2
        and raw == raw.upper()
        and any(ch.isalpha() for ch in raw)
        and raw not in TICKER_STOPWORDS
    )
