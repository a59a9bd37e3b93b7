"""The package layout: the packages stand in one order, and no package imports another
package's private module.

The order, ground floor first (``ORDER``): a module may import its own package and the
floors below it, never a floor above nor a neighbour on its own floor, so the packages
form no circle:

    engine -> errors, _home, _tracing, _moved, prebuilt -> _logging -> stores -> llm, sources, documents
    -> common, diagnostics -> qa, reports, deep -> assistant -> web -> mcp -> cli
    -> research_fsm, __main__

(``research_fsm/assistant.py``, the composition root, is the ``assistant`` floor;
``research_fsm/__init__.py``, the public front, the top.) Every import counts: those
inside functions and under ``if TYPE_CHECKING:`` too, and a module named by a string
(``importlib.import_module("research_fsm.assistant")``, or a table of such names).

A private module (``_name.py`` or a ``_name/`` package) belongs to the package that
holds it and may be imported by that package's modules and subpackages only:
``research_fsm.reports._graph`` by ``research_fsm.reports.*``, never by
``research_fsm.deep``; anything else goes through a package's ``__init__`` or a
public module (``research_fsm.common.writer``).
"""

from __future__ import annotations

import ast
import functools
import re
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


def _floor_of(target: tuple[str, ...], root: Path) -> str | None:
    """The top-level package or module of research_fsm an import target names
    (``research_fsm.qa.graph`` -> ``qa``; ``research_fsm`` and names in its
    ``__init__`` -> ``__init__``), or ``None`` outside research_fsm and for
    ``research_fsm.__version__``."""
    if target[:1] != ("research_fsm",) or target[1:2] == ("__version__",):
        return None  # outside, or the package's version (metadata, not code)
    if len(target) == 1:
        return "__init__"
    path = root / "research_fsm" / target[1]
    return target[1] if path.is_dir() or path.with_suffix(".py").is_file() else "__init__"


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


ORDER: tuple[tuple[str, ...], ...] = (
    ("engine",),
    ("errors", "_home", "_tracing", "_moved", "prebuilt"),
    ("_logging",),
    ("stores",),
    ("llm", "sources", "documents"),
    ("common", "diagnostics"),
    ("qa", "reports", "deep"),
    ("assistant",),
    ("web",),
    ("mcp",),
    ("cli",),
    ("__init__", "__main__"),
)
"""The floors of research_fsm, ground first: each entry a top-level package or module."""

PENDING: dict[tuple[str, str], str] = {}
"""Imports against the order that work in flight removes, each with who removes it;
``test_every_pending_exception_is_still_needed`` fails once one is gone."""


