"""The small models the apps share, defined once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Literal

from ..sources import CompanyIndex

__all__ = ["LANGUAGES", "IndexLoader", "Language"]

Language = Literal["en", "ja"]
"""A report's, an answer's or a progress line's language: English or Japanese."""
LANGUAGES: Final[tuple[Language, ...]] = ("en", "ja")
"""Every ``Language``, in the order the docs list them."""
IndexLoader = Callable[[], Awaitable[CompanyIndex]]
"""Loads the company index an app's graph resolves names with, when the graph is first
built (the assistant's, shared by the Q&A and report apps)."""
