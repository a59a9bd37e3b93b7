"""What a question asks for (its intent), which findings answer it, how well they do,
and the one sentence that says what is missing."""

from __future__ import annotations

import re
from typing import Final

from ...sources import ResearchFindings

__all__ = [
    "INTENT_FIELDS",
    "INTENT_TOPICS",
    "TOPIC_FIELDS",
    "answer_topics",
    "asks_current_events",
    "coverage_score",
    "covered_topics",
    "detect_intent",
    "missing_sentence",
    "missing_topics",
]

_EN_WORDS: Final[dict[str, str]] = {
    "comparison": r"compare[sd]?|comparison|versus|vs\.?|compared (to|with)|difference between|better than",
    "competitors": r"competitors?|rivals?|competition|compete[sd]?|competing|peers?",
    "strategy": r"strateg(y|ies|ic)|plans?|roadmap|vision|direction|ambitions?|focus(ing)? on|bets?",
    "stock": r"stocks?|shares?|share price|price|market cap(italisation|italization)?|valuation|dividends?|ticker|trading|invest(ing|ors?)?",
    "financials": r"financials?|finances|revenues?|sales|earnings|profits?|profitable|income|margins?|turnover|results",
    "leadership": r"ceo|cfo|coo|cto|founders?|founded by|leaders?(hip)?|executives?|management|chair(man|woman|person)?|board|who runs|run by|key people|president",
    "products": r"products?|services?|offerings?|sells?|makes?|portfolio|devices?|brands?",
    "news": r"news|latest|recent(ly)?|updates?|lately|this (week|month|year)|developments?|headlines?|announce(ments?|d)?|press releases?",
}
"""Per intent: the English words (a regular expression) that ask for it."""
_EN: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (intent, re.compile(rf"\b({words})\b", re.I)) for intent, words in _EN_WORDS.items()
)
_JA: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("comparison", re.compile(r"比較|比べ|違い")),
    ("competitors", re.compile(r"競合|ライバル|競争相手|同業")),
    ("strategy", re.compile(r"戦略|方針|計画")),
    ("stock", re.compile(r"株価|株式|時価総額|配当")),
    ("financials", re.compile(r"業績|売上|利益|決算|財務|収益")),
    ("leadership", re.compile(r"社長|CEO|経営陣|創業者|会長|役員")),
    ("products", re.compile(r"製品|商品|サービス|プロダクト")),
    ("news", re.compile(r"ニュース|最新|最近|動向")),
)

INTENT_TOPICS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "overview": (("overview",), ("news", "financials")),
    "news": (("news",), ("overview",)),
    "stock": (("share_price",), ("financials",)),
    "financials": (("financials",), ()),
    "leadership": (("leadership",), ()),
    "products": (("products",), ()),
    "strategy": (("strategy",), ("products",)),
    "competitors": (("competitors",), ("overview",)),
    "comparison": (("overview", "financials"), ()),
}
"""Per intent: the topics that answer it, and the topics that round the answer off."""

TOPIC_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "overview": ("overview", "key_developments", "recent_news"),
    "news": ("recent_news",),
    "share_price": ("stock_info",),
    "financials": ("stock_info",),
    "leadership": ("key_people",),
    "products": ("products", "key_developments"),
    "strategy": ("key_developments",),
    "competitors": ("competitors",),
}
"""Per topic: the findings fields that can hold it."""


def _fields_for(intent: str) -> tuple[str, ...]:
    required, wanted = INTENT_TOPICS.get(intent, INTENT_TOPICS["overview"])
    fields = [field for topic in (*required, *wanted) for field in TOPIC_FIELDS[topic]]
    return tuple(dict.fromkeys(fields))


INTENT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    intent: _fields_for(intent) for intent in INTENT_TOPICS
}
"""For each intent, the findings fields that answer it (any one will do), best first."""

REQUIRED_WEIGHT: Final = 0.7
"""Share of the score for the topics that answer the question (the rest: rounding off)."""

_LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "overview": "a company profile",
        "news": "news",
        "share_price": "share prices",
        "financials": "financial figures",
        "leadership": "leadership information",
        "products": "product information",
        "strategy": "strategy or plans",
        "competitors": "competitor information",
    },
    "ja": {
        "overview": "会社概要",
        "news": "ニュース",
        "share_price": "株価",
        "financials": "財務数値",
        "leadership": "経営陣の情報",
        "products": "製品情報",
        "strategy": "戦略や計画",
        "competitors": "競合の情報",
    },
}