def _import_targets(path: Path, root: Path) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The module each import in ``path`` names: ``from a import b`` names ``a``, or
    ``a.b`` when ``a`` is the root package (whose names are its subpackages too); and
    each module of research_fsm named by a string (``importlib.import_module(
    "research_fsm.assistant")``, or a table of such names): an import by name counts."""
    here = _dotted(path, root)
    package = here if path.name == "__init__.py" else here[:-1]
    imports, by_name = _targets(package, path.read_text(encoding="utf-8"))
    modules = [(line, target) for line, target in by_name if _is_module(root, target)]
    return imports + tuple(modules)


def _is_module(root: Path, target: tuple[str, ...]) -> bool:
    """Whether ``target`` names a module or package of the tree under ``root`` (not a
    span attribute such as ``research_fsm.thread_id``)."""
    path = root.joinpath(*target)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


_MODULE_NAME = re.compile(r"research_fsm(\.[A-Za-z_]\w*)+")


@functools.cache
def _targets(
    package: tuple[str, ...], text: str
) -> tuple[tuple[tuple[int, tuple[str, ...]], ...], tuple[tuple[int, tuple[str, ...]], ...]]:
    """The imports of a module's text in ``package`` and the strings in it that look like
    a module's dotted name (a copied tree parses once)."""
    found: list[tuple[int, tuple[str, ...]]] = []
    named: list[tuple[int, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _MODULE_NAME.fullmatch(node.value):
                named.append((node.lineno, tuple(node.value.split("."))))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, tuple(alias.name.split("."))) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = base + tuple(node.module.split(".") if node.module else ())
            if module == ("research_fsm",):
                found += [(node.lineno, (*module, alias.name)) for alias in node.names]
            else:
                found.append((node.lineno, module))
    return tuple(found), tuple(named)


def package_imports(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """``(importer, imported)`` floor pairs between different top-level packages, each
    with the ``file:line`` places that import so."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / "research_fsm").rglob("*.py")):
        importer = _floor_of(_dotted(path, root), root)
        assert importer is not None
        for line, target in _import_targets(path, root):
            imported = _floor_of(target, root)
            if imported is not None and imported != importer:
                where = f"{path.relative_to(root).as_posix()}:{line}"
                places = found.setdefault((importer, imported), [])
                if where not in places:
                    places.append(where)
    return found


def order_violations(
    root: Path = ROOT,
    order: tuple[tuple[str, ...], ...] = ORDER,
    pending: dict[tuple[str, str], str] | None = None,
) -> list[str]:
    """``file:line: a imports b`` for every import of a floor that is not below the
    importer's (a neighbour on the same floor included), and for a package ``order``
    does not place; ``pending`` pairs excepted."""
    pending = PENDING if pending is None else pending
    rank = {name: floor for floor, names in enumerate(order) for name in names}
    wrong = []
    for (importer, imported), places in package_imports(root).items():
        if (importer, imported) in pending:
            continue
        if importer not in rank or imported not in rank:
            unplaced = importer if importer not in rank else imported
            reason = f"{unplaced} has no place in ORDER"
        elif rank[imported] < rank[importer]:
            continue
        elif rank[imported] == rank[importer]:
            reason = "a neighbour on the same floor"
        else:
            reason = "a floor above"
        wrong += [f"{place}: {importer} imports {imported} ({reason})" for place in places]
    return sorted(wrong)


def package_cycles(root: Path = ROOT) -> list[list[str]]:
    """The circles among research_fsm's top-level packages (each a sorted list of the
    packages that reach each other through imports), pending exceptions included."""
    graph: dict[str, set[str]] = {}
    for importer, imported in package_imports(root):
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reached = {name: reach(name) for name in graph}
    circles = {
        tuple(sorted(name for name in graph if name in reached[start] and start in reached[name]))
        for start in graph
        if start in reached[start]
    }
    return [list(circle) for circle in sorted(circles)]


def _module_file(root: Path, target: tuple[str, ...]) -> Path | None:
    """The file of module ``target`` under ``root`` (a package's ``__init__.py``)."""
    path = root.joinpath(*target)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def _module_edges(path: Path, root: Path) -> set[Path]:
    """The files of research_fsm that ``path`` imports: ``from pkg import name`` names
    ``pkg/name.py`` when that is a module, else ``pkg/__init__.py``."""
    here = _dotted(path, root)
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [tuple(alias.name.split(".")) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = base + tuple(node.module.split(".") if node.module else ())
            targets = [
                (*module, alias.name) if _module_file(root, (*module, alias.name)) else module
                for alias in node.names
            ]
        else:
            continue
        found |= {
            file
            for target in targets
            if target[:1] == ("research_fsm",) and (file := _module_file(root, target))
        }
    return found - {path}


def module_cycles(root: Path = ROOT) -> list[list[str]]:
    """The circles among research_fsm's files (each the sorted paths of the files that
    reach each other through imports, those inside functions included)."""
    files = sorted((root / "research_fsm").rglob("*.py"))
    graph = {path: _module_edges(path, root) for path in files}
    reached: dict[Path, set[Path]] = {}
    for start in files:
        seen: set[Path] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), set()) - seen:
                seen.add(nxt)
                todo.append(nxt)
        reached[start] = seen
    circles = {
        tuple(
            sorted(
                p.relative_to(root).as_posix() for p in files if p in reached[s] and s in reached[p]
            )
        )
        for s in files
        if s in reached[s]
    }
    return [list(circle) for circle in sorted(circles)]


def test_no_circle_among_the_files() -> None:
    """No two files of research_fsm reach each other through imports, inside one package
    included (two modules that need each other share a third, lower one)."""
    assert [] == module_cycles()


def test_the_file_cycle_check_finds_a_circle_inside_one_package(tmp_path: Path) -> None:
    """_read -> _pdf (by a relative name) and _pdf -> _read (inside a function) is a
    circle; __init__ importing both is in none."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "docs/__init__.py": "from ._read import read\nfrom ._pdf import pdf\n",
            "docs/_read.py": "from . import _pdf\n",
            "docs/_pdf.py": "def f():\n    from research_fsm.docs._read import read\n",
        },
    )
    assert [["research_fsm/docs/_pdf.py", "research_fsm/docs/_read.py"]] == module_cycles(root)


def test_every_import_goes_down_the_package_order() -> None:
    """No module of research_fsm imports a package on its own floor or above (ORDER)."""
    assert [] == order_violations()


def test_no_circle_among_the_packages() -> None:
    """The top-level packages import each other without a circle (a pending exception
    that makes one still fails here)."""
    assert [] == package_cycles()


def test_every_pending_exception_is_still_needed() -> None:
    """Each PENDING pair still occurs: once its work lands the pair must go."""
    found = package_imports()
    assert [] == [pair for pair in PENDING if pair not in found]


def test_every_package_has_a_floor() -> None:
    """Each top-level package and module of research_fsm is placed in ORDER exactly once."""
    placed = [name for names in ORDER for name in names]
    present = {
        path.stem if path.suffix == ".py" else path.name
        for path in (ROOT / "research_fsm").iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file())
    }
    assert sorted(set(placed)) == sorted(placed)  # none twice
    assert [] == sorted(present - set(placed))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "research_fsm" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_order_check_finds_upward_sideways_and_unplaced_imports(tmp_path: Path) -> None:
    """In a small tree, the check reports an import of a floor above (in a function and
    under TYPE_CHECKING too), of a neighbour, and of an unplaced package; not one below."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "from .app import run\n",
            "low/__init__.py": "def f():\n    from ..app import run\n",
            "low/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    import research_fsm.side\n",
            "side/__init__.py": "from research_fsm.low import f\n",
            "app/__init__.py": "from ..low.typed import x\nfrom ..side import y\nfrom ..new import z\n",
            "new/__init__.py": "",
        },
    )
    order = (("low",), ("side", "peer"), ("app",), ("__init__",))
    assert [
        "research_fsm/app/__init__.py:3: app imports new (new has no place in ORDER)",
        "research_fsm/low/__init__.py:2: low imports app (a floor above)",
        "research_fsm/low/typed.py:3: low imports side (a floor above)",
    ] == order_violations(root, order, pending={})
    (root / "research_fsm" / "side" / "peer.py").write_text("")
    (root / "research_fsm" / "peer.py").write_text("from .side import y\n")
    assert "research_fsm/peer.py:1: peer imports side (a neighbour on the same floor)" in (
        order_violations(root, order, pending={})
    )


