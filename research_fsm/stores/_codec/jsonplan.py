"""A state model written as JSON that loads back equal, nested models included.

A state is read back with ``model_validate(data, by_alias=True, by_name=True)``
(the engine's ``_state.coerce``, its own fields' ``serialization_alias`` keys renamed first).
Worked out once per state model (``json_plan``), two things would still come back
changed, and are dealt with at save:

* a nested model's field written under a key validation does not read (its own
  ``serialization_alias``, an ``AliasGenerator``'s, one outside its
  ``AliasChoices``): for a state model with one anywhere, nested models are
  written by field name (``by_name`` reads them), the state's own fields still
  under the keys they always had;
* a union JSON does not tell apart (two models without a discriminator,
  ``str | datetime``), a custom serializer, a type not known to load back equal:
  such a field, when a save writes it, is validated back from what is written
  and compared; the first value that differs is refused, naming its path. (Not
  a state field the state model's own "before" validators see first: loading
  runs them, so its type alone cannot tell.)

Values are checked one by one where the type cannot tell (``changed_by_json``): in
untyped parts (``Any``, ``object``, a bare ``dict``/``list``) only JSON's own types
come back as they were (a datetime would come back a string, a set or tuple a list,
a dict's int keys strings), and a NaN or infinite float does not come back at all
(JSON has no such numbers).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import enum
import functools
import json
import math
import pathlib
import types
import typing
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    Discriminator,
    PlainSerializer,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
    WrapSerializer,
)
from pydantic.fields import FieldInfo

from research_fsm.engine import StateSerializationError
from research_fsm.engine.store import MAX_NESTING, loose_fields

from .serialize import find_unserializable

__all__ = ["JsonPlan", "changed_by_json", "first_difference", "json_plan", "model_json"]

_KNOWN = {
    str,
    int,
    float,
    bool,
    bytes,
    type(None),
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    uuid.UUID,
    pathlib.Path,
}
_LOOSE = {Any, object, list, dict, tuple, set, frozenset}  # checked value by value
_CONTAINERS = {list, tuple, set, frozenset, dict}
_UNAMBIGUOUS = {str, int, float, bool}  # a union of just these (and Literals) loads back
_UNIONS = {typing.Union, types.UnionType}
_SERIALIZERS = (PlainSerializer, WrapSerializer)
_JSON_SCALARS = (str, int, bool, type(None))
_NESTED = (list, tuple, dict, set, frozenset)


@dataclass(frozen=True, slots=True)
class _Checked:
    """A field validated back from what a save writes."""

    name: str
    key: str  # written under
    whole: TypeAdapter[Any]
    item: TypeAdapter[Any] | None  # a list's items (for items appended)

    def differs(
        self, state: BaseModel, data: dict[str, Any], include: dict[str, Any] | None
    ) -> tuple[str, str] | None:
        if self.key not in data:  # excluded from serialisation: not saved, by design
            return None
        value, written = getattr(state, self.name), data[self.key]
        picked = include.get(self.name) if include is not None else True
        if isinstance(picked, set) and isinstance(value, list):  # items appended
            indices = sorted(picked)
            if self.item is not None:
                items = zip(indices, written, strict=True)
                pairs = [(f"{self.name}[{i}]", value[i], w, self.item) for i, w in items]
            else:
                pairs = [(self.name, [value[i] for i in indices], written, self.whole)]
        else:
            pairs = [(self.name, value, written, self.whole)]
        for path, old, raw, adapter in pairs:
            try:
                new = adapter.validate_python(raw, by_alias=True, by_name=True)
            except ValidationError as exc:
                return path, f"what would be written does not load back: {_first_error(exc)}"
            found = first_difference(old, new, path)
            if found is not None:
                return found
        return None


@dataclass(frozen=True, slots=True)
class JsonPlan:
    """How a state model is written (see the module docstring)."""

    by_name: bool  # nested models by field name
    keys: dict[str, str]  # the state's fields written under another key
    checked: tuple[_Checked, ...]


@functools.cache
def json_plan(model: type[BaseModel]) -> JsonPlan:
    """The plan of ``model`` (cached: worked out once per state model)."""
    by_name = False
    checked: list[_Checked] = []
    keys: dict[str, str] = {}
    serialized = _serialized_fields(model)
    unsure = _reshaped_fields(model)  # loading runs code of the model's own on them
    for name, info in model.model_fields.items():
        written = info.serialization_alias or info.alias
        if isinstance(written, str):
            keys[name] = written
        audit = _Audit()
        audit.field(info)
        by_name = by_name or audit.renamed
        if not (audit.checked or {name, "*"} & serialized) or {name, "*"} & unsure:
            continue
        whole, item = _adapter(model, _annotated(info)), _adapter(model, _item_type(info))
        if whole is not None:
            checked.append(_Checked(name, keys.get(name, name), whole, item))
    return JsonPlan(by_name, keys, tuple(checked))


def model_json(state: BaseModel, include: dict[str, Any] | None, node: str | None) -> str:
    """The JSON of ``state`` (or of the fields and list items in ``include``), keyed
    as the log format reads it; ``StateSerializationError`` naming the first value
    that would not load back equal."""
    changed = changed_by_json(state, include)
    if changed is not None:
        raise StateSerializationError(node, *changed)
    plan = json_plan(type(state))
    checked = [c for c in plan.checked if include is None or c.name in include]
    try:
        if not plan.by_name and not checked:  # the common case: one call
            # ``model_dump_json``'s own call, without its wrapper's cost
            serializer = state.__pydantic_serializer__
            return serializer.to_json(state, by_alias=True, include=include).decode()
        data = state.model_dump(mode="json", by_alias=not plan.by_name, include=include)
        if plan.by_name:
            data = {plan.keys.get(name, name): value for name, value in data.items()}
        for field in checked:
            differs = field.differs(state, data, include)
            if differs is not None:
                raise StateSerializationError(node, *differs)
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except StateSerializationError:
        raise
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(state, "state")
        raise StateSerializationError(node, path, detail or str(exc)) from None


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


def first_difference(old: Any, new: Any, path: str) -> tuple[str, str] | None:
    """The path of the first value that differs between ``old`` and ``new``, and how."""
    if type(old) is not type(new):
        return path, f"{type(old).__name__} would load back as {type(new).__name__}"
    found: tuple[str, str] | None = None
    if isinstance(old, BaseModel):
        for name in type(old).model_fields:
            found = found or first_difference(
                getattr(old, name), getattr(new, name), f"{path}.{name}"
            )
    elif isinstance(old, (list, tuple)) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            found = found or first_difference(a, b, f"{path}[{index}]")
    elif isinstance(old, dict) and old.keys() == new.keys():
        for key, item in old.items():
            found = found or first_difference(item, new[key], f"{path}.{key}")
    if found is None and old != new:
        shown, back = f"{old!r:.80}", f"{new!r:.80}"
        if shown == back:  # a repr that hides the value (a secret)
            return path, f"{type(old).__name__} would load back changed"
        found = path, f"{shown} would load back as {back}"
    return found


class _Audit:
    """Walks a field's type: ``renamed`` if a nested model's key would not be read
    back, ``checked`` if a value could load back changed."""

    def __init__(self) -> None:
        self.renamed = False
        self.checked = False
        self._seen: set[type[BaseModel]] = set()

    def field(self, info: FieldInfo) -> None:
        if any(isinstance(meta, _SERIALIZERS) for meta in info.metadata):
            self.checked = True
        self.annotation(info.annotation, discriminated=info.discriminator is not None)

    def annotation(self, annotation: Any, discriminated: bool = False) -> None:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if _one_of(annotation, _LOOSE) or isinstance(annotation, (typing.TypeVar, str)):
            return
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self._model(annotation)
        elif origin is typing.Annotated:
            self.checked = self.checked or any(isinstance(m, _SERIALIZERS) for m in args[1:])
            tagged = discriminated or any(map(_discriminates, args[1:]))
            self.annotation(args[0], tagged)
        elif origin in _UNIONS:
            members = [arg for arg in args if arg is not type(None)]
            if len(members) > 1 and not discriminated and not all(map(_unambiguous, members)):
                self.checked = True
            for member in members:
                self.annotation(member)
        elif origin in _CONTAINERS:
            for arg in args:
                if arg is not Ellipsis:
                    self.annotation(arg)
        elif not (
            origin is typing.Literal
            or _one_of(annotation, _KNOWN)
            or (isinstance(annotation, type) and issubclass(annotation, enum.Enum))
        ):
            self.checked = True  # not known to load back equal: see for each value

    def _model(self, model: type[BaseModel]) -> None:
        if model in self._seen:
            return
        self._seen.add(model)
        if _serialized_fields(model) or model.__pydantic_decorators__.model_serializers:
            self.checked = True
        for name, info in model.model_fields.items():
            self.renamed = self.renamed or not _read_back(name, info)
            self.field(info)


def _reshaped_fields(model: type[BaseModel]) -> set[str]:
    """The fields of ``model`` its own validators see before their type does ("*": all):
    what loads back cannot be told by validating the field's type alone."""
    decorators = model.__pydantic_decorators__
    if any(d.info.mode != "after" for d in decorators.model_validators.values()):
        return {"*"}
    validators = decorators.field_validators.values()
    return {name for d in validators if d.info.mode != "after" for name in d.info.fields}


