"""Helpers for the reply schemas sent to Claude."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

__all__ = ["keep_first"]


def keep_first(limit: int) -> Any:
    """A validator keeping the first ``limit`` items of a list.

    Put it after ``Field(max_length=limit)`` in ``Annotated``: the schema sent to Claude
    says ``maxItems``, and an answer with a few items too many keeps the first ones
    instead of failing (and costing a retry)::

        facts: Annotated[list[Fact], Field(max_length=8), keep_first(8)]
    """

    def cut(value: Any) -> Any:
        return value[:limit] if isinstance(value, list) else value

    return BeforeValidator(cut)
