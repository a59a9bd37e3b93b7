"""The package layout: no package imports another package's private module.

A private module (``_name.py`` or a ``_name/`` package) belongs to the package that
holds it and may be imported by that package's modules and subpackages only:
``research_fsm.reports._graph`` by ``research_fsm.reports.*``, never by
``research_fsm.deep``; anything else goes through a package's ``__init__`` or a
public module (``research_fsm.common.writer``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import research_fsm

PACKAGE = Path(research_fsm.__file__).parent
ROOT = PACKAGE.parent


def _dotted(path: Path, root: Path) -> tuple[str, ...]:
    """``research_fsm/qa/graph.py`` -> ``("research_fsm", "qa", "graph")`` (a package's
    ``__init__`` is the package itself)."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, root: Path) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Every module path an import in ``path`` may name (``from a import b`` names
    ``a`` and ``a.b``), relative imports resolved."""
    here = _dotted(path, root)
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, tuple(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = base + tuple(node.module.split(".") if node.module else ())
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, (*module, alias.name)


def _private_owner(target: tuple[str, ...], root: Path) -> tuple[str, ...] | None:
    """The package holding the first private module ``target`` names, or ``None``
    when it names no private module of research_fsm."""
    if target[:1] != ("research_fsm",):
        return None
    for i, name in enumerate(target[1:], start=1):
        if name.startswith("_") and not name.startswith("__"):
            path = root.joinpath(*target[: i + 1])
            if path.with_suffix(".py").is_file() or path.is_dir():
                return target[:i]
            return None  # a private name in a module, not a module
    return None


def private_imports(root: Path = ROOT) -> list[str]:
    """``file:line imports module`` for every import of another package's private module."""
    found = []
    for path in sorted((root / "research_fsm").rglob("*.py")):
        importer = _dotted(path, root)
        for line, target in _imports(path, root):
            owner = _private_owner(target, root)
            if owner is not None and importer[: len(owner)] != owner:
                module = ".".join(target[: len(owner) + 1])
                found.append(f"{path.relative_to(root).as_posix()}:{line} imports {module}")
    return sorted(set(found))


def test_no_package_imports_another_packages_private_module() -> None:
    """No module of research_fsm imports a private module of a package it is not in."""
    assert [] == private_imports()


def test_the_check_finds_relative_and_absolute_imports_of_private_modules(
    tmp_path: Path,
) -> None:
    """In a small tree, the check reports ``from ..a._x import`` and ``import
    research_fsm.a._x`` from package b, and nothing a package does with its own
    private modules, a public module, or a private name inside a module."""
    files = {
        "__init__.py": "",
        "_home.py": "",
        "a/__init__.py": "from ._x import y\n",
        "a/_x.py": "y = 1\n_hidden = 2\n",
        "a/sub/__init__.py": "from .._x import y\n",
        "a/public.py": "from ._x import _hidden\n",
        "b/__init__.py": "",
        "b/relative.py": "from ..a._x import y\n",
        "b/absolute.py": "import research_fsm.a._x\n",
        "b/fine.py": "from ..a import y\nfrom ..a.public import z\nfrom .._home import h\n",
        "b/names.py": "from ..a import _x\n",
    }
    for name, text in files.items():
        path = tmp_path / "research_fsm" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert [
        "research_fsm/b/absolute.py:1 imports research_fsm.a._x",
        "research_fsm/b/names.py:1 imports research_fsm.a._x",
        "research_fsm/b/relative.py:1 imports research_fsm.a._x",
    ] == private_imports(tmp_path)
