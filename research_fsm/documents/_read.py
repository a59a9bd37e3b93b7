"""Finding the documents of a folder and reading their text.

Markdown and text are decoded (UTF-8, then CP932 for Japanese Windows files, else
UTF-8 with replacement characters); HTML goes through **inscriptis** (layout-aware
HTML to text; scripts and styles dropped); PDF through **pypdf**, page by page.
Nothing is ever followed out of the folder: symlinks are resolved and checked,
hidden folders are skipped, every folder between the root and a file is opened without
following links when the file is read (a folder swapped for a symlink after discovery
is refused), and only regular files are opened (never a FIFO or a device, so nothing
can hang)."""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["KINDS", "Extracted", "Found", "SkippedFile", "discover", "extract"]

KINDS: Final = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
"""File extensions indexed, and their kind; other files are ignored."""
_TITLE: Final = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_MD_HEADING: Final = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedFile:
    """A file of the folder that was not indexed, and why."""

    path: str
    """Its path relative to the folder."""
    reason: str
    """Why: binary, too large, a symlink leading outside the folder, unreadable, ..."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A candidate file: where it is and what ``stat`` says."""

    path: str
    """Relative posix path."""
    real: Path
    """The file to read (a symlink's target inside the folder)."""
    size: int
    """Bytes."""
    mtime_ns: int
    """Modification time."""
    root: Path | None = None
    """The folder ``real`` is under: every component below it is opened without
    following links."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Extracted:
    """A document's text."""

    kind: str
    """markdown, text, html or pdf."""
    title: str
    """Its title (first heading, ``<title>``, PDF metadata, first line, or file name)."""
    text: str
    """The extracted text."""
    pages: list[int] | None
    """For PDFs, each page's start offset in ``text``."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _check(entry: Path, rel: str, root: Path, limit: int) -> Found | SkippedFile:
    """Stat one candidate (no file is opened)."""
    real = entry
    if entry.is_symlink():
        try:
            real = entry.resolve(strict=True)
        except (OSError, RuntimeError):
            return SkippedFile(path=rel, reason="broken symlink")
        if not _inside(real, root):
            return SkippedFile(path=rel, reason="symlink leading outside the folder (not followed)")
    try:
        info = real.stat()
    except OSError as exc:
        return SkippedFile(path=rel, reason=f"cannot read it ({exc.strerror or exc})")
    if not stat.S_ISREG(info.st_mode):
        return SkippedFile(path=rel, reason="not a regular file")
    if info.st_size > limit:
        mb = info.st_size / 1_048_576
        return SkippedFile(path=rel, reason=f"larger than {limit // 1_048_576} MB ({mb:,.0f} MB)")
    return Found(path=rel, real=real, size=info.st_size, mtime_ns=info.st_mtime_ns, root=root)


def discover(root: Path, *, limit: int, max_files: int) -> tuple[list[Found], list[SkippedFile]]:
    """Every indexable file under ``root`` (sorted), and the ones skipped with why."""
    found: list[Found] = []
    skipped: list[SkippedFile] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in list(dirs):
            if name.startswith(".") or (base / name).is_symlink():
                dirs.remove(name)
                if not name.startswith("."):
                    rel = (base / name).relative_to(root).as_posix()
                    skipped.append(SkippedFile(path=rel, reason="symlinked folder (not followed)"))
        dirs.sort()
        for name in sorted(files):
            if name.startswith(".") or Path(name).suffix.lower() not in KINDS:
                continue
            rel = (base / name).relative_to(root).as_posix()
            if len(found) >= max_files:
                skipped.append(SkippedFile(path=rel, reason=f"more than {max_files:,} files"))
                continue
            checked = _check(base / name, rel, root, limit)
            if isinstance(checked, Found):
                found.append(checked)
            else:
                skipped.append(checked)
    return found, skipped


def _open_below(root: Path, path: Path) -> int:
    """A descriptor of ``path``, a file under ``root``, opened one component at a time
    from ``root`` without following any symlink (``O_NOFOLLOW`` on each folder and on the
    file, through ``dir_fd``): a folder swapped for a symlink since discovery is refused
    (``OSError``) instead of read through."""
    parts = path.relative_to(root).parts
    if not parts or ".." in parts:
        raise OSError(f"{path} is not a file under {root}")
    folder_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            inner = os.open(name, folder_flags, dir_fd=current)
            os.close(current)
            current = inner
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=current)
    finally:
        os.close(current)


def read_bytes(path: Path, root: Path | None = None) -> bytes:
    """The file's bytes, opened without following a symlink swapped in since ``stat``
    (in any folder between ``root`` and the file when ``root`` is given, else in its last
    component) and without blocking on a FIFO; raises ``OSError``."""
    if root is None:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    else:
        fd = _open_below(root, path)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read()


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp932"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def _first_line(text: str, fallback: str) -> str:
    heading = _MD_HEADING.search(text)
    if heading:
        return heading.group(1)[:200]
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:120] if 0 < len(line) <= 120 else fallback


def _pdf(data: bytes, name: str) -> Extracted | str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return "encrypted PDF"
        pages: list[int] = []
        parts: list[str] = []
        position = 0
        for page in reader.pages:
            pages.append(position)
            text = (page.extract_text() or "").strip() + "\n\n"
            parts.append(text)
            position += len(text)
        metadata = reader.metadata
        title = str(metadata.title or "").strip() if metadata is not None else ""
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        return f"unreadable PDF ({type(exc).__name__})"
    text = "".join(parts)
    return Extracted(
        kind="pdf", title=title[:200] or _first_line(text, name), text=text, pages=pages
    )


def _html(data: bytes, name: str) -> Extracted:
    from inscriptis import get_text

    markup = _decode(data)
    found = _TITLE.search(markup)
    title = " ".join(found.group(1).split())[:200] if found else ""
    text = get_text(markup) if markup.strip() else ""
    return Extracted(kind="html", title=title or _first_line(text, name), text=text, pages=None)


def extract(path: Path, kind_of: str, root: Path | None = None) -> Extracted | str:
    """The document's text, or why it cannot be indexed (a ``SkippedFile`` reason);
    ``root``: the folder, every component below which is opened without following links."""
    try:
        data = read_bytes(path, root)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    kind = KINDS[kind_of]
    name = path.name
    if kind == "pdf":
        return _pdf(data, name) if data.startswith(b"%PDF") else "not a PDF file"
    if b"\x00" in data[:8192]:
        return "binary file"
    if kind == "html":
        return _html(data, name)
    text = _decode(data)
    return Extracted(kind=kind, title=_first_line(text, name), text=text, pages=None)
