"""A node's own copy of the state: what it changes in place stays its own.

Every node is handed a copy of the state whose mutable parts (lists, dicts, sets,
nested models) are new objects, so ``state.items.append(x)`` or
``state.inner.a = 5`` inside a node never reaches the checkpoint the run holds,
the caller's result or a memory store's history. Only what the node returns
changes the state (``_state.StateSchema.apply``); a node that returns the very
object it was handed returns its changes (``changes_of``).

The copy is planned once per model from the field annotations: immutable values
(strings, numbers, tuples of them, frozen models of them, enums...) are shared,
a ``list[str]`` is one C-level ``list(...)``, a model is copied field by field by
its own plan. Values of untyped parts (``Any``, ``object``, a bare ``list``) are
copied by their runtime type. Objects that are not plain data (clients, locks,
queues, events, sockets, arrays...) are shared, as the caller gave them: copying
them would break them or split what a node does with them from the caller's.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import datetime
import decimal
import enum
import pathlib
import types
import typing
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel

__all__ = ["fresh_copy", "model_copier", "unchanged"]

Copier = Callable[[Any], Any]
"""``copier(value) -> value``: a copy whose mutable parts are new objects."""

_IMMUTABLE: frozenset[type] = frozenset(
    {
        str,
        int,
        float,
        bool,
        bytes,
        complex,
        type(None),
        datetime.datetime,
        datetime.date,
        datetime.time,
        datetime.timedelta,
        decimal.Decimal,
        uuid.UUID,
        pathlib.PurePath,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.Path,
        pathlib.PosixPath,
        range,
        type(Ellipsis),
    }
)

_UNIONS = (typing.Union, types.UnionType)

_DATA = (list, dict, set, bytearray, collections.deque)
"""Mutable plain-data containers (subclasses included: ``OrderedDict``, ``defaultdict``...)."""


def fresh_copy(value: Any) -> Any:
    """Copy ``value`` by its runtime type (untyped fields): new lists, dicts, sets
    and models all the way down; immutable values shared."""
    kind = type(value)
    if kind in _IMMUTABLE or isinstance(value, enum.Enum):
        return value
    if kind is list:
        return [fresh_copy(item) for item in value]
    if kind is dict:
        return {key: fresh_copy(item) for key, item in value.items()}
    if kind is tuple:
        items = tuple(fresh_copy(item) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is set:
        return set(value)
    if kind is frozenset:
        return value
    if isinstance(value, BaseModel):
        return model_copier(kind)(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _copy_dataclass(value)
    if isinstance(value, _DATA):
        try:
            return copy.deepcopy(value)
        except Exception:  # it holds something that cannot be copied (a lock, a client)
            return copy.copy(value)
    return value  # not plain data: shared (a client, a lock, a queue is the caller's own)


def _copy_dataclass(value: Any) -> Any:
    """A dataclass instance with each field copied by ``fresh_copy`` (frozen ones too)."""
    try:
        new = copy.copy(value)
    except Exception:  # a class that refuses copying: shared as given
        return value
    for item in dataclasses.fields(value):
        old = getattr(value, item.name, None)
        copied = fresh_copy(old)
        if copied is not old:
            object.__setattr__(new, item.name, copied)
    return new


def _list_of(item: Copier | None) -> Copier:
    if item is None:
        return list
    return lambda value: list(map(item, value)) if type(value) is list else fresh_copy(value)


def _dict_of(item: Copier | None) -> Copier:
    if item is None:
        return dict
    return lambda value: (
        {k: item(v) for k, v in value.items()} if type(value) is dict else fresh_copy(value)
    )


_planning: set[type[BaseModel]] = set()  # models whose plan is being made (recursive models)


def _typed_model(model: type[BaseModel]) -> Copier | None:
    if model.model_config.get("frozen") and model not in _planning:
        _planning.add(model)
        try:
            if all(_plan(info.annotation) is None for info in model.model_fields.values()):
                return None
        finally:
            _planning.discard(model)

    resolved: list[Callable[[BaseModel], BaseModel]] = []  # planned at first use (recursion)

    def copy_model(value: Any) -> Any:
        if type(value) is model:
            if not resolved:
                resolved.append(model_copier(model))
            return resolved[0](value)
        return fresh_copy(value)  # a subclass, or a value of another type

    return copy_model


def _plan(annotation: Any) -> Copier | None:
    """The copier for values of ``annotation``; ``None``: its values are immutable."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _plan(typing.get_args(annotation)[0])
    if origin is Literal:
        return None
    if isinstance(annotation, type) and origin is None:
        if annotation in _IMMUTABLE or issubclass(annotation, enum.Enum):
            return None
        if issubclass(annotation, BaseModel):
            return _typed_model(annotation)
        if annotation is frozenset:
            return None
        return fresh_copy
    args = typing.get_args(annotation)
    if origin in _UNIONS:
        return None if all(_plan(arg) is None for arg in args) else fresh_copy
    if origin in (tuple, frozenset):
        items = [a for a in args if a is not Ellipsis]
        return None if all(_plan(a) is None for a in items) else fresh_copy
    if origin is list and len(args) == 1:
        return _list_of(_plan(args[0]))
    if origin is dict and len(args) == 2:
        return _dict_of(_plan(args[1]))
    if origin is set:
        return lambda value: set(value) if type(value) is set else fresh_copy(value)
    return fresh_copy


_COPIERS: dict[type[BaseModel], Callable[[BaseModel], BaseModel]] = {}

# A model instance's slots, set directly (what ``object.__setattr__`` would reach, faster).
_new = object.__new__
_set_dict = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def model_copier(model: type[BaseModel]) -> Callable[[BaseModel], BaseModel]:
    """The copier of instances of exactly ``model`` (planned once per model)."""
    copier = _COPIERS.get(model)
    if copier is None:
        copier = _COPIERS[model] = _plan_model(model)
    return copier


def _plan_model(model: type[BaseModel]) -> Callable[[BaseModel], BaseModel]:
    plans = {name: _plan(info.annotation) for name, info in model.model_fields.items()}
    copied = tuple((name, plan) for name, plan in plans.items() if plan is not None)

    def copy_instance(value: BaseModel) -> BaseModel:
        new = _new(model)
        values = value.__dict__.copy()
        for name, plan in copied:
            if name in values:
                values[name] = plan(values[name])
        _set_dict(new, "__dict__", values)
        _set_fields_set(new, set(value.__pydantic_fields_set__))
        extra = value.__pydantic_extra__
        _set_extra(new, None if extra is None else fresh_copy(extra))
        private = value.__pydantic_private__
        _set_private(new, None if private is None else dict(private))
        return new

    return copy_instance


def unchanged(copy: BaseModel, state: BaseModel) -> bool:
    """Whether ``copy`` of ``state`` still holds the same values (its fields, extra and
    private values equal, the same fields set); ``False`` when comparing raises."""
    try:
        return bool(
            copy.__dict__ == state.__dict__
            and copy.__pydantic_fields_set__ == state.__pydantic_fields_set__
            and copy.__pydantic_extra__ == state.__pydantic_extra__
            and copy.__pydantic_private__ == state.__pydantic_private__
        )
    except Exception:  # a value whose == raises or gives no truth value (an array)
        return False
