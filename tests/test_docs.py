"""The documentation's code examples run, and its relative links lead somewhere.

Every ```python block of README.md and docs/*.md runs as a script of its own (top-level
``await`` allowed). An HTML comment on the line above a fence changes that:
``<!-- docs-test: skip (why) -->`` or ``<!-- docs-test: needs some.module (why) -->``
(see docs/development.md).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").glob("*.md"))]

MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|needs)\b\s*(.*?)\s*-->$")

# Runs a block as __main__; with top-level await it compiles to a coroutine, run here.
RUNNER = """
import ast, asyncio, sys
path = sys.argv[1]
code = compile(open(path, encoding="utf-8").read(), path, "exec",
               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__", "__file__": path})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


@dataclass(frozen=True, kw_only=True)
class Block:
    """A fenced code block of a Markdown file."""

    path: Path
    """The Markdown file."""
    line: int
    """The line number of its opening fence (1-based)."""
    language: str
    """What follows the opening backticks (``python``, ``bash``, or empty)."""
    code: str
    """The block's text, without the fences."""
    marker: str | None
    """The ``docs-test`` comment on the line above the fence, if any."""

    @property
    def name(self) -> str:
        """``docs/engine.md:13``, as pytest shows it."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if not line.startswith("```"):
            continue
        if start is None:
            start = number
            continue
        above = lines[start - 2].strip() if start >= 2 else ""
        blocks.append(
            Block(
                path=path,
                line=start,
                language=lines[start - 1][3:].strip(),
                code="\n".join(lines[start : number - 1]) + "\n",
                marker=above if above.startswith("<!--") and "docs-test" in above else None,
            )
        )
        start = None
    assert start is None, f"{path.name}: the fence opened at line {start} is never closed"
    return blocks


PYTHON_BLOCKS = [b for p in DOC_FILES for b in fenced_blocks(p) if b.language == "python"]


def run_block(block: Block, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a block as a script in an empty folder with a fresh RESEARCH_FSM_HOME, importing
    this checkout's package (not an installed copy)."""
    script = tmp_path / "example.py"
    script.write_text(block.code, encoding="utf-8")
    env = {**os.environ, "RESEARCH_FSM_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.pop("RESEARCH_FSM_STORE", None)
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


def apply_marker(block: Block) -> None:
    """Skip the block as its ``docs-test`` comment says; fail on a comment not understood."""
    if block.marker is None:
        return
    match = MARKER.match(block.marker)
    assert match, f"{block.name}: unknown docs-test comment {block.marker!r}"
    kind, rest = match.groups()
    if kind == "skip":
        pytest.skip(f"{block.name}: {_unwrap(rest) or 'marked skip'}")
    module, _, why = rest.partition(" ")
    assert module, f"{block.name}: 'docs-test: needs' names no module"
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        found = False
    if not found:
        pytest.skip(f"{block.name}: needs {module}" + (f", {_unwrap(why)}" if why else ""))


def _unwrap(reason: str) -> str:
    """A reason without the parentheses around it."""
    reason = reason.strip()
    return reason[1:-1] if reason.startswith("(") and reason.endswith(")") else reason


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.name for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    """Each Python example of the README and the docs runs to the end without an error."""
    apply_marker(block)
    result = run_block(block, tmp_path)
    assert result.returncode == 0, f"{block.name} failed:\n{result.stderr}"


def only_block(path: Path, needle: str) -> Block:
    """The one Python block of ``path`` that contains ``needle``."""
    found = [b for b in PYTHON_BLOCKS if b.path == path and needle in b.code]
    assert len(found) == 1, f"{path.name}: {len(found)} Python blocks contain {needle!r}"
    return found[0]


def test_engine_guide_example_is_the_readme_one(tmp_path: Path) -> None:
    """The engine guide opens with the README's 20-line example, which prints what it says."""
    guide = only_block(ROOT / "docs" / "engine.md", "asyncio.run(main())")
    assert only_block(README, "asyncio.run(main())").code == guide.code
    result = run_block(guide, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "completed ['start', 'got Ada', 'hello Ada']"


def test_thread_listing_example_prints_its_documented_result(tmp_path: Path) -> None:
    """The thread-listing example pages newest first by cursor and filters by prefix, as it says."""
    block = only_block(ROOT / "docs" / "engine.md", "app.threads(")
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[('user-carol', 'completed', 'add', 2), ('user-bob', 'completed', 'add', 2)]",
        "['user-alice'] None",
        "['user-bob']",
    ]


def test_parallel_example_prints_its_documented_result(tmp_path: Path) -> None:
    """The parallel-branches example runs and prints the results its comments show."""
    block = only_block(ROOT / "docs" / "parallel.md", "Send(")
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stderr
    expected = [
        "financial (financial[0]); market (market[1]); product (product[2])",
        "read a.md; read b.md",
    ]
    assert expected == result.stdout.strip().splitlines()


def test_history_editing_example_prints_its_documented_result(tmp_path: Path) -> None:
    """The engine guide's history-editing example runs and prints what its comments show."""
    block = only_block(ROOT / "docs" / "engine.md", "app.fork(")
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stderr
    expected = [
        "update write",
        "['write'] ['intro to tides', 'details', 'sources', 'conclusion']",
        "suspended True",
        "True suspended",
        "[('rewind', 'suspended'), ('run', 'completed'), ('update', 'running')]",
        "[('run', 'suspended'), ('run', 'running'), ('run', 'running')]",
    ]
    assert expected == result.stdout.strip().splitlines()


def test_the_migrated_langgraph_app_prints_what_the_original_does(tmp_path: Path) -> None:
    """The "Coming from LangGraph" page's rewrite prints exactly what the LangGraph
    original prints (the original runs where LangGraph is installed: the bench extra)."""
    page = ROOT / "docs" / "langgraph.md"
    (tmp_path / "ours").mkdir()
    (tmp_path / "lg").mkdir()
    ours = run_block(only_block(page, "from research_fsm.engine import"), tmp_path / "ours")
    assert ours.returncode == 0, ours.stderr
    expected = [
        "{'question': 'Publish 2 chapters?'}",
        "True ['tea history: a polished chapter', 'tea today: a polished chapter', '(published)']",
    ]
    assert expected == ours.stdout.strip().splitlines()
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("langgraph is not installed (pip install -e '.[bench]')")
    original = run_block(only_block(page, "from langgraph.graph import"), tmp_path / "lg")
    assert original.returncode == 0, original.stderr
    assert expected == original.stdout.strip().splitlines()


def test_markers_sit_on_python_blocks() -> None:
    """Every docs-test comment is understood and sits right above a Python fence."""
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not (line.startswith("<!--") and "docs-test" in line):
                continue  # prose and tables may write the convention out in backticks
            where = f"{path.relative_to(ROOT)}:{number}"
            assert MARKER.match(line.strip()), f"{where}: unknown docs-test comment {line!r}"
            following = lines[number] if number < len(lines) else ""
            assert following == "```python", f"{where}: the line after it is {following!r}"


# --- links -------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """The lines of a Markdown file outside fenced code, with inline code removed."""
    kept: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            kept.append((number, re.sub(r"`+[^`]*`+", "", line)))
    return kept


def heading_text(line: str) -> str:
    """A heading's text as it renders: no hashes, backticks, emphasis or link targets."""
    text = line.lstrip("#").strip()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "").replace("*", "")


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def mkdocs_slug(text: str) -> str:
    """The anchor MkDocs (Python-Markdown's ``toc`` default) gives a heading."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    """The anchors both GitHub and MkDocs give the headings of a Markdown file."""
    found: set[str] = set()
    for _, line in _headings(path):
        text = heading_text(line)
        if github_slug(text) == mkdocs_slug(text):
            found.add(github_slug(text))
    return found


def _headings(path: Path) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            lines.append((number, line))
    return lines


def test_relative_links_lead_to_files_and_headings() -> None:
    """Every relative link in the README and the docs names a file that exists, and a heading in it."""
    broken: list[str] = []
    for path in DOC_FILES:
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto: ...
                file_part, _, anchor = target.partition("#")
                linked = (path.parent / file_part).resolve() if file_part else path
                where = f"{path.relative_to(ROOT)}:{number}: {target}"
                if not linked.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                    broken.append(f"{where} (no heading with that anchor)")
    assert [] == broken


def test_slugs_follow_github_and_mkdocs() -> None:
    """The anchor functions give the anchors GitHub and MkDocs give these headings."""
    text = heading_text("## With real keys: Claude and Tavily")
    assert "with-real-keys-claude-and-tavily" == github_slug(text) == mkdocs_slug(text)
    text = heading_text("### PostgreSQL store vs LangGraph's AsyncPostgresSaver")
    assert "postgresql-store-vs-langgraphs-asyncpostgressaver" == github_slug(text)
    assert github_slug("a — b") == "a--b" and mkdocs_slug("a — b") == "a-b"
