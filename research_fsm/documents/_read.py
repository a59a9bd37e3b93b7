"""Finding the documents of a folder and reading their text.

Markdown and text are decoded (UTF-8, then CP932 for Japanese Windows files, else
UTF-8 with replacement characters); Markdown is cleaned line for line (``_markdown``),
HTML reduced to its main content (``_html``, lxml), PDF read page by page through
**pdfium**, else pypdf (``_pdf``); a package's ``METADATA`` / ``PKG-INFO`` file is
titled by its ``Name:``.
``extract_data`` never raises: any failure of an extractor is a reason to skip the file.
Nothing is ever followed out of the folder: symlinks are resolved and checked,
hidden folders are skipped, every folder between the root and a file is opened without
following links when the file is read (a folder swapped for a symlink after discovery
is refused), and only regular files are opened (never a FIFO or a device, so nothing
can hang)."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._html import TooDeep, html_text
from ._markdown import markdown_text
from ._pdf import pdf_text
from ._types import Extracted

__all__ = [
    "KINDS",
    "NAMES",
    "Extracted",
    "Found",
    "SkippedFile",
    "discover",
    "extract",
    "extract_data",
    "kind_of",
    "printable",
]

KINDS: Final = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
"""File extensions indexed, and their kind; other files are ignored."""
NAMES: Final = {"METADATA": "metadata", "PKG-INFO": "metadata"}
"""Files indexed by their whole name (a Python package's metadata), and their kind."""
_MD_HEADING: Final = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_MARKUP_TAG: Final = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.S)
"""An HTML tag or comment, over lines too (``<img`` with its attributes on the next ones)."""
_NO_TITLE: Final = re.compile(r"^(?:\.\.\s|:[a-z]+:|\||\[!\[|!\[)")
"""Lines that are no title: an RST directive or field, a table row, a badge, an image."""
_HEADER: Final = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]?(.*)$")
_KEPT_HEADERS: Final = frozenset({"name", "version", "summary"})


