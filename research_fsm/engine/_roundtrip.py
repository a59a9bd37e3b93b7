"""Values JSON would bring back changed: found at save time, so nothing is lost silently.

A state is saved as JSON and validated back into its model when loaded. Typed
fields come back equal (pydantic parses them), except floats that are NaN or
infinite (JSON has no such numbers). In untyped parts (``Any``, ``object``, a bare
``dict``/``list``) only JSON's own types come back as they were: a datetime
would come back a string, a set or tuple a list, a dict's int keys strings.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from typing import Any

from pydantic import BaseModel

__all__ = [
    "MAX_NESTING",
    "changed_by_json",
    "loose_fields",
    "nesting_exceeds",
    "serialization_renames",
]

_JSON_SCALARS = (str, int, bool, type(None))
_NESTED = (list, tuple, dict, set, frozenset)

MAX_NESTING = 200
"""Containers nested deeper than this in an untyped field are refused: JSON encoders
(pydantic's stops at about 255) and Python's own recursion cannot follow them."""


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists, dicts, tuples and sets in ``value`` nest deeper than ``limit``
    (walked without recursion; models are walked by their own fields' checks)."""
    if not isinstance(value, _NESTED):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, _NESTED))
    return False


@functools.cache
def loose_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` whose annotation lets any value in somewhere."""
    return frozenset(
        name for name, info in model.model_fields.items() if _is_loose(info.annotation)
    )


def _is_loose(annotation: Any) -> bool:
    if annotation is Any or annotation is object or annotation in (dict, list):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return False
    if isinstance(annotation, typing.TypeVar):
        return True
    return any(_is_loose(arg) for arg in typing.get_args(annotation) if _is_type(arg))


def _is_type(arg: Any) -> bool:
    return isinstance(arg, (type, types.GenericAlias, types.UnionType)) or (
        arg is Any or typing.get_origin(arg) is not None
    )


def changed_by_json(state: BaseModel, fields: dict[str, Any] | None) -> tuple[str, str] | None:
    """The dotted path and reason of the first value in ``fields`` of ``state`` (all
    fields if ``None``; a set of indices picks items of a list) that JSON would
    bring back changed, or ``None``."""
    loose = loose_fields(type(state))
    for name in fields if fields is not None else type(state).model_fields:
        value = getattr(state, name)
        picked = fields.get(name) if fields is not None else True
        if isinstance(picked, set) and isinstance(value, list):
            items = [(f"{name}[{i}]", value[i]) for i in sorted(picked)]
        else:
            items = [(name, value)]
        for path, item in items:
            found = _walk(item, path, name in loose, 1)
            if found is not None:
                return found
    return None


def _walk(value: Any, path: str, loose: bool, depth: int) -> tuple[str, str] | None:
    if isinstance(value, float):
        if not math.isfinite(value):
            return path, f"{value!r} is not a JSON number: it would not load back"
        return None
    if isinstance(value, _JSON_SCALARS):
        return None
    if isinstance(value, BaseModel):
        if loose:
            return path, (
                f"{type(value).__name__} in an untyped field would load back as a dict: "
                "give the field the model's type"
            )
        nested = changed_by_json(value, None)
        return None if nested is None else (f"{path}.{nested[0]}", nested[1])
    if depth > MAX_NESTING and isinstance(value, (*_NESTED, BaseModel)):
        return path, f"nested more than {MAX_NESTING} levels deep: JSON cannot save it"
    if isinstance(value, dict):
        for key, item in value.items():
            if loose and not isinstance(key, str):
                return path, f"dict key {key!r} ({type(key).__name__}) would load back as a str"
            found = _walk(item, f"{path}.{key}", loose, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, list) or (not loose and isinstance(value, (tuple, set, frozenset))):
        for index, item in enumerate(value):
            found = _walk(item, f"{path}[{index}]", loose, depth + 1)
            if found is not None:
                return found
        return None
    if loose:
        return path, (
            f"{type(value).__name__} in an untyped field would load back as a "
            "different type: give the field a type, or convert the value"
        )
    return None


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
