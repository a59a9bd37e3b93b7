"""Deterministic language rules: follow-ups, cancellation, sanitising (intents: ``_intents``)."""

from __future__ import annotations

import re
import unicodedata

from ..sources._text import COMMON_WORDS, LEGAL_SUFFIXES
from ._intents import INTENT_FIELDS, detect_intent

__all__ = [
    "INTENT_FIELDS",
    "clean_text",
    "detect_intent",
    "for_terminal",
    "is_cancel",
    "is_comparison",
    "is_follow_up",
    "name_candidate",
    "refers_back",
]

_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the one-byte (C1) CSI
)

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional marks, embeddings, overrides and isolates: they reorder what a
terminal shows (category Cf, so not caught as control characters)."""
_FOLLOW_UP = re.compile(
    r"^\s*(what about|tell me more|how about|and\b|also\b|furthermore|more on|"
    r"their\b|its\b|it's\b|the company'?s?\b|they\b|them\b|those\b|that company|"
    r"compare|versus|vs\.?|compared to|explain|elaborate|expand on|go deeper|"
    r"why\b|how\b|when did|is that|are they|who\b|what'?s? their)",
    re.I,
)
_REFERS_BACK = re.compile(
    r"\b(their|its|it|they|them|the company'?s?|this company|that company|same company|those guys)\b",
    re.I,
)
_CANCEL = re.compile(
    r"^\s*(never\s*mind|nvm|cancel|stop|quit|exit|forget (it|about it)|no thanks|nothing)\b[\s.!]*",
    re.I,
)


def clean_text(text: str) -> str:
    """Strip ANSI escapes and control characters; fold runs of whitespace."""
    text = _ANSI.sub("", text)
    out = []
    for ch in text:
        if ch in "\t\n\r":
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") or ch in _BIDI:
            continue
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def for_terminal(text: str) -> str:
    """``text`` safe to print: no escape sequences or control characters; newlines kept."""
    return "\n".join(clean_line(line) for line in _ANSI.sub("", text).split("\n"))


def clean_line(text: str) -> str:
    """Like ``clean_text`` but keeps the inner spacing of one line."""
    return "".join(
        " " if ch == "\t" else ch
        for ch in text
        if ch == "\t" or not (unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") or ch in _BIDI)
    )


def is_follow_up(text: str) -> bool:
    """Does the question continue the previous topic ("What about their stock?")."""
    return bool(_FOLLOW_UP.match(text)) or bool(_REFERS_BACK.search(text))


def refers_back(text: str) -> bool:
    """Does the question point at the previous company with a pronoun."""
    return bool(_REFERS_BACK.search(text))


def is_cancel(text: str) -> bool:
    """Does the user call the question off ("Nevermind", "cancel", "forget it")."""
    match = _CANCEL.match(text)
    return match is not None and len(text) - match.end() <= 20


def is_comparison(text: str) -> bool:
    """Does the question compare companies."""
    return detect_intent(text) == "comparison"


_WORD = re.compile(r"[^\W_][\w&'\u2019.-]*")
_NOT_NAMES = frozenset(
    [
        "i",
        "i'm",
        "i'd",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "tell",
        "what",
        "what's",
        "whats",
        "who",
        "how",
        "why",
        "when",
        "where",
        "which",
        "now",
        "please",
        "compare",
        "versus",
        "vs",
        "and",
        "or",
        "about",
        "with",
        "on",
        "for",
        "is",
        "are",
        "the",
        "a",
        "an",
        "any",
        "some",
    ]
)


def _name_like(word: str) -> bool:
    bare = re.sub(r"['\u2019]s$", "", word).rstrip(".")
    if not bare or bare.lower() in COMMON_WORDS or bare.lower() in _NOT_NAMES:
        return False
    return bare[0].isupper() or any(c.isupper() for c in bare[1:]) or any(c.isdigit() for c in bare)


def name_candidate(text: str) -> str | None:
    """The first run of capitalised, uncommon words: a company the index does not
    know ("What's happening with Acme Corp?" -> "Acme Corp"), or ``None``."""
    run: list[str] = []
    for word in _WORD.findall(text):
        bare = word.rstrip(".")
        if _name_like(word) or (run and bare.lower().rstrip(".") in LEGAL_SUFFIXES):
            run.append(re.sub(r"['\u2019]s$", "", bare))
        elif run:
            break
    return " ".join(run)[:80] if run else None
