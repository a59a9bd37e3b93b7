"""Names that moved up the package order, still served at their old place with a
``DeprecationWarning``.

A package may not import a floor above its own (``tests/test_layout.py``), not even by
name at the call, so an old place cannot know where its names went. The public front,
``research_fsm/__init__.py``, which stands above every floor and always runs first,
registers each old place's moved names here (``register``); the old module's
``__getattr__`` asks here (``moved(__name__, name)``).

A name renamed in its own module (or moved down, where the old place can import it) is
served by the old module's ``__getattr__`` with ``renamed(__name__, name, table)``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["moved", "register", "renamed"]

_REGISTERED: dict[str, dict[str, tuple[str, str]]] = {}


def register(old: str, names: Mapping[str, tuple[str, str]]) -> None:
    """Serve ``names`` at module ``old`` (added to what it already serves): each name
    with the module that holds it now and what the warning tells to write instead
    (``("research_fsm.assistant", "from research_fsm import ResearchAssistant")``)."""
    _REGISTERED.setdefault(old, {}).update(names)


def moved(old: str, name: str) -> Any:
    """The value of ``name`` that moved away from module ``old``, with a
    ``DeprecationWarning`` at the caller's line; ``AttributeError`` for any other name,
    as a module without it raises."""
    where = _REGISTERED.get(old, {}).get(name)
    if where is None:
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    module, advice = where
    warnings.warn(f"{old}.{name} moved: {advice}", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(module), name)


def renamed(old: str, name: str, table: Mapping[str, tuple[Any, str]]) -> Any:
    """The value ``table`` gives for the deprecated ``name`` of module ``old`` (each entry:
    the value under its new name and what the warning tells to write instead), with a
    ``DeprecationWarning`` at the caller's line; ``AttributeError`` for any other name,
    as a module without it raises."""
    entry = table.get(name)
    if entry is None:
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    value, advice = entry
    warnings.warn(f"{old}.{name} is deprecated: {advice}", DeprecationWarning, stacklevel=3)
    return value
