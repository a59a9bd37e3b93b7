"""What the document index hands out: passages, statistics, and its errors; and what
reading one file gives (``Extracted``, from ``_read`` and ``_pdf``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ResearchError

__all__ = [
    "DamagedIndex",
    "DocumentsError",
    "DocumentsNotFound",
    "Extracted",
    "IndexProgress",
    "IndexStats",
    "NotADirectory",
    "Passage",
]


class DocumentsError(ResearchError, ValueError):
    """A documents folder that cannot be used."""


class DocumentsNotFound(DocumentsError):
    """The folder does not exist."""


class NotADirectory(DocumentsError):
    """The path is a file (or something else), not a folder."""


class DamagedIndex(DocumentsError):
    """The index file turned out damaged while in use: it was removed, and the next
    ``DocumentIndex.open`` of the folder rebuilds it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """A piece of a document that matched a search."""

    path: str
    """The file's path relative to the folder (posix)."""
    title: str
    """The document's title."""
    text: str
    """The passage, exactly as in the file's extracted text (``text[start:end]``)."""
    start: int
    """Offset of its first character in the extracted text."""
    end: int
    """Offset after its last character."""
    line_start: int
    """First line (1-based) of the extracted text it covers."""
    line_end: int
    """Last line it covers."""
    page: int | None
    """The PDF page it is on (1-based), else ``None``."""
    heading: str | None
    """The heading it sits under (the innermost), if any."""
    score: float
    """BM25 relevance (higher is better)."""
    headings: tuple[str, ...] = ()
    """Its heading path, outermost first (``("Quickstart", "HTTP/2")``); ``heading`` is
    the last."""

    def locator(self) -> str:
        """Where it is, for a citation: ``notes/a.md, lines 3-9`` or ``guide.pdf, page 2``;
        the lines are the file's own (for HTML, of its source)."""
        if self.page is not None:
            return f"{self.path}, page {self.page}"
        lines = (
            f"line {self.line_start}"
            if self.line_start == self.line_end
            else f"lines {self.line_start}-{self.line_end}"
        )
        return f"{self.path}, {lines}"


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexStats:
    """What opening the index did."""

    files: int
    """Files in the index."""
    passages: int
    """Passages in the index."""
    read: int
    """Files read (new or changed) by this open."""
    reused: int
    """Files whose index entries were kept."""
    removed: int
    """Files gone from the folder, removed from the index."""
    seconds: float
    """How long opening took."""
    bytes_read: int
    """Bytes of the files read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexProgress:
    """How far opening an index is: one per file looked at (at most ten a second), and
    a last one with ``finished``."""

    files_done: int
    """Files looked at so far (read, reused or skipped)."""
    files_total: int
    """Files found in the folder."""
    bytes_done: int
    """Bytes of the files looked at so far."""
    bytes_total: int
    """Bytes of all the files found."""
    read: int
    """Files read and indexed so far (new or changed)."""
    seconds: float
    """Time since the indexing started."""
    finished: bool = False
    """True on the last event."""

    def bytes_per_second(self) -> float:
        """Throughput so far."""
        return self.bytes_done / self.seconds if self.seconds > 0 else 0.0

    def eta_seconds(self) -> float | None:
        """Seconds left at the throughput so far (``None`` before any is known)."""
        rate = self.bytes_per_second()
        if self.finished:
            return 0.0
        return (self.bytes_total - self.bytes_done) / rate if rate > 0 else None

    def bar(self, width: int = 24) -> str:
        """``[#######.....]  120/530 files  3.1 MB/s  ETA 12s``: the line a terminal shows."""
        share = self.files_done / self.files_total if self.files_total else 1.0
        filled = round(share * width)
        eta = self.eta_seconds()
        left = "ETA --" if eta is None else f"ETA {eta:.0f}s"
        if self.finished:
            left = f"done in {self.seconds:.1f}s"
        mbs = self.bytes_per_second() / 1_048_576
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.files_done}/{self.files_total}"
            f" files  {mbs:.1f} MB/s  {left}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Extracted:
    """A document's text."""

    kind: str
    """markdown, text, html, pdf or metadata."""
    title: str
    """Its title (first heading, ``<title>``, PDF metadata, ``Name:``, first line, or
    file name)."""
    text: str
    """The extracted text."""
    pages: list[int] | None
    """For PDFs, each page's start offset in ``text``."""
    headings: list[tuple[int, int, str]] | None = None
    """``(offset, level, heading)`` of its headings; ``None``: Markdown ``#`` lines."""
    anchors: list[tuple[int, int]] | None = None
    """``(offset, line of the file)`` where a block of ``text`` starts (HTML); ``None``:
    the text's lines are the file's."""
    blocks: list[tuple[int, int]] | None = None
    """``(start, end)`` of each paragraph, list, table or code block of ``text``, when
    the extractor knows them (HTML); ``None``: found again at blank lines."""
