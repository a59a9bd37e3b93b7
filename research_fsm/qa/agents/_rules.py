"""Deterministic language rules: follow-ups, cancellation, unknown names (intents:
``_intents``; sanitising: ``research_fsm.common.text``)."""

from __future__ import annotations

import re

from ...sources import COMMON_WORDS, LEGAL_SUFFIXES
from ._intents import INTENT_FIELDS, detect_intent

__all__ = [
    "INTENT_FIELDS",
    "detect_intent",
    "is_cancel",
    "is_comparison",
    "is_follow_up",
    "name_candidate",
    "refers_back",
]

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
