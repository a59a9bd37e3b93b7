"""Choose a data source by name or from the environment."""

from __future__ import annotations

import os
from typing import Final

from .._logging import get_logger
from ._base import DataSource
from ._directory import DirectorySource
from ._mock import MockDataSource
from ._tavily import TAVILY_KEY_ENV, TavilySource

_log = get_logger(__name__)

DATA_SOURCE_ENV: Final = "RESEARCH_DATA_SOURCE"
"""Environment variable read when no kind is given."""

DATA_SOURCE_KINDS: Final[tuple[str, ...]] = ("auto", "directory", "mock", "tavily")
"""Accepted values of ``kind`` and of ``RESEARCH_DATA_SOURCE``."""

DEFAULT_KIND: Final = "auto"
"""Kind used when neither an argument nor the environment chooses one."""


def _tavily_key() -> str:
    return os.environ.get(TAVILY_KEY_ENV, "").strip()


def create_data_source(kind: str | None = None) -> DataSource:
    """Create the data source ``kind``: "mock", "directory", "tavily" or "auto".

    ``None`` reads ``RESEARCH_DATA_SOURCE`` (default "auto"); the value is
    case-insensitive. "auto" is Tavily web search when ``TAVILY_API_KEY`` is set,
    else the offline directory; the choice and its reason are logged at info level.

    Raises:
        ValueError: for an unknown kind, or for "tavily" without ``TAVILY_API_KEY``.
    """
    chosen = kind if kind is not None else os.environ.get(DATA_SOURCE_ENV, "")
    chosen = chosen.strip().lower() or DEFAULT_KIND
    if chosen not in DATA_SOURCE_KINDS:
        origin = "data source" if kind is not None else f"{DATA_SOURCE_ENV} value"
        allowed = ", ".join(repr(item) for item in DATA_SOURCE_KINDS)
        raise ValueError(f"unknown {origin} {chosen!r}; allowed values: {allowed}")
    source: DataSource
    if chosen == "tavily":
        if not _tavily_key():
            raise ValueError(f"data source 'tavily' needs an API key: set {TAVILY_KEY_ENV}")
        source, reason = TavilySource(), f"{TAVILY_KEY_ENV} is set"
    elif chosen == "auto":
        if _tavily_key():
            source, reason = TavilySource(), f"{TAVILY_KEY_ENV} is set"
        else:
            source = DirectorySource()
            reason = f"{TAVILY_KEY_ENV} is not set; using the offline company directory"
    else:
        source = MockDataSource() if chosen == "mock" else DirectorySource()
        reason = "requested"
    _log.info("data source selected", kind=chosen, source=source.name, reason=reason)
    return source
