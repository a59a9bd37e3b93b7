"""The small models the apps share, defined once."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["LANGUAGES", "Language"]

Language = Literal["en", "ja"]
"""A report's, an answer's or a progress line's language: English or Japanese."""
LANGUAGES: Final[tuple[Language, ...]] = ("en", "ja")
"""Every ``Language``, in the order the docs list them."""
