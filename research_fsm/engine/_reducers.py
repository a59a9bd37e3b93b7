"""Merge rules for state fields, chosen with ``Annotated[type, reducer]``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Reducer", "Replace", "add", "append", "replace"]

T = TypeVar("T")

Reducer = Callable[[Any, Any], Any]
"""``reducer(old, new) -> merged``; any two-argument callable works."""


@dataclass(frozen=True, slots=True)
class Replace(Generic[T]):
    """Wrap an update value to overwrite the field, bypassing its reducer.

    ``{"messages": Replace(recent)}`` trims an ``append`` field.
    """

    value: T
    """The new value of the field."""


def replace(old: object, new: T) -> T:
    """Last write wins (the default for fields without a reducer)."""
    return new


def append(old: Sequence[T] | None, new: Sequence[T] | T | None) -> list[T]:
    """Concatenate lists; a single non-list item is appended."""
    base: list[T] = list(old) if old else []
    if new is None:
        return base
    if isinstance(new, (list, tuple)):
        return base + list(new)
    return [*base, new]  # type: ignore[list-item]


def add(old: Any, new: Any) -> Any:
    """Numeric or mapping sum: numbers add up, dicts add up key by key."""
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = add(merged[key], value) if key in merged else value
        return merged
    if old is None:
        return new
    if new is None:
        return old
    return old + new
