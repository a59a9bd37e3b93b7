"""The small models the apps share, defined once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..sources import CompanyIndex
from .files import utc_now

__all__ = ["LANGUAGES", "IndexLoader", "Language", "Source"]

Language = Literal["en", "ja"]
"""A report's, an answer's or a progress line's language: English or Japanese."""
LANGUAGES: Final[tuple[Language, ...]] = ("en", "ja")
"""Every ``Language``, in the order the docs list them."""
IndexLoader = Callable[[], Awaitable[CompanyIndex]]
"""Loads the company index an app's graph resolves names with, when the graph is first
built (the assistant's, shared by the Q&A and report apps)."""


class Source(BaseModel):
    """Something an app retrieved and may cite: what every app's source has.

    An app whose sources carry more subclasses it: a company report's
    (``research_fsm.reports.ReportSource``: its URL, the agent that retrieved it, the
    bundled data set) and a deep-research session's (``research_fsm.deep.DeepSource``:
    its ``S#`` id, where it is, the text retrieved). Saved under the same keys as
    before the apps shared it."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    title: str
    """Human-readable title (the page's or document's)."""
    retrieved_at: str = Field(default_factory=utc_now)
    """When it was retrieved (ISO-8601 UTC)."""
