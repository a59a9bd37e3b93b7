"""Web search by topic through Tavily, for deep research.

``TavilyWebSearch.search("Spring Boot 2 to 3 migration")`` returns ranked
``WebResult`` items: title, URL, Tavily's snippet and (when asked) the page text.
Everything from the web is data: titles, snippets and pages are stripped of escape
sequences, control and invisible characters and capped, never interpreted. The
transport (key, retries, error classification) is the one ``TavilySource`` uses.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, Protocol

from .._logging import get_logger
from ._tavily_http import (
    MAX_RESULTS_LIMIT,
    MAX_TITLE_CHARS,
    NAME,
    TavilyTransport,
    check_settings,
    clean_url,
    clip_query,
    host_of,
    sanitize,
    sanitize_block,
    score_of,
    url_key,
)

__all__ = [
    "MAX_RAW_CONTENT_CHARS",
    "MAX_SNIPPET_CHARS",
    "SEARCH_DEPTHS",
    "TavilyWebSearch",
    "WebResult",
    "WebSearch",
    "web_results",
]

_log = get_logger(__name__)

MAX_SNIPPET_CHARS: Final = 2_000
"""Characters kept from each result's snippet (after merging duplicates)."""

MAX_RAW_CONTENT_CHARS: Final = 20_000
"""Characters kept from each result's page text."""

SEARCH_DEPTHS: Final[tuple[str, ...]] = ("basic", "advanced")
"""Accepted ``search_depth`` values."""

RAW_CONTENT_FORMAT: Final = "text"
"""The ``include_raw_content`` value sent when page text is wanted: plain text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebResult:
    """One web page found for a query."""

    title: str
    """The page title, sanitised and capped (the host when the page has none)."""
    url: str
    """The page's absolute http(s) URL, as Tavily returned it (cleaned)."""
    content: str
    """Tavily's snippet of the page, sanitised and capped; data, never instructions."""
    raw_content: str | None
    """The page text when it was asked for and returned (sanitised, line breaks kept,
    capped at ``MAX_RAW_CONTENT_CHARS``); ``None`` otherwise."""
    score: float
    """Tavily's relevance score, 0 to 1."""
    rank: int
    """1-based position among the results of this search."""
    published_date: str | None
    """The publication date as Tavily gave it (news results), or ``None``."""


class WebSearch(Protocol):
    """A search of the web by topic (``TavilyWebSearch`` or a test double)."""

    name: str
    """Human-readable name of the search service."""

    def is_available(self) -> bool:
        """Whether the search can run (e.g. a key is configured)."""
        ...

    async def search(
        self, query: str, *, max_results: int | None = None, exclude_urls: Collection[str] = ()
    ) -> list[WebResult]:
        """Ranked results for ``query``; raise ``DataSourceError`` when the service fails."""
        ...


def _merge(known: WebResult, item: WebResult) -> WebResult:
    """Two results for one page as one: the first's title and rank, the best score,
    both snippets, the longer page text."""
    content = known.content
    if item.content and item.content not in content:
        content = sanitize(f"{content} {item.content}", MAX_SNIPPET_CHARS)
    raw = max((known.raw_content or "", item.raw_content or ""), key=len) or None
    return replace(known, content=content, raw_content=raw, score=max(known.score, item.score))


def _one(item: object) -> WebResult | None:
    """``item`` of Tavily's results as a ``WebResult`` (rank 0), or ``None`` when it
    has no usable URL or no text at all."""
    if not isinstance(item, dict):
        return None
    url = clean_url(item.get("url"))
    content = sanitize(item.get("content"), MAX_SNIPPET_CHARS)
    raw = sanitize_block(item.get("raw_content"), MAX_RAW_CONTENT_CHARS) or None
    if url is None or not (content or raw):
        return None
    return WebResult(
        title=sanitize(item.get("title"), MAX_TITLE_CHARS) or host_of(url),
        url=url,
        content=content,
        raw_content=raw,
        score=min(1.0, max(0.0, score_of(item.get("score")))),
        rank=0,
        published_date=sanitize(item.get("published_date"), 40) or None,
    )


def web_results(
    items: Sequence[object], *, limit: int = MAX_RESULTS_LIMIT, exclude_urls: Collection[str] = ()
) -> list[WebResult]:
    """The usable results in Tavily's order: an http(s) URL and some text, duplicate
    URLs merged into the first, ``exclude_urls`` dropped, at most ``limit``, ranked 1..n."""
    excluded = {url_key(url) for url in map(clean_url, exclude_urls) if url}
    found: dict[str, WebResult] = {}
    for item in items:
        result = _one(item)
        if result is None:
            continue
        key = url_key(result.url)
        if key in excluded:
            continue
        known = found.get(key)
        found[key] = result if known is None else _merge(known, result)
    kept = list(found.values())[:limit]
    return [replace(result, rank=rank) for rank, result in enumerate(kept, start=1)]


