"""Live web search through Tavily (``tavily.AsyncTavilyClient``).

Everything that comes back from the web is treated as data: titles, contents and
Tavily's answer are stripped of escape sequences and control characters, capped,
and only ever stored as text in the findings. ``tavily`` and ``httpx`` are imported
on first search, so importing ``research_fsm`` stays fast.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import structlog

from ._base import (
    CompanyRef,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_SOURCE_CHARS",
    "TAVILY_BASE_URL_ENV",
    "TAVILY_KEY_ENV",
    "TavilySource",
    "build_query",
    "sanitize",
]

_log = structlog.get_logger(__name__)

TAVILY_KEY_ENV: Final = "TAVILY_API_KEY"
"""Environment variable holding the Tavily API key."""

TAVILY_BASE_URL_ENV: Final = "TAVILY_BASE_URL"
"""Environment variable overriding the API's base URL (a proxy or a local server)."""

DEFAULT_BASE_URL: Final = "https://api.tavily.com"
"""Tavily's API."""

MAX_SOURCE_CHARS: Final = 600
"""Characters kept from each result's content (after merging duplicates)."""

MAX_TITLE_CHARS: Final = 160
"""Characters kept from each result's title."""

MAX_ANSWER_CHARS: Final = 800
"""Characters kept from Tavily's generated answer."""

MAX_QUERY_CHARS: Final = 400
"""Longest query sent (Tavily rejects much longer ones)."""

MAX_RESULTS_LIMIT: Final = 20
"""Most results Tavily returns for one search."""

MAX_RETRY_AFTER: Final = 30.0
"""A ``retry-after`` longer than this (seconds) ends the retries at once."""

_NAME: Final = "Tavily"

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

# -- text hygiene -------------------------------------------------------------

