"""The three apps stand side by side under the assistant: ``qa``, ``reports`` and
``deep`` import none of each other, ``common`` imports no app, the packages below
``common`` import nothing of it, and only ``web``/``cli`` build on ``assistant``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import research_fsm

PACKAGE = Path(research_fsm.__file__).parent
APPS = ("qa", "reports", "deep")


def _packages_imported(path: Path) -> set[str]:
    """The research_fsm packages an import statement of ``path`` names (``from ..deep
    import x`` -> ``deep``; any depth, ``if TYPE_CHECKING:`` and function bodies too)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = parts[:-1]  # the package a relative import starts from (an __init__'s own)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[tuple[str, ...]] = []
        if isinstance(node, ast.Import):
            targets = [tuple(alias.name.split(".")) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = base + tuple(node.module.split(".") if node.module else ())
            targets = [module] + [(*module, alias.name) for alias in node.names]
        for target in targets:
            if target[:1] == ("research_fsm",) and len(target) > 1:
                found.add(target[1])
    return found


def _imports_of(folder: str) -> dict[str, set[str]]:
    return {
        str(path.relative_to(PACKAGE)): _packages_imported(path)
        for path in sorted((PACKAGE / folder).rglob("*.py"))
    }


@pytest.mark.parametrize("app", APPS)
def test_an_app_imports_neither_other_app_nor_the_assistant(app: str) -> None:
    """No module of an app imports another app, the assistant, the page or the CLI."""
    above = {*APPS, "assistant", "web", "cli"} - {app}
    wrong = {where: sorted(names & above) for where, names in _imports_of(app).items()}
    assert {} == {where: names for where, names in wrong.items() if names}


@pytest.mark.parametrize("folder", ["common", "engine", "stores", "llm", "sources", "documents"])
def test_the_floors_below_the_apps_import_no_app(folder: str) -> None:
    """common and everything below it import no app and not the assistant; the packages
    below common (sources, llm, documents, stores, engine) import nothing of common."""
    above = {*APPS, "assistant", "web", "cli"} | ({"common"} if folder != "common" else set())
    wrong = {where: sorted(names & above) for where, names in _imports_of(folder).items()}
    assert {} == {where: names for where, names in wrong.items() if names}


def test_the_check_sees_a_relative_import_of_another_app() -> None:
    """The scan resolves ``from ..deep import x`` in research_fsm/qa/x.py to ``deep``."""
    module = PACKAGE / "qa" / "graph.py"
    found = _packages_imported(module)
    assert {"engine", "llm", "sources", "common"} <= found and "deep" not in found