def test_the_cycle_check_finds_a_circle_through_three_packages(tmp_path: Path) -> None:
    """a -> b -> c -> a is one circle of three; d, importing a, is in none."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "from ..b import x\n",
            "b/__init__.py": "from research_fsm.c import y\n",
            "c/x.py": "import research_fsm.a\n",
            "c/__init__.py": "",
            "d.py": "from .a import z\n",
        },
    )
    assert [["a", "b", "c"]] == package_cycles(root)


def test_an_import_by_name_counts_and_makes_a_circle(tmp_path: Path) -> None:
    """``importlib.import_module("research_fsm.top")`` in low, and a table naming
    ``research_fsm.top.mod`` in a module of low, are imports of top (a circle with top's
    import of low); a string naming no module (a span attribute) is none."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "import importlib\n\ndef f():\n"
            '    return importlib.import_module("research_fsm.top")\n',
            "low/table.py": 'HOMES = {"x": "research_fsm.top.mod"}\n'
            'SPAN = "research_fsm.thread_id"\n',
            "top/__init__.py": "from ..low import f\n",
            "top/mod.py": "",
        },
    )
    order = (("low",), ("top",), ("__init__",))
    assert [
        "research_fsm/low/__init__.py:4: low imports top (a floor above)",
        "research_fsm/low/table.py:1: low imports top (a floor above)",
    ] == order_violations(root, order, pending={})
    assert [["low", "top"]] == package_cycles(root)


def _planted(root: Path, module: str, line: str) -> int:
    """The real package copied under ``root`` (checked clean: no violation, no circle), then
    ``line`` appended to ``research_fsm/<module>``; the line number it lands on, less one."""
    for path in (ROOT / "research_fsm").rglob("*.py"):
        copy = root / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
    assert ([], []) == (order_violations(root), package_cycles(root))
    planted = root / "research_fsm" / module
    lines = planted.read_text().count("\n")
    with planted.open("a") as out:
        out.write(line)
    return lines


