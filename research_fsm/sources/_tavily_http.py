"""What every Tavily search shares: the key, the settings, text hygiene, and the transport.

``TavilyTransport`` sends one ``AsyncTavilyClient.search`` request through the real
``tavily`` client, retries transient failures (429, 5xx, timeouts, dropped
connections) with a doubling backoff and the server's ``retry-after``, and turns
every failure into a ``DataSourceError`` whose message never contains the key.
``sanitize`` and ``sanitize_block`` make text from the web safe to store and show:
it is data, never instructions. ``tavily`` and ``httpx`` are imported on first
search, so importing ``research_fsm`` stays fast.
"""

from __future__ import annotations

import asyncio
import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from .._logging import get_logger
from .._tracing import search_span
from ._base import DataSourceError
from .urls import web_url

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS_LIMIT",
    "MAX_RETRY_AFTER",
    "MAX_TITLE_CHARS",
    "TAVILY_BASE_URL_ENV",
    "TAVILY_KEY_ENV",
    "TavilyTransport",
    "check_settings",
    "clean_url",
    "clip_query",
    "host_of",
    "sanitize",
    "sanitize_block",
    "score_of",
    "url_key",
]

_log = get_logger(__name__)

TAVILY_KEY_ENV: Final = "TAVILY_API_KEY"
"""Environment variable holding the Tavily API key."""

TAVILY_BASE_URL_ENV: Final = "TAVILY_BASE_URL"
"""Environment variable overriding the API's base URL (a proxy or a local server)."""

DEFAULT_BASE_URL: Final = "https://api.tavily.com"
"""Tavily's API."""

MAX_TITLE_CHARS: Final = 160
"""Characters kept from each result's title."""

MAX_QUERY_CHARS: Final = 400
"""Longest query sent (Tavily rejects much longer ones)."""

MAX_RESULTS_LIMIT: Final = 20
"""Most results Tavily returns for one search."""

MAX_RETRY_AFTER: Final = 30.0
"""A ``retry-after`` longer than this (seconds) ends the retries at once."""

NAME: Final = "Tavily"
"""The name both searches report (``DataSourceError.source``)."""

# -- text hygiene -------------------------------------------------------------

_ANSI: Final = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_INVISIBLE: Final = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _cut(clean: str, limit: int) -> str:
    """``clean`` cut at ``limit`` characters, at a word boundary, with an ellipsis."""
    if len(clean) <= limit:
        return clean
    cut = clean[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:\n") + "\u2026"


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
    return clean if limit is None else _cut(clean, limit)


def sanitize_block(text: object, limit: int | None = None) -> str:
    """``text`` as clean paragraphs: each line cleaned like ``sanitize``, line breaks
    kept (any run of blank lines becomes one), cut at ``limit`` characters."""
    if not isinstance(text, str):
        return ""
    lines = [sanitize(line) for line in _ANSI.sub("", text).splitlines()]
    paragraphs = "\n".join(lines)
    clean = re.sub(r"\n{3,}", "\n\n", paragraphs).strip("\n")
    return clean if limit is None else _cut(clean, limit)


def clip_query(query: str) -> str:
    """``query`` cut to ``MAX_QUERY_CHARS`` at a word boundary."""
    return query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]


# -- result URLs and scores -------------------------------------------------------


def clean_url(value: object) -> str | None:
    """``value`` as an absolute http(s) URL with a host a browser parses too, or ``None``;
    characters that never appear raw in a URL (``<``, ``>``, quotes...) percent-encoded."""
    return web_url(sanitize(value, 2048))


def url_key(url: str) -> str:
    """What makes two URLs the same page: host without ``www.``, path without a
    trailing slash, query; not the scheme nor the fragment."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{(parts.hostname or '').lower().removeprefix('www.')}{path}{query}"


def host_of(url: str) -> str:
    """The URL's host, lower-cased, without ``www.``."""
    return (urlsplit(url).hostname or "").lower().removeprefix("www.")


def score_of(value: object) -> float:
    """A number from the response rounded to 4 places; 0.0 when it is none."""
    try:
        return round(float(value), 4) if isinstance(value, (int, float, str)) else 0.0
    except ValueError:
        return 0.0


# -- the key and the settings -------------------------------------------------------


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


