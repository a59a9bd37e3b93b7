"""Keeping a state loadable from JSON: the checks where values enter a state.

A state is saved as JSON and validated back into its model when loaded. Containers
in an untyped field nested deeper than ``MAX_NESTING`` could not be saved, so they
are refused as they come in; a state dumped by alias is read back under the keys
validation reads. (What else JSON would bring back changed is refused by the
stores' codec at save.)
"""

from __future__ import annotations

import functools

from pydantic import BaseModel

from .store import MAX_NESTING

__all__ = ["nesting_exceeds", "serialization_renames"]

_NESTED = (list, tuple, dict, set, frozenset)


def nesting_exceeds(value: object, limit: int = MAX_NESTING) -> bool:
    """Whether lists, dicts, tuples and sets in ``value`` nest deeper than ``limit``
    (walked without recursion; models are walked by their own fields' checks)."""
    if not isinstance(value, _NESTED):
        return False
    stack: list[
        tuple[
            list[object]
            | tuple[object, ...]
            | dict[object, object]
            | set[object]
            | frozenset[object],
            int,
        ]
    ] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, _NESTED))
    return False


@functools.cache
def serialization_renames(model: type[BaseModel]) -> dict[str, str]:
    """Keys a dump by alias writes that validation does not read, mapped to the
    field names: fields with a ``serialization_alias`` of their own."""
    renames: dict[str, str] = {}
    for name, info in model.model_fields.items():
        read_as = info.validation_alias if isinstance(info.validation_alias, str) else None
        read_as = read_as or (info.alias if isinstance(info.alias, str) else None) or name
        written = info.serialization_alias
        if isinstance(written, str) and written != read_as:
            renames[written] = read_as
    return renames