_ANSI: Final = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_INVISIBLE: Final = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def sanitize(text: object, limit: int | None = None) -> str:
    """``text`` as one clean line: ANSI escape sequences, control and invisible
    formatting characters removed, whitespace folded, cut at ``limit`` characters
    (at a word boundary, with an ellipsis)."""
    if not isinstance(text, str):
        return ""
    text = _ANSI.sub("", text)
    kept = []
    for ch in text:
        if ch.isspace():
            kept.append(" ")
        elif ch in _INVISIBLE or unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn"):
            continue
        else:
            kept.append(ch)
    clean = " ".join("".join(kept).split())
    if limit is not None and len(clean) > limit:
        cut = clean[: limit - 1]
        space = cut.rfind(" ")
        clean = (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "\u2026"
    return clean


class _Secret:
    """Holds the API key; never shows it in a repr or a string."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "'***'" if self._value else "None"

    __str__ = __repr__


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


def _clip(query: str) -> str:
    return query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]


def _first_query(name: str, context: SearchContext) -> str:
    base = f"{name} {INTENT_TERMS[context.intent]}"
    extra = _terms(context.query, _words_of(base), 4)
    return _clip(" ".join([base, *extra]))


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
    query = _clip(" ".join([angle, *terms]))
    return query if query != first else _clip(f"{query} {RETRY_TERMS['overview']}")


# -- mapping results to findings -------------------------------------------------------

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


def _clean_url(value: object) -> str | None:
    url = sanitize(value, 2048)
    if " " in url or not url.lower().startswith(("http://", "https://")):
        return None
    parts = urlsplit(url)
    return url if parts.hostname else None


def _url_key(url: str) -> str:
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{(parts.hostname or '').lower().removeprefix('www.')}{path}{query}"


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower().removeprefix("www.")


def _score(value: object) -> float:
    try:
        return round(float(value), 4) if isinstance(value, (int, float, str)) else 0.0
    except ValueError:
        return 0.0


def collect_hits(items: Sequence[object]) -> list[_Hit]:
    """The usable results: http(s) URL and non-empty content, sanitised and capped,
    duplicate URLs merged into one (contents joined, best score kept)."""
    hits: dict[str, _Hit] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        url = _clean_url(item.get("url"))
        text = sanitize(item.get("content"))
        if url is None or not text:
            continue
        key = _url_key(url)
        known = hits.get(key)
        if known is None:
            title = sanitize(item.get("title"), MAX_TITLE_CHARS) or _host(url)
            published = sanitize(item.get("published_date"), 40)
            hits[key] = _Hit(
                title, url, sanitize(text, MAX_SOURCE_CHARS), _score(item.get("score")), published
            )
        else:
            if text not in known.text:
                known.text = sanitize(f"{known.text} {text}", MAX_SOURCE_CHARS)
            known.score = max(known.score, _score(item.get("score")))
    return list(hits.values())


def _entry(hit: _Hit) -> str:
    when = f" ({hit.published})" if hit.published else ""
    return f"{hit.title}{when}: {hit.text}"


def findings_from(
    company: str, hits: list[_Hit], answer: str, intent: str
) -> tuple[ResearchFindings, dict[str, int]]:
    """Findings from the hits (and Tavily's answer as the overview's first line);
    also the number of results filed under each field."""
    fields: dict[str, list[str]] = {}
    for hit in hits:
        fields.setdefault(classify(hit.title, hit.text, intent), []).append(_entry(hit))
    counts = {name: len(entries) for name, entries in fields.items()}
    overview = [answer] if answer else []
    overview += fields.pop("overview", [])
    if overview:
        fields["overview"] = overview
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
    hosts = {_host(ref.url) for ref in findings.sources}
    return max(0, min(10, score + min(3, len(hosts))))


# -- errors ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Failure:
    error: DataSourceError
    retry_after: float | None = None


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: use the plain backoff
    return seconds if seconds >= 0 else None


# -- the source ------------------------------------------------------------------------------


class TavilySource:
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

    name: str = _NAME
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
        if not 1 <= max_results <= MAX_RESULTS_LIMIT:
            raise ValueError(f"max_results must be between 1 and {MAX_RESULTS_LIMIT}")
        if timeout <= 0 or max_attempts < 1 or backoff < 0:
            raise ValueError("timeout must be > 0, max_attempts >= 1 and backoff >= 0")
        key = api_key if api_key is not None else os.environ.get(TAVILY_KEY_ENV, "")
        self._key = _Secret(key.strip())
        env_url = os.environ.get(TAVILY_BASE_URL_ENV, "").strip()
        self.base_url: str = (base_url or env_url or DEFAULT_BASE_URL).rstrip("/")
        """Where requests go."""
        self.max_results = max_results
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff

    def __repr__(self) -> str:
        """The settings; the key only as set or missing."""
        return (
            f"TavilySource(base_url={self.base_url!r}, max_results={self.max_results}, "
            f"timeout={self.timeout}, max_attempts={self.max_attempts}, "
            f"api_key={'set' if self._key else 'missing'})"
        )

    def is_available(self) -> bool:
        """Whether an API key is configured."""
        return bool(self._key)

    async def companies(self) -> Sequence[CompanyRef]:
        """Web search knows no fixed list of companies."""
        return []

    def request_for(self, company: str, context: SearchContext) -> dict[str, Any]:
        """The keyword arguments of ``AsyncTavilyClient.search`` for this search."""
        retry = context.attempt > 1 or bool(context.feedback)
        return {
            "query": build_query(company, context),
            "topic": TOPICS.get(context.intent, "general"),
            "search_depth": "advanced" if retry else "basic",
            "max_results": self.max_results,
            "include_answer": True,
        }

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Search the web for ``company``; raise ``DataSourceError`` when Tavily fails
        (after retrying transient failures)."""
        if not self._key:
            message = f"no Tavily API key: set {TAVILY_KEY_ENV}"
            raise DataSourceError(message, source=self.name, retryable=False)
        request = self.request_for(company, context)
        started = time.perf_counter()
        payload = await self._search_with_retries(request)
        result = self._result(company, context, request, payload)
        _log.info(
            "tavily search done", company=company, intent=context.intent,
            attempt=context.attempt, topic=request["topic"], confidence=result.confidence,
            sources=len(result.findings.sources) if result.findings else 0,
            seconds=round(time.perf_counter() - started, 3),
        )  # fmt: skip
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
        answer = sanitize(payload.get("answer"), MAX_ANSWER_CHARS)
        findings, counts = findings_from(company, hits, answer, context.intent)
        findings.raw_data = {
            "query": query,
            "topic": request["topic"],
            "search_depth": request["search_depth"],
            "results": [{"url": hit.url, "score": hit.score} for hit in hits],
            "received": len(items),
            "answer": bool(answer),
            "response_time": _score(payload.get("response_time")),
        }
        hosts = len({_host(hit.url) for hit in hits})
        note = f"Tavily web search: {len(hits)} results from {hosts} sites"
        return SearchResult(
            findings=findings,
            confidence=confidence(findings, counts, context.intent),
            source_name=self.name,
            note=note,
        )

    async def _search_with_retries(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx  # lazy: keeps ``import research_fsm`` fast
        import tavily  # type: ignore[import-untyped]

        seen: dict[str, Any] = {}

        async def on_response(response: httpx.Response) -> None:
            seen["status"] = response.status_code
            seen["retry_after"] = response.headers.get("retry-after")

        async with httpx.AsyncClient(
            base_url=self.base_url, timeout=self.timeout, event_hooks={"response": [on_response]}
        ) as http:
            client = tavily.AsyncTavilyClient(
                api_key=self._key.reveal(), api_base_url=self.base_url, client=http
            )
            attempt = 1
            while True:
                seen.clear()
                try:
                    async with asyncio.timeout(self.timeout):
                        payload = await client.search(**request, timeout=self.timeout)
                    if not isinstance(payload, dict) or not isinstance(
                        payload.get("results"), list
                    ):
                        raise ValueError("no results list")
                    return payload
                except Exception as exc:
                    failure = self._classify(exc, seen, tavily.errors)
                error = failure.error
                wait = self.backoff * 2 ** (attempt - 1)
                if failure.retry_after is not None:
                    if failure.retry_after > MAX_RETRY_AFTER:
                        error = DataSourceError(
                            f"{error.message}; retry after {failure.retry_after:g} s",
                            source=self.name, retryable=True,
                        )  # fmt: skip
                        attempt = self.max_attempts
                    wait = max(wait, failure.retry_after)
                if not error.retryable or attempt >= self.max_attempts:
                    _log.warning("tavily search failed", error=error.message,
                                 retryable=error.retryable, attempts=attempt)  # fmt: skip
                    raise error from None
                _log.warning("tavily search failed; retrying", error=error.message,
                             attempt=attempt, max_attempts=self.max_attempts,
                             delay=round(wait, 3))  # fmt: skip
                await asyncio.sleep(wait)
                attempt += 1

    def _classify(self, exc: Exception, seen: dict[str, Any], errors: Any) -> _Failure:
        """Turn a client exception into a ``DataSourceError`` (retryable or not);
        ``errors`` is the ``tavily.errors`` module."""
        import httpx

        status: int | None = seen.get("status")
        retry_after = _retry_after(seen.get("retry_after"))
        detail = self._detail(str(exc))
        suffix = f": {detail}" if detail else ""

        def fail(message: str, *, retryable: bool) -> _Failure:
            error = DataSourceError(message, source=self.name, retryable=retryable)
            return _Failure(error, retry_after if retryable else None)

        if isinstance(exc, (errors.InvalidAPIKeyError, errors.MissingAPIKeyError)):
            return fail(
                f"Tavily rejected the API key (HTTP {status or 401}): check {TAVILY_KEY_ENV}",
                retryable=False,
            )
        if isinstance(exc, errors.ForbiddenError):
            return fail(
                f"Tavily refused the request (HTTP {status or 403}): check {TAVILY_KEY_ENV} "
                f"and the plan's limits{suffix}",
                retryable=False,
            )
        if isinstance(exc, errors.UsageLimitExceededError):
            return fail(f"Tavily rate limit reached (HTTP {status or 429}){suffix}", retryable=True)
        if isinstance(exc, errors.BadRequestError):
            return fail(f"Tavily rejected the query (HTTP 400){suffix}", retryable=False)
        if isinstance(exc, httpx.HTTPStatusError):
            code = exc.response.status_code
            transient = code >= 500 or code == 408
            kind = "server error" if code >= 500 else "request failed"
            return fail(f"Tavily {kind} (HTTP {code})", retryable=transient)
        if isinstance(exc, (errors.TimeoutError, TimeoutError, httpx.TimeoutException)):
            return fail(f"Tavily did not answer within {self.timeout:g} s", retryable=True)
        if isinstance(exc, httpx.TransportError):
            return fail(
                f"could not reach Tavily at {self.base_url} ({type(exc).__name__})",
                retryable=True,
            )
        if isinstance(exc, ValueError):
            return fail(
                f"Tavily returned an invalid response (HTTP {status or 200})", retryable=False
            )
        return fail(
            f"unexpected error from the Tavily client: {type(exc).__name__}", retryable=False
        )

    def _detail(self, text: str) -> str:
        """A server-supplied message, cleaned, capped and without the key."""
        key = self._key.reveal()
        if key:
            text = text.replace(key, "***")
        return sanitize(text, 200)
