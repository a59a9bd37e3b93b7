"""A cited local source opened at its cited lines: read-only, and only a file inside the
documents folder its research session indexed (no ``..``, no absolute path, no symlink
leading out of the folder)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Final

__all__ = [
    "CONTEXT_LINES",
    "SOURCE_VIEW_RE",
    "SourceNotShown",
    "SourceView",
    "source_url",
    "view_source",
]

SOURCE_VIEW_RE: Final = re.compile(r"^/api/source/deep-[0-9A-Za-z-]{1,80}/S\d{1,5}$")
"""The page's own links to a cited file (``/api/source/<session>/<S#>``)."""
CONTEXT_LINES: Final = 3
"""Lines shown before and after the cited ones."""
MAX_BYTES: Final = 20 * 1024 * 1024
"""A bigger file is not shown (the index reads no file that size either)."""
_LINES_RE: Final = re.compile(r"^lines? (\d{1,9})(?:-(\d{1,9}))?$")
_PAGE_RE: Final = re.compile(r"^page (\d{1,6})$")


class SourceNotShown(Exception):
    """The cited source cannot be shown (not a file in the documents folder...)."""


@dataclass(frozen=True, slots=True)
class SourceView:
    """What the page shows of a cited file: its lines as text, or a PDF as it is."""

    path: Path
    """The file (resolved, inside the documents folder)."""
    text: str | None
    """The cited lines with their numbers and some around them; ``None`` for a PDF."""
    page: int | None
    """The cited page of a PDF."""


def source_url(session_id: str, source_id: str) -> str | None:
    """The page's link to a session's cited file, or ``None`` for ids it would refuse."""
    url = f"/api/source/{session_id}/{source_id}"
    return url if SOURCE_VIEW_RE.match(url) else None


def _inside(folder: str, locator: str) -> Path:
    """``locator`` as a file inside ``folder``, every step checked."""
    if not locator or "\x00" in locator:
        raise SourceNotShown("the source names no file")
    posix, windows = PurePosixPath(locator), PureWindowsPath(locator)
    if posix.is_absolute() or windows.is_absolute() or windows.drive:
        raise SourceNotShown(
            f"`{locator}` is an absolute path: only files in the documents folder are shown"
        )
    if ".." in posix.parts or ".." in windows.parts:
        raise SourceNotShown(f"`{locator}` leads out of the documents folder (`..`)")
    root = Path(folder).resolve()
    try:
        target = (root / posix).resolve(strict=True)
    except (OSError, RuntimeError):
        raise SourceNotShown(f"`{locator}` is not in the documents folder any more") from None
    if not target.is_relative_to(root):
        raise SourceNotShown(f"`{locator}` leads out of the documents folder (a link)")
    if not target.is_file():
        raise SourceNotShown(f"`{locator}` is not a file")
    return target


def _numbered(data: bytes, first: int, last: int, header: str) -> str:
    lines = data.decode("utf-8", errors="replace").splitlines()
    first, last = max(1, first), max(first, min(last, len(lines)))
    if first > len(lines):
        raise SourceNotShown(f"{header}: the file has {len(lines)} lines now")
    start, end = max(1, first - CONTEXT_LINES), min(len(lines), last + CONTEXT_LINES)
    width = len(str(end))
    shown = [
        f"{'>' if first <= n <= last else ' '} {n:>{width}} | {lines[n - 1]}"
        for n in range(start, end + 1)
    ]
    return f"{header} (of {len(lines)})\n\n" + "\n".join(shown) + "\n"


def _read(folder: str, locator: str, position: str | None) -> SourceView:
    path = _inside(folder, locator)
    if path.stat().st_size > MAX_BYTES:
        raise SourceNotShown(f"`{locator}` is over {MAX_BYTES // 1_048_576} MB: open it yourself")
    page = _PAGE_RE.match(position or "")
    if page is not None or path.suffix.lower() == ".pdf":
        return SourceView(path, None, int(page.group(1)) if page else None)
    lines = _LINES_RE.match(position or "")
    first = int(lines.group(1)) if lines else 1
    last = int(lines.group(2) or lines.group(1)) if lines else first
    header = f"{locator}, " + (position or "line 1")
    return SourceView(path, _numbered(path.read_bytes(), first, last, header), None)


def _cited(session: Path, source_id: str) -> SourceView:
    try:
        meta = json.loads((session / "session.json").read_text(encoding="utf-8"))
        sources = json.loads((session / "sources.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SourceNotShown(f"no finished research session `{session.name}`") from None
    listed = sources if isinstance(sources, list) else []
    found = next((s for s in listed if isinstance(s, dict) and s.get("id") == source_id), None)
    if found is None:
        raise SourceNotShown(f"the session cites no source {source_id}")
    locator, position = str(found.get("locator") or ""), found.get("position")
    if found.get("kind") != "file":
        raise SourceNotShown(f"{source_id} is a web page: open {locator}")
    docs = meta.get("docs") if isinstance(meta, dict) else None
    if not isinstance(docs, str) or not docs:
        raise SourceNotShown("the session searched no documents folder")
    return _read(docs, locator, position if isinstance(position, str) else None)


async def view_source(session: Path, source_id: str) -> SourceView:
    """The file a research session cites as ``source_id`` (``sources.json``, numbered as
    its report), at its cited lines, from the documents folder in its ``session.json``.

    Raises:
        SourceNotShown: no such session or source, a web page's, no documents folder, or
            a file outside the folder (``..``, absolute, a symlink out), gone or too big.
    """
    return await asyncio.to_thread(_cited, session, source_id)
