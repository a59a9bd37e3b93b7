"""The folders an MCP tool may read: only those the user configured (``--docs-root``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import ResearchError

__all__ = ["DocsRoots", "FolderNotAllowed", "InvalidDocsRoot"]


class FolderNotAllowed(ResearchError, PermissionError):
    """A documents folder outside the configured roots (after ``..`` and symlinks are
    resolved), or any folder when no root is configured."""


class InvalidDocsRoot(ResearchError, ValueError):
    """A ``--docs-root`` that is not an existing folder."""


class DocsRoots:
    """The configured documents roots, resolved once (symlinks followed) at start.

    ``check(path)`` resolves a requested folder the same way (a relative one against
    the first root) and accepts it only when it is one of the roots or inside one.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]] = ()) -> None:
        resolved: list[Path] = []
        for root in roots:
            path = Path(root).expanduser()
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):
                raise InvalidDocsRoot(
                    f"--docs-root {str(root)!r} does not exist; give an existing folder"
                ) from None
            if not real.is_dir():
                raise InvalidDocsRoot(f"--docs-root {str(root)!r} is not a folder")
            resolved.append(real)
        self.roots: tuple[Path, ...] = tuple(dict.fromkeys(resolved))
        """The roots, resolved, in the order given (duplicates dropped)."""

    def __bool__(self) -> bool:
        return bool(self.roots)

    def describe(self) -> str:
        """The roots, comma-separated, for messages ("none configured" when empty)."""
        return ", ".join(str(r) for r in self.roots) or "none configured"

    def default(self) -> Path | None:
        """The folder used when a tool call names none: the first root."""
        return self.roots[0] if self.roots else None

    def check(self, folder: str | os.PathLike[str]) -> Path:
        """The resolved folder, or ``FolderNotAllowed`` naming it and the allowed roots."""
        raw = os.fspath(folder)
        if not raw.strip() or "\x00" in raw:
            raise FolderNotAllowed(
                "the documents folder is empty; name a folder inside a docs root"
            )
        if not self.roots:
            raise FolderNotAllowed(
                f"documents folder {raw!r} refused: this server reads no folders (start it "
                "with --docs-root DIR to allow one)"
            )
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = self.roots[0] / path
        try:
            real = path.resolve(strict=False)
        except (OSError, RuntimeError):  # a symlink loop
            raise FolderNotAllowed(f"documents folder {raw!r} cannot be resolved") from None
        if not any(real == root or real.is_relative_to(root) for root in self.roots):
            raise FolderNotAllowed(
                f"documents folder {raw!r} is outside the allowed folders "
                f"({self.describe()}); only folders under a --docs-root may be read"
            )
        return real