def check_settings(max_results: int, timeout: float, max_attempts: int, backoff: float) -> None:
    """Raise ``ValueError`` naming the setting out of range."""
    if not 1 <= max_results <= MAX_RESULTS_LIMIT:
        raise ValueError(f"max_results must be between 1 and {MAX_RESULTS_LIMIT}")
    if timeout <= 0 or max_attempts < 1 or backoff < 0:
        raise ValueError("timeout must be > 0, max_attempts >= 1 and backoff >= 0")


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


# -- the transport --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TavilyTransport:
    """Where and how searches are sent: key, base URL, timeout and retry policy.

    Build it with ``TavilyTransport.configure``: the key and base URL default to
    ``$TAVILY_API_KEY`` and ``$TAVILY_BASE_URL`` (else Tavily's API).
    """

    key: _Secret = field(repr=False)
    """The API key (empty: no key)."""
    base_url: str
    """Where requests go."""
    timeout: float
    """Seconds allowed for one request (also a hard limit per attempt)."""
    max_attempts: int
    """Requests per search at most, retries of transient failures included."""
    backoff: float
    """First retry delay in seconds, doubled each retry (a longer ``retry-after`` wins)."""

    @classmethod
    def configure(
        cls,
        api_key: str | None,
        base_url: str | None,
        *,
        timeout: float,
        max_attempts: int,
        backoff: float,
    ) -> TavilyTransport:
        """The transport for these arguments, the environment filling in what is missing."""
        key = api_key if api_key is not None else os.environ.get(TAVILY_KEY_ENV, "")
        env_url = os.environ.get(TAVILY_BASE_URL_ENV, "").strip()
        url = (base_url or env_url or DEFAULT_BASE_URL).rstrip("/")
        return cls(_Secret(key.strip()), url, timeout, max_attempts, backoff)

    def require_key(self) -> None:
        """Raise a non-retryable ``DataSourceError`` when no key is configured."""
        if not self.key:
            message = f"no Tavily API key: set {TAVILY_KEY_ENV}"
            raise DataSourceError(message, source=NAME, retryable=False)

    async def search(self, request: dict[str, Any], source: str = NAME) -> dict[str, Any]:
        """Tavily's answer to ``AsyncTavilyClient.search(**request)`` (with a results
        list); raise ``DataSourceError`` once retries of transient failures are spent.
        In a span naming data source ``source`` (never the key; the query's length)."""
        with search_span(source, str(request.get("query", ""))) as span:
            payload = await self._search(request)
            span.set_attribute("research_fsm.search.results", len(payload["results"]))
            return payload

    async def _search(self, request: dict[str, Any]) -> dict[str, Any]:
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
                api_key=self.key.reveal(), api_base_url=self.base_url, client=http
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
                    failure = self.classify(exc, seen, tavily.errors)
                error = failure.error
                wait = self.backoff * 2 ** (attempt - 1)
                if failure.retry_after is not None:
                    if failure.retry_after > MAX_RETRY_AFTER:
                        error = DataSourceError(
                            f"{error.message}; retry after {failure.retry_after:g} s",
                            source=NAME,
                            retryable=True,
                        )
                        attempt = self.max_attempts
                    wait = max(wait, failure.retry_after)
                if not error.retryable or attempt >= self.max_attempts:
                    _log.warning(
                        "tavily search failed",
                        error=error.message,
                        retryable=error.retryable,
                        attempts=attempt,
                    )
                    raise error from None
                _log.warning(
                    "tavily search failed; retrying",
                    error=error.message,
                    attempt=attempt,
                    max_attempts=self.max_attempts,
                    delay=round(wait, 3),
                )
                await asyncio.sleep(wait)
                attempt += 1

    def classify(self, exc: Exception, seen: dict[str, Any], errors: Any) -> _Failure:
        """Turn a client exception into a ``DataSourceError`` (retryable or not);
        ``seen`` holds the last response's status and ``retry-after``, ``errors`` is
        the ``tavily.errors`` module."""
        import httpx

        status: int | None = seen.get("status")
        retry_after = _retry_after(seen.get("retry_after"))
        detail = self.detail(str(exc))
        suffix = f": {detail}" if detail else ""

        def fail(message: str, *, retryable: bool) -> _Failure:
            error = DataSourceError(message, source=NAME, retryable=retryable)
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

    def detail(self, text: str) -> str:
        """A server-supplied message, cleaned, capped and without the key."""
        key = self.key.reveal()
        if key:
            text = text.replace(key, "***")
        return sanitize(text, 200)