def detect_intent(text: str) -> str:
    """What the question asks for; ``"overview"`` when nothing specific (including
    "What's happening with ...?", which a profile and the news answer together)."""
    for intent, pattern in (*_EN, *_JA):
        if pattern.search(text):
            return intent
    return "overview"


_CURRENT_EVENTS: Final = re.compile(
    r"\b(what'?s|what is|whats) (going on|new|happening|up)\b|\bgoing on\b|\bhappening\b"
    r"|\bthese days\b|\bup to\b|どうなって|近況",
    re.I,
)


def asks_current_events(text: str) -> bool:
    """Whether an overview question asks what is happening now ("What's going on with
    Tesla?"): the news answer it as much as the profile does."""
    return bool(_CURRENT_EVENTS.search(text))


def answer_topics(intent: str, query: str = "") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The topics that answer a question of ``intent`` and those that round it off;
    for an overview that asks what is happening now, the news answer it too."""
    if intent == "overview" and asks_current_events(query):
        return ("overview", "news"), ("financials",)
    return INTENT_TOPICS.get(intent, INTENT_TOPICS["overview"])


def covered_topics(findings: ResearchFindings) -> set[str]:
    """The topics the findings hold; a topic the source says it never has is not
    covered even when a field that could hold it is filled (directory listings are
    not share prices)."""
    unavailable = set(findings.scope.unavailable) if findings.scope else set()
    covered = {
        topic
        for topic, fields in TOPIC_FIELDS.items()
        if topic not in unavailable and any(getattr(findings, name) for name in fields)
    }
    if findings.facts and not {"revenue", "net_income"} & findings.facts.keys():
        covered.discard("financials")  # listings without a single figure
    return covered


def _share(topics: tuple[str, ...], covered: set[str]) -> float:
    return sum(topic in covered for topic in topics) / len(topics) if topics else 1.0


def coverage_score(findings: ResearchFindings | None, intent: str, query: str = "") -> int:
    """0-10: how much of what ``intent`` (and the question ``query``) asks the findings
    cover: 7 points for the topics that answer it, 3 for the ones that round it off. A
    question about strategy answered with a profile scores low, however complete the
    profile; so does "What's going on with Tesla?" answered without news."""
    if findings is None:
        return 0
    required, wanted = answer_topics(intent, query)
    covered = covered_topics(findings)
    score = 10 * (
        REQUIRED_WEIGHT * _share(required, covered)
        + (1 - REQUIRED_WEIGHT) * _share(wanted, covered)
    )
    return int(score + 0.5)


def missing_topics(findings: ResearchFindings, intent: str) -> list[str]:
    """The asked-for topics the findings lack, those that answer the question first."""
    required, wanted = INTENT_TOPICS.get(intent, INTENT_TOPICS["overview"])
    covered = covered_topics(findings)
    return [topic for topic in (*required, *wanted) if topic not in covered]


def _join(items: list[str], lang: str) -> str:
    if lang == "ja":
        return "や".join(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def missing_sentence(
    findings: ResearchFindings, intent: str, lang: str = "en", query: str = ""
) -> str | None:
    """One plain sentence naming what the answer lacks and why, or ``None``.

    "The offline directory has no share prices or news; set TAVILY_API_KEY for live
    data." for what the source never has, said only when the question asks for it
    (``query``: "What's happening with Tesla?" asks for news, "Tell me about Tesla"
    does not); "I couldn't find ... for X in my sources." for what this company's data
    lacks.
    """
    missing = missing_topics(findings, intent)
    if not missing:
        return None
    labels = _LABELS["ja" if lang == "ja" else "en"]
    scope = findings.scope
    asked = answer_topics(intent, query)[0]
    never = [t for t in missing if scope is not None and t in scope.unavailable and t in asked]
    missing = [t for t in missing if t in never or scope is None or t not in scope.unavailable]
    if not missing:
        return None
    absent = [t for t in missing if t not in never]
    sentences = []
    if never and scope is not None:
        if lang == "ja":
            text = f"オフラインのディレクトリには{_join([labels[t] for t in never], lang)}がありません。"
            if scope.hint and "TAVILY_API_KEY" in scope.hint:
                text += "最新のデータを使うには TAVILY_API_KEY を設定してください。"
        else:
            source = scope.source[:1].upper() + scope.source[1:]
            text = f"{source} has no {_join([labels[t] for t in never], lang)}"
            text += f"; {scope.hint}." if scope.hint else "."
        sentences.append(text)
    if absent:
        what = _join([labels[t] for t in absent], lang)
        sentences.append(
            f"{findings.company}の{what}は見つかりませんでした。"
            if lang == "ja"
            else f"I couldn't find {what} for {findings.company} in my sources."
        )
    return " ".join(sentences)
