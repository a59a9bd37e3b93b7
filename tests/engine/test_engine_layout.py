"""The engine's layout: imports go one way, none hides in a function, no module reads
another object's private fields.

A reader follows a run from ``CompiledGraph.run`` down to a step in a straight line
only when the engine's modules import each other in one direction. These checks read
the source (``ast``), so they count the imports under ``if TYPE_CHECKING:`` too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import research_fsm.engine

ENGINE = Path(research_fsm.engine.__file__).parent


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _modules(folder: Path) -> dict[str, Path]:
    """The package's modules by name (``__init__`` for the package itself)."""
    return {path.stem: path for path in sorted(folder.glob("*.py"))}


def _imported(node: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> set[str]:
    """The package's own modules ``node`` imports, relative imports resolved
    (``from . import x``: module ``x``, or the package's ``__init__`` when ``x`` is a
    name in it)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level > 1 or (node.level == 0 and node.module is None):
        return set()  # a parent package's module: not one of this package's
    else:
        base = node.module or "" if node.level == 0 else f"{package}.{node.module or ''}"
        base = base.rstrip(".")
        names = [f"{base}.{alias.name}" for alias in node.names] if base == package else [base]
    found = set()
    for name in names:
        if name == package:
            found.add("__init__")
        elif name.startswith(f"{package}."):
            module = name[len(package) + 1 :].split(".")[0]
            found.add(module if module in modules else "__init__")
    return found


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports: every import
    statement, ``if TYPE_CHECKING:`` ones and those inside functions included."""
    modules = _modules(folder)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported |= _imported(node, package, set(modules))
        imported.discard(name)
        graph[name] = imported
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports as ``[a, b, ..., a]``, or ``None`` when imports go one way."""
    done: set[str] = set()
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(module: str) -> list[str] | None:
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target in on_stack:
                return [*stack[stack.index(target) :], target]
            if target not in done:
                cycle = visit(target)
                if cycle is not None:
                    return cycle
        stack.pop()
        on_stack.discard(module)
        done.add(module)
        return None

    for module in sorted(graph):
        if module not in done:
            cycle = visit(module)
            if cycle is not None:
                return cycle
    return None


def _imports_by_call(node: ast.AST) -> bool:
    """``importlib.import_module(...)``, ``import_module(...)`` or ``__import__(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "__import__")


def imports_in_functions(folder: Path) -> list[str]:
    """``file:line`` of every import inside a function body: a statement, or a call
    of ``importlib.import_module`` or ``__import__``."""
    found = []
    for name, path in _modules(folder).items():
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)) or _imports_by_call(inner):
                        found.append(f"{name}.py:{inner.lineno}")
    return sorted(set(found))


DEFERRED = "_logs.py"
"""The engine's one deferred import: structlog, on the first log line (``_logs``)."""


def private_reads(folder: Path) -> list[str]:
    """``file:line x._name`` for every attribute ``_name`` (not a dunder) reached on
    anything but ``self`` or ``cls``: another object's private field."""
    found = []
    for name, path in _modules(folder).items():
        for node in ast.walk(_parse(path)):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            found.append(f"{name}.py:{node.lineno} {ast.unparse(node)}")
    return found


def test_engine_imports_go_one_way() -> None:
    """The engine's modules import each other without a cycle (TYPE_CHECKING imports too)."""
    cycle = find_cycle(import_graph(ENGINE, "research_fsm.engine"))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_engine_has_no_import_inside_a_function() -> None:
    """No engine module imports inside a function body (a way round an import cycle),
    but for ``_logs``'s one call that loads structlog on the first log line."""
    found = imports_in_functions(ENGINE)
    assert [] == [place for place in found if not place.startswith(f"{DEFERRED}:")]
    assert 1 == len(found)


def test_engine_reads_no_other_objects_private_fields() -> None:
    """No engine module reads ``x._name`` on anything but ``self`` or ``cls``."""
    assert [] == private_reads(ENGINE)


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_the_checks_find_a_cycle_a_function_import_and_a_private_read(tmp_path: Path) -> None:
    """In a small package, a cycle through a TYPE_CHECKING import (relative and absolute),
    an import in a function (a statement or an ``import_module``/``__import__``
    call) and ``other._x`` are found; ``self._x`` and dunders are not."""
    folder = _write(
        tmp_path,
        {
            "__init__.py": "from ._a import A\n",
            "_a.py": "from ._b import B\nclass A:\n    def f(self):\n        return self._x\n",
            "_b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg._c import C\n"
                "def g(other):\n"
                "    from . import _a\n"
                "    return other._hidden, other.__dict__\n"
            ),
            "_c.py": (
                "import importlib\n"
                "from . import _a\n"
                "def h():\n"
                "    return importlib.import_module('json'), __import__('os')\n"
            ),
        },
    )
    graph = import_graph(folder, "pkg")
    assert graph == {"__init__": {"_a"}, "_a": {"_b"}, "_b": {"_a", "_c"}, "_c": {"_a"}}
    assert find_cycle(graph) == ["_a", "_b", "_a"]
    assert find_cycle({"_a": {"_b"}, "_b": {"_c"}, "_c": set()}) is None
    assert imports_in_functions(folder) == ["_b.py:5", "_c.py:4"]
    assert private_reads(folder) == ["_b.py:6 other._hidden"]