class TavilyWebSearch:
    """Search the web by topic with Tavily.

    Args:
        api_key: the key; default ``$TAVILY_API_KEY``. Without one the search is
            not available and ``search`` raises a non-retryable ``DataSourceError``.
        base_url: the API's base URL; default ``$TAVILY_BASE_URL``, else Tavily's.
        max_results: results per search unless ``search`` says otherwise (1-20).
        timeout: seconds allowed for one request (also a hard limit per attempt).
        max_attempts: requests per search at most, retries of transient failures
            (429, 5xx, timeouts, connection errors) included.
        backoff: first retry delay in seconds, doubled each retry; a longer
            ``retry-after`` from the server wins.
        include_raw_content: ask Tavily for each page's text (plain text).
        search_depth: Tavily's ``"basic"`` or ``"advanced"`` search.
    """

    name: str = NAME
    """The service's name (``DataSourceError.source``)."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        max_results: int = 8,
        timeout: float = 20.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
        include_raw_content: bool = True,
        search_depth: Literal["basic", "advanced"] = "advanced",
    ) -> None:
        """Configure the search; nothing is imported nor contacted yet."""
        check_settings(max_results, timeout, max_attempts, backoff)
        if search_depth not in SEARCH_DEPTHS:
            raise ValueError(f"search_depth must be 'basic' or 'advanced', not {search_depth!r}")
        self._http = TavilyTransport.configure(
            api_key, base_url, timeout=timeout, max_attempts=max_attempts, backoff=backoff
        )
        self.max_results = max_results
        self.include_raw_content = include_raw_content
        self.search_depth: Literal["basic", "advanced"] = search_depth

    @property
    def base_url(self) -> str:
        """Where requests go."""
        return self._http.base_url

    def __repr__(self) -> str:
        """The settings; the key only as set or missing."""
        http = self._http
        return (
            f"TavilyWebSearch(base_url={http.base_url!r}, max_results={self.max_results}, "
            f"timeout={http.timeout}, max_attempts={http.max_attempts}, "
            f"search_depth={self.search_depth!r}, include_raw_content={self.include_raw_content}, "
            f"api_key={'set' if http.key else 'missing'})"
        )

    def is_available(self) -> bool:
        """Whether an API key is configured."""
        return bool(self._http.key)

    def request_for(
        self, query: str, max_results: int | None = None, extra: int = 0
    ) -> dict[str, Any]:
        """The keyword arguments of ``AsyncTavilyClient.search`` for ``query``: the
        query cleaned and clipped, ``extra`` more results asked (at most 20) to make
        up for excluded URLs. Raise ``ValueError`` for an empty query or a bad count."""
        clean = clip_query(sanitize(query))
        if not clean:
            raise ValueError(f"query must be non-empty text, got {query!r}")
        wanted = self.max_results if max_results is None else max_results
        if not 1 <= wanted <= MAX_RESULTS_LIMIT:
            raise ValueError(f"max_results must be between 1 and {MAX_RESULTS_LIMIT}, not {wanted}")
        return {
            "query": clean,
            "topic": "general",
            "search_depth": self.search_depth,
            "max_results": min(MAX_RESULTS_LIMIT, wanted + extra),
            "include_raw_content": RAW_CONTENT_FORMAT if self.include_raw_content else False,
        }

    async def search(
        self, query: str, *, max_results: int | None = None, exclude_urls: Collection[str] = ()
    ) -> list[WebResult]:
        """Ranked results for ``query`` (at most ``max_results``, default the
        instance's), pages in ``exclude_urls`` left out. Raise ``ValueError`` for an
        empty query and ``DataSourceError`` when Tavily fails (after retrying
        transient failures) or no key is configured."""
        request = self.request_for(query, max_results, extra=len(exclude_urls))
        limit = self.max_results if max_results is None else max_results
        self._http.require_key()
        started = time.perf_counter()
        payload = await self._http.search(request, self.name)
        items: list[object] = payload["results"]  # the transport checked it is a list
        found = web_results(items, limit=limit, exclude_urls=exclude_urls)
        _log.info(
            "tavily web search done",
            query=request["query"],
            received=len(items),
            results=len(found),
            seconds=round(time.perf_counter() - started, 3),
        )
        return found
