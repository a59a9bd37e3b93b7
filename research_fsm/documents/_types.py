"""What the document index hands out: passages, statistics, and its errors."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ResearchError

__all__ = [
    "DamagedIndex",
    "DocumentsError",
    "DocumentsNotFound",
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
    """The Markdown heading it sits under, if any."""
    score: float
    """BM25 relevance (higher is better)."""

    def locator(self) -> str:
        """Where it is, for a citation: ``notes/a.md, lines 3-9`` or ``guide.pdf, page 2``."""
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
