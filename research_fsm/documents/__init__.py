"""Your own documents as a research source: a folder of ``.md``, ``.txt``, ``.html`` and
``.pdf`` files, indexed once into SQLite FTS5 (BM25; Japanese searchable through
character bigrams) and kept up to date file by file.

``async with await DocumentIndex.open("./notes") as index: await index.search("jakarta")``
"""

from __future__ import annotations

import os
from pathlib import Path

from ._index import DocumentIndex, default_cache_dir, default_workers
from ._read import KINDS, SkippedFile
from ._terms import CJK
from ._types import (
    DamagedIndex,
    DocumentsError,
    DocumentsNotFound,
    IndexProgress,
    IndexStats,
    NotADirectory,
    Passage,
)

__all__ = [
    "CJK",
    "DOCS_ENV",
    "KINDS",
    "DamagedIndex",
    "DocumentIndex",
    "DocumentsError",
    "DocumentsNotFound",
    "IndexProgress",
    "IndexStats",
    "NotADirectory",
    "Passage",
    "SkippedFile",
    "default_cache_dir",
    "default_workers",
    "documents_folder_from_env",
]

DOCS_ENV = "RESEARCH_DOCS"
"""Environment variable naming the default documents folder."""


def documents_folder_from_env() -> Path | None:
    """``$RESEARCH_DOCS`` as a path, or ``None`` when unset or empty."""
    value = os.environ.get(DOCS_ENV, "").strip()
    return Path(value).expanduser() if value else None
