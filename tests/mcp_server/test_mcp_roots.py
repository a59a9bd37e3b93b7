"""``DocsRoots``: the only folders an MCP tool may read."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm.errors import ResearchError
from research_fsm.mcp import DocsRoots, FolderNotAllowed, InvalidDocsRoot


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """docs/{a,b}, a secret folder beside docs, and links in and out of docs."""
    (tmp_path / "docs" / "a" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "b").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "docs" / "out").symlink_to(tmp_path / "secret")
    (tmp_path / "docs" / "in").symlink_to(tmp_path / "docs" / "a")
    (tmp_path / "docs" / "loop").symlink_to(tmp_path / "docs" / "loop")
    return tmp_path


@pytest.mark.parametrize("folder", ["a", "a/deep", "in", "a/../b", ".", "a/not-yet"])
def test_folders_inside_a_root_are_allowed(tree: Path, folder: str) -> None:
    """Relative folders (from the first root), links inside it and the root itself."""
    roots = DocsRoots([tree / "docs"])
    checked = roots.check(folder)
    assert checked.is_relative_to((tree / "docs").resolve())


def test_absolute_folders_inside_any_root_are_allowed(tree: Path) -> None:
    """An absolute path under the second root is allowed, resolved."""
    roots = DocsRoots([tree / "docs" / "a", tree / "docs" / "b"])
    assert roots.check(str(tree / "docs" / "b")) == (tree / "docs" / "b").resolve()


@pytest.mark.parametrize("folder", ["..", "../secret", "a/../../secret", "out", "out/x", "/etc"])
def test_folders_outside_are_refused(tree: Path, folder: str) -> None:
    """`..`, a symlink pointing out, and an absolute path elsewhere are refused, naming the
    folder and the allowed roots."""
    roots = DocsRoots([tree / "docs"])
    with pytest.raises(FolderNotAllowed) as caught:
        roots.check(folder)
    message = str(caught.value)
    assert repr(folder) in message and str((tree / "docs").resolve()) in message
    assert isinstance(caught.value, ResearchError)


def test_a_sibling_with_the_roots_name_as_prefix_is_outside(tree: Path) -> None:
    """/x/docs-old is not inside /x/docs (a path prefix is not a parent)."""
    (tree / "docs-old").mkdir()
    with pytest.raises(FolderNotAllowed):
        DocsRoots([tree / "docs"]).check(str(tree / "docs-old"))


def test_a_symlink_loop_is_refused(tree: Path) -> None:
    """A link to itself cannot be resolved: refused, not a crash."""
    with pytest.raises(FolderNotAllowed):
        DocsRoots([tree / "docs"]).check("loop")


def test_no_roots_refuses_every_folder(tree: Path) -> None:
    """Without --docs-root no folder may be read, and the message says how to allow one."""
    with pytest.raises(FolderNotAllowed, match="--docs-root DIR"):
        DocsRoots().check(str(tree / "docs"))
    assert DocsRoots().default() is None


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_root_that_is_not_a_folder_is_refused(tmp_path: Path, make: str) -> None:
    """A --docs-root that does not exist, or is a file, is an InvalidDocsRoot."""
    path = tmp_path / "root"
    if make == "file":
        path.write_text("x")
    with pytest.raises(InvalidDocsRoot, match=repr(str(path))):
        DocsRoots([path])


def test_a_symlinked_root_is_resolved(tree: Path) -> None:
    """A root given through a link is its target: folders under the target are inside."""
    (tree / "link-to-docs").symlink_to(tree / "docs")
    roots = DocsRoots([tree / "link-to-docs"])
    assert roots.roots == ((tree / "docs").resolve(),)
    assert roots.check(str(tree / "docs" / "a")) == (tree / "docs" / "a").resolve()