def _serialized_fields(model: type[BaseModel]) -> set[str]:
    """The fields of ``model`` a ``field_serializer`` writes ("*": all)."""
    decorators = model.__pydantic_decorators__.field_serializers.values()
    return {name for decorator in decorators for name in decorator.info.fields}


def _read_back(name: str, info: FieldInfo) -> bool:
    """Whether the key a field is written under by alias is one validation reads."""
    written = info.serialization_alias or name
    readable = {name}
    alias = info.validation_alias if info.validation_alias is not None else info.alias
    choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
    for choice in choices:
        key = choice.path[0] if isinstance(choice, AliasPath) and len(choice.path) == 1 else choice
        if isinstance(key, str):
            readable.add(key)
    return written in readable


def _discriminates(meta: Any) -> bool:
    return isinstance(meta, Discriminator) or getattr(meta, "discriminator", None) is not None


def _unambiguous(member: Any) -> bool:
    return _one_of(member, _UNAMBIGUOUS) or typing.get_origin(member) is typing.Literal


def _one_of(annotation: Any, group: set[Any]) -> bool:
    try:
        return annotation in group
    except TypeError:  # unhashable metadata in an ``Annotated``
        return False


def _annotated(info: FieldInfo) -> Any:
    """The field's type with its constraints, serializers and discriminator."""
    extra: list[Any] = list(info.metadata)
    if info.discriminator is not None:
        tag = info.discriminator
        extra.append(tag if isinstance(tag, Discriminator) else Discriminator(tag))
    return typing.Annotated[(info.annotation, *extra)] if extra else info.annotation


def _item_type(info: FieldInfo) -> Any:
    """The type of a list field's items (``None`` if it is not a list)."""
    annotation = info.annotation
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is list and typing.get_args(annotation):
        return typing.get_args(annotation)[0]
    return None


def _adapter(model: type[BaseModel], annotation: Any) -> TypeAdapter[Any] | None:
    """A validator of ``annotation`` as ``model`` validates it (``None``: none can be made)."""
    if annotation is None:
        return None
    try:
        if model.model_config.get("arbitrary_types_allowed"):
            config = ConfigDict(arbitrary_types_allowed=True)
            with contextlib.suppress(PydanticUserError):  # a type with a config of its own
                return TypeAdapter(annotation, config=config)
        return TypeAdapter(annotation)
    except Exception:  # a type pydantic cannot validate alone: not checked
        return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])
