"""Choose a data source by name or from the environment."""

from __future__ import annotations

import os
from typing import Final

import structlog

from ._base import DataSource
from ._directory import DirectorySource
from ._mock import MockDataSource

_log = structlog.get_logger(__name__)

DATA_SOURCE_ENV: Final = "RESEARCH_DATA_SOURCE"
"""Environment variable read when no kind is given."""

DATA_SOURCE_KINDS: Final[tuple[str, ...]] = ("auto", "directory", "mock", "tavily")
"""Accepted values of ``kind`` and of ``RESEARCH_DATA_SOURCE``."""

DEFAULT_KIND: Final = "auto"
"""Kind used when neither an argument nor the environment chooses one."""


def _create_tavily() -> DataSource:
    """Hook for the Tavily web-search source (a later issue)."""
    # TODO: build TavilyDataSource here; "auto" should then prefer it when
    # TAVILY_API_KEY is set and fall back to the directory otherwise.
    raise NotImplementedError("the Tavily data source is not implemented yet")


def create_data_source(kind: str | None = None) -> DataSource:
    """Create the data source ``kind``: "mock", "directory", "tavily" or "auto".

    ``None`` reads ``RESEARCH_DATA_SOURCE`` (default "auto"); the value is
    case-insensitive. "auto" is the offline directory for now.

    Raises:
        ValueError: for an unknown kind, or for "tavily", which is not available yet.
    """
    chosen = kind if kind is not None else os.environ.get(DATA_SOURCE_ENV, "")
    chosen = chosen.strip().lower() or DEFAULT_KIND
    if chosen not in DATA_SOURCE_KINDS:
        origin = "data source" if kind is not None else f"{DATA_SOURCE_ENV} value"
        allowed = ", ".join(repr(item) for item in DATA_SOURCE_KINDS)
        raise ValueError(f"unknown {origin} {chosen!r}; allowed values: {allowed}")
    if chosen == "tavily":
        try:
            return _create_tavily()
        except NotImplementedError:
            raise ValueError("data source 'tavily' is not available yet") from None
    source: DataSource = MockDataSource() if chosen == "mock" else DirectorySource()
    _log.info("data source selected", kind=chosen, source=source.name)
    return source