def printable(name: str) -> str:
    """``name`` as it can be stored and shown: a file name's bytes that are not UTF-8
    (held by Python as lone surrogates, as ``unzip`` or an old disk leaves them) written
    as ``\\xe9``; any other name as it is."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def kind_of(name: str) -> str | None:
    """The kind of a file by its name (``markdown``, ``text``, ``html``, ``pdf``,
    ``metadata``), or ``None`` when such files are not indexed."""
    return NAMES.get(name) or KINDS.get(Path(name).suffix.lower())


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
    """Every indexable file under ``root`` (sorted), and the ones skipped with why. A
    path that is not UTF-8 is given as ``printable`` writes it."""
    found: list[Found] = []
    skipped: list[SkippedFile] = []
    seen: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in list(dirs):
            if name.startswith(".") or (base / name).is_symlink():
                dirs.remove(name)
                if not name.startswith("."):
                    rel = printable((base / name).relative_to(root).as_posix())
                    skipped.append(SkippedFile(path=rel, reason="symlinked folder (not followed)"))
        dirs.sort()
        for name in sorted(files):
            if name.startswith(".") or kind_of(name) is None:
                continue
            real_rel = (base / name).relative_to(root).as_posix()
            rel = printable(real_rel)
            if rel != real_rel and rel in seen:
                reason = "its name is not UTF-8 and another file is named as it is shown"
                skipped.append(SkippedFile(path=rel, reason=reason))
                continue
            seen.add(rel)
            if len(found) >= max_files:
                skipped.append(SkippedFile(path=rel, reason=f"more than {max_files:,} files"))
                continue
            checked = _check(base / name, rel, root, limit)
            if isinstance(checked, Found):
                found.append(checked)
            else:
                skipped.append(checked)
    return _without_source_copies(found), skipped


_SOURCE_SUFFIXES: Final = (".rst", ".md", ".txt", ".ipynb", ".rest")


def _page_of_source_copy(path: str) -> list[str]:
    """The pages a Sphinx ``_sources`` copy was built into (``_sources/a/b.rst.txt``:
    ``a/b.html`` or, by the ``dirhtml`` builder, ``a/b/index.html``); none for another
    file."""
    parts = path.split("/")
    if "_sources" not in parts[:-1] or not parts[-1].endswith(".txt"):
        return []
    at = len(parts) - 1 - parts[::-1].index("_sources")
    name = parts[-1][: -len(".txt")]
    for suffix in _SOURCE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    page = "/".join([*parts[:at], *parts[at + 1 : -1], name])
    return [f"{page}.html", f"{page}/index.html"]


def _without_source_copies(found: list[Found]) -> list[Found]:
    """``found`` less the Sphinx ``_sources`` copies of its own HTML pages: a page is
    indexed once, as the HTML its readers see (the reST copy would be a second source with
    markup in its title)."""
    paths = {entry.path for entry in found}
    return [
        entry
        for entry in found
        if not any(page in paths for page in _page_of_source_copy(entry.path))
    ]


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
    """A level-1 Markdown heading, else the first line with words before any section
    heading (HTML tags, RST over- and underlines, directives and badges skipped), else
    ``fallback``."""
    heading = _MD_HEADING.search(text)
    if heading:
        return heading.group(1)[:200]
    for raw in _MARKUP_TAG.sub(" ", text[:20_000]).splitlines():
        line = " ".join(raw.split())
        if not line or _NO_TITLE.match(line) or not re.search(r"[^\W\d_]", line):
            continue  # markup only, an over- or underline of punctuation, a badge
        if line.startswith("##"):
            return fallback  # a section begins before any lead text: the file has no title
        return line[:120] if len(line) <= 120 else fallback
    return fallback


def _html(data: bytes, name: str) -> Extracted | str:
    try:
        page = html_text(_decode(data))
    except TooDeep as exc:
        return str(exc)
    return Extracted(
        kind="html",
        title=page.title or _first_line(page.text, name),
        text=page.text,
        pages=None,
        headings=page.headings,
        anchors=page.anchors,
        blocks=page.blocks,
    )


def _markdown(text: str, name: str, kind: str = "markdown") -> Extracted:
    clean = markdown_text(text)
    title = clean.title or _first_line(clean.text, name)
    return Extracted(kind=kind, title=title, text=clean.text, pages=None, headings=clean.headings)


def _metadata(text: str, name: str) -> Extracted:
    """A package's metadata: titled by ``Name:``; of the headers only name, version and
    summary are kept (line for line), the description after them read as Markdown."""
    lines = text.split("\n")
    package = ""
    for number, line in enumerate(lines):
        if not line.strip():
            break
        header = _HEADER.match(line)
        if header is None:
            continue  # a continuation line
        if header.group(1).lower() == "name":
            package = header.group(2).strip()
        if header.group(1).lower() not in _KEPT_HEADERS:
            lines[number] = ""
    body = _markdown("\n".join(lines), name, "metadata")
    return Extracted(
        kind="metadata",
        title=package[:200] or body.title,
        text=body.text,
        pages=None,
        headings=body.headings,
    )


def extract_data(data: bytes, kind: str, name: str) -> Extracted | str:
    """The text of a file's bytes, or why it cannot be indexed; never raises (any
    failure of an extractor is a reason, naming the exception)."""
    try:
        if kind == "pdf":
            return pdf_text(data, name) if data.startswith(b"%PDF") else "not a PDF file"
        if b"\x00" in data[:8192]:
            return "binary file"
        if kind == "html":
            return _html(data, name)
        text = _decode(data)
        if kind == "metadata" or (kind == "text" and text.startswith("Metadata-Version:")):
            return _metadata(text, name)
        if kind == "markdown":
            return _markdown(text, name)
        return Extracted(kind=kind, title=_first_line(text, name), text=text, pages=None)
    except RecursionError:
        return "extractor failed (too deeply nested)"
    except Exception as exc:  # any extractor failure skips the file
        detail = " ".join(str(exc).split())[:120]
        return f"extractor failed ({type(exc).__name__}{': ' + detail if detail else ''})"


def extract(path: Path, kind_of_file: str, root: Path | None = None) -> Extracted | str:
    """The document's text, or why it cannot be indexed (a ``SkippedFile`` reason);
    ``kind_of_file``: its kind (``kind_of``); ``root``: the folder, every component below
    which is opened without following links."""
    try:
        data = read_bytes(path, root)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    return extract_data(data, kind_of_file, path.name)
