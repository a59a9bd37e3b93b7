"""How updates merge into the state: reducers and per-field validation."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Final, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from ._errors import GraphValidationError
from ._errors import InvalidUpdate as BadUpdate
from ._fresh import model_copier, unchanged
from ._reducers import Replace, add, append, replace
from ._roundtrip import nesting_exceeds, serialization_renames
from .store import MAX_NESTING, loose_fields

__all__ = ["StateSchema"]


# Validators per (model, field), shared by every graph over the same model: building
# one costs tens of microseconds, so a graph rebuilt after a restart reuses them.
_VALIDATORS: dict[tuple[type[BaseModel], str], Callable[[object], object]] = {}


@dataclass(slots=True)
class _Field:
    model: type[BaseModel]
    name: str
    reducer: Callable[[Any, Any], object]
    annotation: Any  # a type form, as pydantic reads it
    validator: Callable[[object], object] | None = None
    exact: frozenset[type] = frozenset()
    """Types whose values a ``replace`` field takes as they are: what validating them
    would give back unchanged (``_exact_types``)."""

    def validate(self, value: object) -> Any:  # what the field's type makes of it
        if self.validator is None:
            key = (self.model, self.name)
            if key not in _VALIDATORS:
                _VALIDATORS[key] = TypeAdapter(self.annotation).validator.validate_python
            self.validator = _VALIDATORS[key]
        return self.validator(value)


_SELF_VALID = (str, int, float, bool, bytes)
"""Plain types whose exact instances pydantic's validator of that type returns as given."""


def _exact_types(annotation: Any) -> frozenset[type]:
    """The exact types whose values validating against ``annotation`` gives back
    unchanged: ``str`` for ``str``, ``str`` and ``None`` for ``str | None``...; empty
    for anything else (constraints, literals, containers, models: validated)."""
    if annotation is None or annotation is type(None):
        return frozenset({type(None)})
    if isinstance(annotation, type) and annotation in _SELF_VALID:
        return frozenset({annotation})
    if get_origin(annotation) in (Union, UnionType):
        parts = [_exact_types(arg) for arg in get_args(annotation)]
        return frozenset().union(*parts) if all(parts) else frozenset()
    return frozenset()


def _check_reducer(model: type[BaseModel], name: str, reducer: Callable[..., Any]) -> None:
    """``GraphValidationError`` when ``reducer`` cannot be called as ``reducer(old, new)``."""
    try:
        signature = inspect.signature(reducer)
    except (TypeError, ValueError):
        return  # a builtin whose signature Python cannot tell: trusted
    try:
        signature.bind(None, None)
    except TypeError:
        shown = getattr(reducer, "__name__", type(reducer).__name__)
        raise GraphValidationError(
            [
                f"field `{name}` of `{model.__name__}`: its reducer `{shown}{signature}` must "
                "take two arguments, `reducer(old, new) -> merged`"
            ]
        ) from None


def _with_changes(state: BaseModel, changes: dict[str, object]) -> BaseModel:
    """``state.model_copy(update=changes)`` without its generic overhead (same result)."""
    new = object.__new__(type(state))
    values = state.__dict__.copy()
    values.update(changes)
    object.__setattr__(new, "__dict__", values)
    fields_set = state.__pydantic_fields_set__
    if not changes.keys() <= fields_set:  # else share it: a set costs ~700 bytes a copy
        fields_set = fields_set | changes.keys()
    object.__setattr__(new, "__pydantic_fields_set__", fields_set)
    extra = state.__pydantic_extra__
    object.__setattr__(new, "__pydantic_extra__", None if extra is None else dict(extra))
    private = state.__pydantic_private__
    object.__setattr__(new, "__pydantic_private__", None if private is None else dict(private))
    return new


_NO_GAIN: Final[object] = object()
"""``_gained``: the new value is no sum of the old one and a gain."""


def _gained(old: object, new: object) -> object:
    """``gain`` such that ``add(old, gain) == new``, or ``_NO_GAIN``."""
    if isinstance(old, bool) or isinstance(new, bool):
        return _NO_GAIN
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return new - old
    if type(old) is type(new) and isinstance(old, (str, list, tuple)):
        assert isinstance(new, (str, list, tuple))
        return new[len(old) :] if new[: len(old)] == old else _NO_GAIN
    if isinstance(old, dict) and isinstance(new, dict):
        if not old.keys() <= new.keys():
            return _NO_GAIN
        gains = {}
        for key, value in new.items():
            if key not in old:
                gains[key] = value
            elif value != old[key]:
                gain = _gained(old[key], value)
                if gain is _NO_GAIN:
                    return _NO_GAIN
                gains[key] = gain
        return gains
    return _NO_GAIN


