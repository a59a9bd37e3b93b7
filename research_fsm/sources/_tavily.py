"""Company research through Tavily web search (``tavily.AsyncTavilyClient``).

The company, the question's intent and the validator's feedback make the query;
results are filed into findings by keywords. Everything that comes back from the
web is treated as data: titles and contents are stripped of escape sequences and
control characters, capped, and only ever stored as text in the findings. Tavily's
generated answer is not asked for (it cites no page, so it is never a finding); a news
question searches Tavily's news topic within a time range. The transport (key, retries, error classification) and the text hygiene
live in ``_tavily_http``, shared with the topic search ``TavilyWebSearch``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Final

from .._logging import get_logger
from ._base import (
    DataSource,
    SearchContext,
    SearchResult,
)
from ._ref import CompanyRef
from ._tavily_findings import (
    MAX_SOURCE_CHARS,
    classify,
    collect_hits,
    confidence,
    findings_from,
)
from ._tavily_http import (
    DEFAULT_BASE_URL,
    MAX_QUERY_CHARS,
    MAX_RESULTS_LIMIT,
    MAX_RETRY_AFTER,
    MAX_TITLE_CHARS,
    NAME,
    TAVILY_BASE_URL_ENV,
    TAVILY_KEY_ENV,
    TavilyTransport,
    check_settings,
    clip_query,
    host_of,
    sanitize,
    score_of,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS_LIMIT",
    "MAX_RETRY_AFTER",
    "MAX_SOURCE_CHARS",
    "MAX_TITLE_CHARS",
    "NEWS_TIME_RANGES",
    "TAVILY_BASE_URL_ENV",
    "TAVILY_KEY_ENV",
    "TavilySource",
    "build_query",
    "classify",
    "collect_hits",
    "confidence",
    "findings_from",
    "sanitize",
]

_log = get_logger(__name__)

NEWS_TIME_RANGES: Final = ("week", "month")
"""Tavily ``time_range`` of a news search: the first attempt, then every retry."""

INTENT_TERMS: Final[dict[str, str]] = {
    "news": "latest news",
    "stock": "stock price market cap earnings",
    "leadership": "CEO executives leadership",
    "products": "main products and services",
    "competitors": "main competitors market share",
    "comparison": "company overview revenue market cap",
    "overview": "company overview recent developments",
    "financials": "revenue net income annual results",
    "strategy": "strategy plans investments",
}
"""Words added to the company name on a first attempt, per intent."""

RETRY_TERMS: Final[dict[str, str]] = {
    "news": "recent announcements press release this week",
    "stock": "shares analyst revenue quarterly results",
    "leadership": "chief executive officer management team board",
    "products": "product lineup launches",
    "competitors": "rivals industry competition",
    "comparison": "annual revenue profit employees",
    "overview": "company profile headquarters business",
    "financials": "earnings report profit margin fiscal year",
    "strategy": "strategic priorities roadmap announcements",
}
"""A different angle for retries, per intent."""

TOPICS: Final[dict[str, str]] = {"news": "news", "stock": "finance"}
"""Tavily ``topic`` per intent (``general`` otherwise)."""

# -- the query ------------------------------------------------------------------

_WORD: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9&$'.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOPWORD_TEXT: Final = (
    "a about after again all also an and any are as at be been but by can could data did "
    "do does doing for from get give has have how i if in info information is it its "
    "just know latest like lately me more my need no not now of on or other our please "
    "search searching should show some tell than that the their them then there these "
    "they this those to try up us was we were what whats when where which who why will "
    "with would you your found find fewer enough independent sources source confirm "
    "confirmed missing insufficient full name company companies corp corporation inc ltd "
    "plc co group holdings llc"
)
"""Words never used as search terms (function words, question words, legal suffixes)."""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def _terms(text: str | None, exclude: set[str], limit: int) -> list[str]:
    """Salient words of ``text``: no stopwords, nothing in ``exclude``, no repeats."""
    found: list[str] = []
    for raw in _WORD.findall(sanitize(text or "", 300)):
        word = raw.lower().removesuffix("'s").strip("'.-")
        if len(word) < 2 or word in _STOPWORDS or word in exclude or word in found:
            continue
        found.append(word)
        if len(found) == limit:
            break
    return found


def _feedback_terms(feedback: str | None, exclude: set[str]) -> list[str]:
    """The key terms of validator feedback, preferring what follows "search for"."""
    if not feedback:
        return []
    text = sanitize(feedback, 300)
    match = re.search(r"\bsearch(?:ing)?\s+(?:for\s+)?(.+)", text, re.IGNORECASE)
    return _terms(match.group(1) if match else text, exclude, 8)


def _words_of(text: str) -> set[str]:
    return {w.lower().removesuffix("'s") for w in _WORD.findall(text)}


def _first_query(name: str, context: SearchContext) -> str:
    base = f"{name} {INTENT_TERMS[context.intent]}"
    extra = _terms(context.query, _words_of(base), 4)
    return clip_query(" ".join([base, *extra]))


def build_query(company: str, context: SearchContext) -> str:
    """The search query for ``company`` and the question's intent.

    A first attempt is the company, the intent's words and up to 4 salient words of
    the question. A retry (``attempt > 1`` or feedback given) searches from another
    angle: the intent's retry words plus the feedback's key terms; it never repeats
    the first attempt's query, and a third attempt differs from the second.
    """
    name = sanitize(company, 100) or "company"
    first = _first_query(name, context)
    if context.attempt <= 1 and not context.feedback:
        return first
    angle = f"{name} {RETRY_TERMS[context.intent]}"
    terms = _feedback_terms(context.feedback, _words_of(angle))
    if context.attempt >= 3:
        terms += [
            t for t in _terms(INTENT_TERMS[context.intent], _words_of(angle), 6) if t not in terms
        ]
    query = clip_query(" ".join([angle, *terms]))
    return query if query != first else clip_query(f"{query} {RETRY_TERMS['overview']}")


# -- the source ------------------------------------------------------------------------------


class TavilySource(DataSource):
    """Web search with Tavily: the company, the question's intent and the validator's
    feedback make the query; results become findings with their URLs as sources.

    Args:
        api_key: the key; default ``$TAVILY_API_KEY``. Without one the source is
            not available and ``search`` raises a non-retryable ``DataSourceError``.
        base_url: the API's base URL; default ``$TAVILY_BASE_URL``, else Tavily's.
        max_results: results asked per search (1-20).
        timeout: seconds allowed for one request (also a hard limit per attempt).
        max_attempts: requests per search at most, retries of transient failures
            (429, 5xx, timeouts, connection errors) included.
        backoff: first retry delay in seconds, doubled each retry; a longer
            ``retry-after`` from the server wins.
    """

    name: str = NAME
    """Reported as ``SearchResult.source_name``."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        max_results: int = 5,
        timeout: float = 15.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """Configure the source; nothing is imported nor contacted yet."""
        check_settings(max_results, timeout, max_attempts, backoff)
        self._http = TavilyTransport.configure(
            api_key, base_url, timeout=timeout, max_attempts=max_attempts, backoff=backoff
        )
        self.max_results = max_results

    @property
    def base_url(self) -> str:
        """Where requests go."""
        return self._http.base_url

    @property
    def timeout(self) -> float:
        """Seconds allowed for one request."""
        return self._http.timeout

    @property
    def max_attempts(self) -> int:
        """Requests per search at most."""
        return self._http.max_attempts

    @property
    def backoff(self) -> float:
        """First retry delay in seconds."""
        return self._http.backoff

    def __repr__(self) -> str:
        """The settings; the key only as set or missing."""
        return (
            f"TavilySource(base_url={self.base_url!r}, max_results={self.max_results}, "
            f"timeout={self.timeout}, max_attempts={self.max_attempts}, "
            f"api_key={'set' if self._http.key else 'missing'})"
        )

    def is_available(self) -> bool:
        """Whether an API key is configured."""
        return bool(self._http.key)

    async def companies(self) -> Sequence[CompanyRef]:
        """Web search knows no fixed list of companies."""
        return []

    def request_for(self, company: str, context: SearchContext) -> dict[str, Any]:
        """The keyword arguments of ``AsyncTavilyClient.search`` for this search."""
        retry = context.attempt > 1 or bool(context.feedback)
        request: dict[str, Any] = {
            "query": build_query(company, context),
            "topic": TOPICS.get(context.intent, "general"),
            "search_depth": "advanced" if retry else "basic",
            "max_results": self.max_results,
            "include_answer": False,
        }
        if context.intent == "news":
            request["time_range"] = NEWS_TIME_RANGES[1 if retry else 0]
        return request

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Search the web for ``company``; raise ``DataSourceError`` when Tavily fails
        (after retrying transient failures)."""
        self._http.require_key()
        request = self.request_for(company, context)
        started = time.perf_counter()
        payload = await self._http.search(request, self.name)
        result = self._result(company, context, request, payload)
        _log.info(
            "tavily search done",
            company=company,
            intent=context.intent,
            attempt=context.attempt,
            topic=request["topic"],
            confidence=result.confidence,
            sources=len(result.findings.sources) if result.findings else 0,
            seconds=round(time.perf_counter() - started, 3),
        )
        return result

    def _result(
        self, company: str, context: SearchContext, request: dict[str, Any], payload: dict[str, Any]
    ) -> SearchResult:
        raw_items = payload.get("results")
        items: list[object] = raw_items if isinstance(raw_items, list) else []
        hits = collect_hits(items)
        query = request["query"]
        if not hits:
            note = f"Tavily found no usable results for {query!r}"
            return SearchResult(findings=None, confidence=0, source_name=self.name, note=note)
        findings, counts = findings_from(company, hits, context.intent)
        findings.raw_data = {
            "query": query,
            "topic": request["topic"],
            "search_depth": request["search_depth"],
            "results": [{"url": hit.url, "score": hit.score} for hit in hits],
            "received": len(items),
            "response_time": score_of(payload.get("response_time")),
            "pages": {hit.url: f"{hit.title}: {hit.text}" for hit in hits},
        }
        if "time_range" in request:
            findings.raw_data["time_range"] = request["time_range"]
        hosts = len({host_of(hit.url) for hit in hits})
        note = f"Tavily web search: {len(hits)} results from {hosts} sites"
        return SearchResult(
            findings=findings,
            confidence=confidence(findings, counts, context.intent),
            source_name=self.name,
            note=note,
        )