def test_a_planted_upward_import_in_a_copy_of_the_real_package_fails(tmp_path: Path) -> None:
    """The real package copied, with ``engine`` importing ``qa`` planted in one module:
    the check names that line, and the circle it makes through qa."""
    lines = _planted(tmp_path, "engine/_types.py", "from ..qa import graph  # planted\n")
    assert [
        f"research_fsm/engine/_types.py:{lines + 1}: engine imports qa (a floor above)"
    ] == order_violations(tmp_path)
    circles = [circle for circle in package_cycles(tmp_path) if "engine" in circle]
    assert [True] == [{"engine", "qa"} <= set(circle) for circle in circles]


def test_a_name_moved_up_from_the_qa_app_served_by_name_would_be_a_circle(
    tmp_path: Path,
) -> None:
    """The real package copied, with the Q&A app serving ``ResearchAssistant`` by
    importing the composition root by name (as it did before ``research_fsm._moved``):
    the check finds qa importing assistant and the circle qa <-> assistant."""
    planting = '_HOME = {"ResearchAssistant": "research_fsm.assistant"}  # planted\n'
    lines = _planted(tmp_path, "qa/assistant.py", planting)
    assert [
        f"research_fsm/qa/assistant.py:{lines + 1}: qa imports assistant (a floor above)"
    ] == order_violations(tmp_path)
    assert [["assistant", "qa"]] == package_cycles(tmp_path)


ARCHITECTURE = ROOT / "docs" / "architecture.md"
HOUSE_MARK = "<!-- the house: drawn by tests/test_layout.py::house_mermaid -->"


def house_mermaid(root: Path = ROOT) -> str:
    """The packages (and ``assistant.py``) as a Mermaid flowchart, ground floor at the
    bottom, neighbours boxed together: an arrow from a package to each one that imports
    it, left out where a longer path already leads there (a transitive reduction)."""
    pictured = [
        name
        for names in ORDER
        for name in names
        if (root / "research_fsm" / name / "__init__.py").is_file()
        or (name == "assistant" and (root / "research_fsm" / "assistant.py").is_file())
    ]
    edges = {
        (imported, importer)
        for importer, imported in package_imports(root)
        if importer in pictured and imported in pictured
    }

    def longer_path(start: str, end: str) -> bool:
        todo = [b for a, b in edges if a == start and b != end]
        seen = set(todo)
        while todo:
            here = todo.pop()
            if here == end:
                return True
            for a, b in edges:
                if a == here and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return False

    rank = {name: floor for floor, names in enumerate(ORDER) for name in names}
    lines = ["flowchart BT"]
    for floor, names in enumerate(ORDER):
        present = [name for name in names if name in pictured]
        if len(present) > 1:
            lines.append(f'    subgraph floor{floor} [" "]')
            lines += [f"        {name}" for name in present]
            lines.append("    end")
    kept = sorted(
        (edge for edge in edges if not longer_path(*edge)),
        key=lambda edge: (rank[edge[0]], rank[edge[1]], edge),
    )
    lines += [f"    {low} --> {high}" for low, high in kept]
    return "\n".join(lines) + "\n"


def test_the_architecture_page_draws_the_packages_as_they_import() -> None:
    """docs/architecture.md's picture of the house is the one the imports make today (on
    failure, paste the block from the message)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    drawn = text.split(HOUSE_MARK, 1)[1].split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert house_mermaid() == drawn, f"paste into docs/architecture.md:\n{house_mermaid()}"


def test_the_picture_leaves_out_an_arrow_a_longer_path_draws(tmp_path: Path) -> None:
    """engine -> stores -> qa and engine -> qa: the picture keeps the two short arrows;
    qa and deep share a floor box."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "engine/__init__.py": "",
            "stores/__init__.py": "from ..engine import x\n",
            "qa/__init__.py": "from ..engine import x\nfrom ..stores import y\n",
            "deep/__init__.py": "",
        },
    )
    assert (
        'flowchart BT\n    subgraph floor6 [" "]\n        qa\n        deep\n    end\n'
        "    engine --> stores\n    stores --> qa\n"
    ) == house_mermaid(root)