_EMPTY_TYPES = (list, dict, set, tuple, str, int, float)


def _empty(annotation: Any) -> Any:
    """The empty value of a field's type (``list[str]`` -> ``[]``), or ``_NO_GAIN``
    when it is not one of the builtin containers, strings or numbers."""
    origin = get_origin(annotation) or annotation
    if origin is Annotated:
        return _empty(get_args(annotation)[0])
    if isinstance(origin, type) and origin in _EMPTY_TYPES:
        return origin()
    return _NO_GAIN


class StateSchema:
    """The fields of a state model with their reducers (``replace`` by default)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.fields: dict[str, _Field] = {}
        for name, info in model.model_fields.items():
            reducer: Callable[[Any, Any], object] = replace
            metadata = []
            for item in info.metadata:
                if callable(item) and not isinstance(item, type) and reducer is replace:
                    reducer = item
                else:
                    metadata.append(item)
            annotation = Annotated[(info.annotation, *metadata)] if metadata else info.annotation
            if reducer not in (replace, append):
                _check_reducer(model, name, reducer)
            spec = self.fields[name] = _Field(model, name, reducer, annotation)
            if reducer is replace:
                spec.exact = _exact_types(annotation)
        # Fields whose first input goes through their reducer (``_reducible``).
        self._own_reducers = frozenset(
            name
            for name, spec in self.fields.items()
            if spec.reducer not in (replace, append, add)
            and _empty(model.model_fields[name].annotation) is not _NO_GAIN
        )
        # Fields whose values may nest without bound: their updates are checked for depth.
        self._loose = loose_fields(model)
        # A router's copy of a state, handed to the next ``fresh`` of that state.
        self._spare: tuple[BaseModel, BaseModel] | None = None
        # Keys accepted in a thread's first input: field names and their aliases.
        self._input_keys: set[str] | None = None
        if model.model_config.get("extra") != "allow":
            self._input_keys = set(self.fields)
            for info in model.model_fields.values():
                for alias in (info.alias, info.validation_alias):
                    if isinstance(alias, str):
                        self._input_keys.add(alias)

    def initial(self, data: Mapping[str, object] | BaseModel | None) -> BaseModel:
        """Validate the first input of a thread into a full state. A field with a
        reducer other than ``replace`` and ``append`` gets its input through the
        reducer, from the field's default (as LangGraph's channels start empty), so a
        first input is merged as every later update is; ``Replace(value)`` skips it."""
        if isinstance(data, self.model):
            return self._reduced(self.fresh(data), data.model_fields_set, dict(data))
        if isinstance(data, BaseModel):
            data = {k: getattr(data, k) for k in data.model_fields_set}
        given = data
        if isinstance(data, Mapping):
            data = {k: v.value if isinstance(v, Replace) else v for k, v in data.items()}
        if isinstance(data, Mapping) and self._input_keys is not None:
            unknown = [str(k) for k in data if k not in self._input_keys]
            if unknown:
                raise BadUpdate(
                    f"input has unknown field `{unknown[0]}` for `{self.model.__name__}`; "
                    f"fields are: {', '.join(self.fields)}"
                )
        if isinstance(data, Mapping):
            for key in self._loose.intersection(data):
                if nesting_exceeds(data[key]):
                    raise BadUpdate(
                        f"input field `{key}` is nested more than {MAX_NESTING} levels deep "
                        "(lists, dicts, tuples, sets): flatten it"
                    )
        reduced = None
        if self._own_reducers and isinstance(given, Mapping):
            reduced = self._reducible(given)
            if reduced and isinstance(data, Mapping):  # validated after the reducer merges them
                data = {k: v for k, v in data.items() if k not in reduced}
        try:
            state = self.model.model_validate(data or {})
        except ValidationError as exc:
            raise BadUpdate(f"input does not fit `{self.model.__name__}`: {exc}") from None
        if reduced:
            assert isinstance(given, Mapping)
            changes = {name: given[name] for name in reduced}
            return self.apply(_with_changes(state, reduced), changes, "input")
        return state

    def _reduced(self, state: BaseModel, names: Any, given: Mapping[str, Any]) -> BaseModel:
        """``state`` (a model given as input) with the fields ``names`` that have a
        reducer of their own merged through it (``_reducible``)."""
        empties = self._reducible({name: given[name] for name in names})
        if not empties:
            return state
        changes = {name: given[name] for name in empties}
        return self.apply(_with_changes(state, empties), changes, "input")

    def _reducible(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``given`` whose reducer is a function of its own, each with the
        empty value of its type to merge the given value into, as LangGraph starts a
        reducer's channel empty (``replace``, ``append`` and ``add`` would give the value
        itself, so they are left as validated; a ``Replace`` skips the reducer)."""
        empties: dict[str, Any] = {}
        own = self._own_reducers
        if not own:  # most models: nothing to look at
            return empties
        for name, value in given.items():
            if name in own and not isinstance(value, Replace):
                empties[name] = _empty(self.model.model_fields[name].annotation)
        return empties

    def fresh(self, state: BaseModel) -> BaseModel:
        """A copy of ``state`` for a node: its lists, dicts, sets and nested models
        are new objects, so changing them in place changes nothing else (``_fresh``).
        The copy a router was given of ``state`` is handed on, once, when it still
        equals ``state`` (``lend``): no one else holds it, so it is as fresh as a new one."""
        spare = self._spare
        if spare is not None and spare[0] is state:
            self._spare = None
            if unchanged(spare[1], state):
                return spare[1]
        return model_copier(type(state))(state)

    def lend(self, state: BaseModel, copy: BaseModel) -> None:
        """``copy``, a ``fresh`` copy of ``state`` given to a router that is done with
        it, may be the next ``fresh(state)`` if it is still equal to ``state`` then."""
        self._spare = (state, copy)

    def changes_of(self, before: BaseModel, after: BaseModel) -> dict[str, object]:
        """What a node changed in ``after``, its copy of ``before`` that it returned:
        the items added at the end of an ``append`` list, else the field's new value
        (a ``Replace`` for fields with a reducer)."""
        old_values, new_values = before.__dict__, after.__dict__
        changed: dict[str, object] = {}
        for name, spec in self.fields.items():
            old, new = old_values.get(name), new_values.get(name)
            if new is old or (type(new) is type(old) and new == old):  # True == 1: a change
                continue
            if spec.reducer is replace:
                changed[name] = new
            elif (
                spec.reducer is append
                and isinstance(old, list)
                and isinstance(new, list)
                and new[: len(old)] == old
            ):
                changed[name] = new[len(old) :]
            else:
                changed[name] = Replace(new)
        extra, before_extra = after.__pydantic_extra__, before.__pydantic_extra__
        if extra and extra != before_extra:  # fields not declared: ``apply`` refuses them
            changed.update(
                (key, value)
                for key, value in extra.items()
                if before_extra is None or key not in before_extra or before_extra[key] != value
            )
        return changed

    def passed_back(
        self, before: BaseModel, after: BaseModel, names: Iterable[str]
    ) -> dict[str, object]:
        """What a subgraph changed in the fields ``names``, from ``before`` (what it was
        given) to ``after`` (its final values), as an update through this state's
        reducers: a ``replace`` field's new value; the items an ``append`` list gained
        at the end (a ``Replace`` when it lost some); for ``add``, what the value
        gained (a number's difference, a string's or list's tail, a dict's per key);
        for another reducer, or when ``add`` cannot tell a gain, the new value, which
        the reducer merges (as LangGraph merges a subgraph's output)."""
        changed: dict[str, object] = {}
        for name in names:
            old, new = getattr(before, name), getattr(after, name)
            if new is old or (type(new) is type(old) and new == old):
                continue
            reducer = self.fields[name].reducer
            if reducer is append:
                if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
                    changed[name] = new[len(old) :]
                else:
                    changed[name] = Replace(new)
            elif reducer is add:
                gained = _gained(old, new)
                changed[name] = new if gained is _NO_GAIN else gained
            else:
                changed[name] = new
        return changed

    def as_changes(self, update: object, origin: str) -> dict[str, object]:
        """Turn a node's return value (dict, partial model or None) into a dict."""
        if update is None:
            return {}
        if isinstance(update, dict):
            return update
        if isinstance(update, BaseModel):
            return {k: getattr(update, k) for k in update.model_fields_set}
        raise BadUpdate(
            f"{origin} returned {type(update).__name__}; return a dict of field changes, "
            f"a partial `{self.model.__name__}`, a Suspend, or None"
        )

    def apply(
        self,
        state: BaseModel,
        changes: Mapping[str, object],
        origin: str,
        track: dict[str, int | None] | None = None,
        validated: bool = False,
    ) -> BaseModel:
        """Merge ``changes`` into ``state`` with each field's reducer; returns a new state.

        ``track`` (if given) gets each changed field: the number of items an
        ``append`` added at the end, or ``None`` for a new value. ``validated``:
        the values of ``replace`` and ``append`` fields were validated already
        (see ``validated_changes``).
        """
        if not changes:
            return state
        merged: dict[str, object] = {}
        fields, loose = self.fields, self._loose
        for name, value in changes.items():
            spec = fields.get(name)
            if spec is None:
                allowed = ", ".join(self.fields)
                raise BadUpdate(
                    f"{origin} updated unknown field `{name}` of `{self.model.__name__}`; "
                    f"fields are: {allowed}"
                )
            if type(value) in spec.exact:  # a plain value its validator would give back
                merged[name] = value
                if track is not None:
                    track[name] = None
                continue
            if name in loose and nesting_exceeds(value):
                raise BadUpdate(
                    f"{origin} set field `{name}` to a value nested more than {MAX_NESTING} "
                    "levels deep (lists, dicts, tuples, sets): flatten it"
                )
            try:
                appended: int | None = None
                if isinstance(value, Replace):
                    merged[name] = value.value if validated else spec.validate(value.value)
                elif spec.reducer is replace:
                    merged[name] = value if validated else spec.validate(value)
                elif spec.reducer is append:
                    if not isinstance(value, (list, tuple)):
                        value = [value]
                    items = value if validated else spec.validate(value)
                    old = getattr(state, name)
                    merged[name] = grown = append(old, items)
                    if isinstance(old, list) and len(grown) == len(old) + len(items):
                        appended = len(items)
                else:
                    merged[name] = spec.validate(spec.reducer(getattr(state, name), value))
            except ValidationError as exc:
                raise BadUpdate(
                    f"{origin} set field `{name}` to a value that does not fit: "
                    f"{exc.errors()[0]['msg']} (got {type(value).__name__})"
                ) from None
            except Exception as exc:  # the field's reducer cannot merge these values
                raise BadUpdate(
                    f"{origin} set field `{name}` to a value its reducer cannot merge: "
                    f"{type(exc).__name__}: {exc} (got {type(value).__name__})"
                ) from exc
            if track is not None:
                previous = track.get(name, 0)
                track[name] = None if appended is None or previous is None else previous + appended
        return _with_changes(state, merged)

    def validated_changes(
        self, changes: Mapping[str, object], before: BaseModel, after: BaseModel
    ) -> dict[str, object]:
        """``changes`` as ``apply`` validated them into ``after``: the new value of a
        ``replace`` field, the items an ``append`` added (others as given)."""
        out: dict[str, object] = {}
        for name, value in changes.items():
            reducer = self.fields[name].reducer
            if isinstance(value, Replace):
                out[name] = Replace(getattr(after, name))
            elif reducer is replace:
                out[name] = getattr(after, name)
            elif reducer is append:
                old, new = getattr(before, name), getattr(after, name)
                out[name] = new[len(old) :] if isinstance(old, list) else value
            else:
                out[name] = value
        return out

    def coerce(self, data: BaseModel | Mapping[str, object]) -> BaseModel:
        """A loaded checkpoint's state as a model instance."""
        if isinstance(data, self.model):
            return data
        if isinstance(data, BaseModel):  # saved by a graph over another model
            data = data.model_dump(by_alias=True)
        renames = serialization_renames(self.model)
        if renames and any(key in data for key in renames):  # written under another name
            data = {renames.get(key, key): value for key, value in data.items()}
        # Names as well as aliases: nested models may be written by field name (stores' codec).
        return self.model.model_validate(data, by_alias=True, by_name=True)
