"""Tavily results as company findings: usable hits, fields by keywords, confidence.

Every text was cleaned by ``sanitize`` before it gets here or is cleaned here; it is
stored as data and never interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._base import ResearchFindings, SourceRef
from ._tavily_http import MAX_TITLE_CHARS, clean_url, host_of, sanitize, score_of, url_key

__all__ = [
    "MAX_SOURCE_CHARS",
    "classify",
    "collect_hits",
    "confidence",
    "findings_from",
]

MAX_SOURCE_CHARS: Final = 600
"""Characters kept from each result's content (after merging duplicates)."""

_PATTERNS: Final[dict[str, re.Pattern[str]]] = {
    "stock_info": re.compile(
        r"\b(stocks?|shares?|share price|market (cap|capitalization|value)|nasdaq|nyse|earnings|"
        r"revenue|eps|dividends?|valuation|investors?|analysts?|price target|quarterly|fiscal|"
        r"guidance|profits?|net income|trading|ticker)\b|\$\d"
    ),
    "key_people": re.compile(
        r"\b(ceo|cfo|coo|cto|chief executive|chief financial|chief operating|executives?|"
        r"chair(man|woman|person)?|founders?|co-founder|board of directors|president|appointed|"
        r"steps? down|stepping down|resigns?|resigned|successor|succession|leadership)\b"
    ),
    "products": re.compile(
        r"\b(products?|launch(es|ed)?|unveil(s|ed)?|releases?|released|devices?|lineup|"
        r"features?|models?|smartphones?|software|hardware|chips?|vehicles?|subscriptions?)\b"
    ),
    "key_developments": re.compile(
        r"\b(acquisitions?|acquires?|acquired|merger|partnerships?|partners with|deal|"
        r"agreements?|expansion|expands?|invests?|investments?|strategy|strategic|lawsuits?|"
        r"regulators?|antitrust|milestones?|factory|plant|layoffs?|restructuring|competitors?|"
        r"rivals?|competition|market share)\b"
    ),
    "overview": re.compile(
        r"\b(headquarter(s|ed)|founded|multinational|company profile|employees|industry|"
        r"wikipedia|is an? [a-z]+ (technology |multinational )?(company|corporation))\b"
    ),
    "recent_news": re.compile(
        r"\b(today|yesterday|this week|breaking|reported|reports|news|announced|announces|"
        r"latest|update)\b"
    ),
}
_PREFERRED: Final[dict[str, tuple[str, ...]]] = {
    "news": ("recent_news", "key_developments"),
    "stock": ("stock_info",),
    "leadership": ("key_people",),
    "products": ("products", "key_developments"),
    "competitors": ("key_developments",),
    "financials": ("stock_info",),
    "strategy": ("key_developments",),
}
_ANSWERING: Final[dict[str, tuple[str, ...]]] = _PREFERRED | {
    "overview": ("overview", "key_developments", "recent_news"),
    "comparison": ("overview", "stock_info", "key_developments", "recent_news"),
}


def classify(title: str, content: str, intent: str) -> str:
    """The findings field a result belongs to, by keywords, preferring the fields
    that answer ``intent``; without any keyword a news search's result is news and
    any other result general information (``overview``), never the asked-for field."""
    text = f"{title} {content}".lower()
    hits = {name: len(pattern.findall(text)) for name, pattern in _PATTERNS.items()}
    preferred = _PREFERRED.get(intent, ())
    if preferred and max(hits[name] for name in preferred) > 0:
        return max(preferred, key=lambda name: hits[name])
    if intent == "news":
        return "recent_news"
    best = max(hits, key=lambda name: hits[name])
    return best if hits[best] > 0 else "overview"


@dataclass
class _Hit:
    title: str
    url: str
    text: str
    score: float
    published: str


def collect_hits(items: Sequence[object]) -> list[_Hit]:
    """The usable results: http(s) URL and non-empty content, sanitised and capped,
    duplicate URLs merged into one (contents joined, best score kept)."""
    hits: dict[str, _Hit] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        url = clean_url(item.get("url"))
        text = sanitize(item.get("content"))
        if url is None or not text:
            continue
        key = url_key(url)
        known = hits.get(key)
        if known is None:
            title = sanitize(item.get("title"), MAX_TITLE_CHARS) or host_of(url)
            published = sanitize(item.get("published_date"), 40)
            hits[key] = _Hit(
                title, url, sanitize(text, MAX_SOURCE_CHARS), score_of(item.get("score")), published
            )
        else:
            if text not in known.text:
                known.text = sanitize(f"{known.text} {text}", MAX_SOURCE_CHARS)
            known.score = max(known.score, score_of(item.get("score")))
    return list(hits.values())


def _entry(hit: _Hit) -> str:
    when = f" ({hit.published})" if hit.published else ""
    return f"{hit.title}{when}: {hit.text}"


def findings_from(
    company: str, hits: list[_Hit], intent: str
) -> tuple[ResearchFindings, dict[str, int]]:
    """Findings from the hits, each entry from one page (there is no entry without a
    URL: Tavily's generated answer is never one); also the number of results filed
    under each field."""
    fields: dict[str, list[str]] = {}
    for hit in hits:
        fields.setdefault(classify(hit.title, hit.text, intent), []).append(_entry(hit))
    counts = {name: len(entries) for name, entries in fields.items()}
    texts = {name: "\n".join(entries) for name, entries in fields.items()}
    sources = [SourceRef(title=hit.title, url=hit.url) for hit in hits]
    findings = ResearchFindings.model_validate({"company": company, "sources": sources, **texts})
    return findings, counts


def confidence(findings: ResearchFindings, counts: dict[str, int], intent: str) -> int:
    """0-10: 5 when a field answering the intent is filled (+1 per extra result
    on it, up to 2; 2 when only other fields are), +1 per distinct site, up to 3."""
    answering = _ANSWERING.get(intent, _ANSWERING["overview"])
    populated = findings.populated_fields()
    on_topic = sum(counts.get(name, 0) for name in answering)
    if any(name in populated for name in answering):
        score = 5 + min(2, max(0, on_topic - 1))
    else:
        score = 2 if populated else 0
    hosts = {host_of(ref.url) for ref in findings.sources}
    return max(0, min(10, score + min(3, len(hosts))))
