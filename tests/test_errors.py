"""The apps' errors: one root, ``ResearchError``, drawn in ``research_fsm.errors``."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import research_fsm
from research_fsm.errors import ResearchError

BUILTIN_BASES = {
    "InvalidQuestion": ValueError,
    "InvalidReportRequest": ValueError,
    "CompanyNotFound": LookupError,
    "ReportStoreError": OSError,
    "MissingFontError": RuntimeError,
    "InvalidResearchRequest": ValueError,
    "NoResearchSource": ValueError,
    "DataSourceError": Exception,
    "LLMError": Exception,
    "InvalidServeOptions": ValueError,
    "InspectorRefused": PermissionError,
    "DocumentsError": ValueError,
    "DocumentsNotFound": ValueError,
    "NotADirectory": ValueError,
    "DamagedIndex": ValueError,
    "FolderNotAllowed": PermissionError,
    "InvalidDocsRoot": ValueError,
}
"""Every public app error and the built-in base it has always had (``except
ValueError`` and the like keep catching it)."""


def public_app_errors() -> dict[str, type[BaseException]]:
    """Every exception class named in the ``__all__`` of a public module of research_fsm
    outside the engine and the stores (which have their own root, ``EngineError``)."""
    found: dict[str, type[BaseException]] = {}
    names = [
        info.name
        for info in pkgutil.walk_packages(research_fsm.__path__, "research_fsm.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
        and info.name.split(".")[1] not in ("engine", "stores")
    ]
    for name in names:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value is not ResearchError
            ):
                found[attr] = value
    return found


def test_every_public_app_error_is_known() -> None:
    """The public modules of the apps and the layers below them raise exactly these errors."""
    assert sorted(BUILTIN_BASES) == sorted(public_app_errors())


@pytest.mark.parametrize("name", sorted(BUILTIN_BASES))
def test_every_app_error_is_a_research_error_with_its_builtin_base(name: str) -> None:
    """Each error subclasses ``ResearchError`` and keeps its built-in base."""
    error = public_app_errors()[name]
    assert (True, True) == (
        issubclass(error, ResearchError),
        issubclass(error, BUILTIN_BASES[name]),
    )


def test_research_error_is_importable_from_the_package() -> None:
    """``research_fsm.ResearchError`` is the root of ``research_fsm.errors``."""
    assert research_fsm.errors.ResearchError is research_fsm.ResearchError


def test_the_hierarchy_drawing_names_every_error() -> None:
    """``research_fsm.errors``'s docstring draws every app error (kept in step with the code)."""
    doc = research_fsm.errors.__doc__ or ""
    assert [] == [name for name in BUILTIN_BASES if f"── {name}" not in doc]
