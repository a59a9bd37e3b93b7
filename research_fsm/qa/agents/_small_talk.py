"""Messages that are not questions about a company: thanks, greetings, goodbyes and
general-knowledge questions."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["asks_about_a_company", "is_small_talk", "is_thanks", "looks_off_topic"]

_SMALL_TALK_RE: Final = re.compile(
    r"^\s*(thanks?( you)?( so much| a lot)?|thx|ty|cheers|great|cool|nice|ok(ay)?|"
    r"hi|hello|hey|good (morning|afternoon|evening)|bye|goodbye|see you|"
    r"ありがとう(ございます)?|こんにちは|どうも)[\s.!?。！]*$",
    re.I,
)
_COMPANY_WORDS_RE: Final = re.compile(
    r"\b(compan(y|ies)|corp(oration)?|business(es)?|firms?|brands?|startups?|enterprises?|"
    r"stocks?|shares?|tickers?|ceo|revenue|earnings|competitors?|industry|industries|"
    r"makers?|manufacturers?|listed|market cap|inc|ltd|plc)\b|会社|企業|株",
    re.I,
)
_GENERAL_KNOWLEDGE_RE: Final = re.compile(
    r"\b(weather|forecast for (today|tomorrow)|capital (city )?of|population of|recipes?|jokes?|"
    r"poems?|translate|meaning of (life|the word)|what time is it|how old is|who won|"
    r"football|soccer|movies?|songs?|homework)\b|天気|首都|レシピ",
    re.I,
)

_THANKS_RE: Final = re.compile(r"^\s*(thanks?|thx|ty|cheers|ありがとう|どうも)", re.I)


def is_thanks(text: str) -> bool:
    """Thanks ("thanks", "thank you", "ありがとう")."""
    return is_small_talk(text) and bool(_THANKS_RE.match(text))


def is_small_talk(text: str) -> bool:
    """Thanks, greetings and goodbyes."""
    return bool(_SMALL_TALK_RE.match(text))


def looks_off_topic(text: str, place: bool) -> bool:
    """A message not about companies, with no company and no company-like word in it:
    small talk, a general-knowledge question ("What's the capital of France?", "What's
    the weather like?"), or one whose only name is a ``place``. A message with an
    unknown word that could be a company is not off-topic (it gets asked back)."""
    if is_small_talk(text):
        return True
    if _COMPANY_WORDS_RE.search(text):
        return False
    return place or bool(_GENERAL_KNOWLEDGE_RE.search(text))


_GENERIC_RE: Final = re.compile(
    r"^\s*(how\s+(do|can|should|would)\s+(i|you|we)\b|how\s+to\b|what\s+(is|are)\s+(a|an)\b|what\s+does\s+(an?\s+)?\w+(\s+\w+)?\s+(mean|do)\b|"
    r"how\s+(do|does)\s+(an?\s+)?\w+(\s+\w+)?\s+work\b|explain\b|define\b|meaning of\b)",
    re.I,
)
_SPECIFIC_RE: Final = re.compile(
    r"\b(the|this|that|their|its|which|a certain)\s+(compan(y|ies)|firm|business|stock|"
    r"shares?|ceo|revenue|earnings)\b|\b(their|its)\b|会社|企業",
    re.I,
)


def asks_about_a_company(text: str) -> bool:
    """Whether a question that names no company still asks about one ("tell me about the
    company", "what's their revenue?"): company words, and not a general question about
    what they mean ("what does a CEO do", "how do stocks work")."""
    if is_small_talk(text) or not _COMPANY_WORDS_RE.search(text):
        return False
    return not (_GENERIC_RE.search(text) and not _SPECIFIC_RE.search(text))
