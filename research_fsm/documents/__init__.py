"""Your own documents as a research source: a folder of ``.md``, ``.txt``, ``.html`` and
``.pdf`` files, indexed once into SQLite FTS5 (BM25; Japanese searchable as words with the ``ja``
extra's segmenter, else as character bigrams) and kept up to date file by file.

``async with await DocumentIndex.open("./notes") as index: await index.search("jakarta")``
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use: a worker process imports only what it runs
    from ._index import DocumentIndex as DocumentIndex
    from ._index import default_cache_dir as default_cache_dir
    from ._index import default_workers as default_workers
    from ._japanese import segmentation as segmentation
    from ._japanese import words as japanese_words
    from ._read import KINDS as KINDS
    from ._read import SkippedFile as SkippedFile
    from ._symbols import SYMBOL as SYMBOL
    from ._terms import CJK as CJK
    from ._types import DamagedIndex as DamagedIndex
    from ._types import DocumentsError as DocumentsError
    from ._types import DocumentsNotFound as DocumentsNotFound
    from ._types import IndexProgress as IndexProgress
    from ._types import IndexStats as IndexStats
    from ._types import NotADirectory as NotADirectory
    from ._types import Passage as Passage
    from ._vectors import EMBEDDER_ENV as EMBEDDER_ENV
    from ._vectors import embedder as embedder
    from ._vectors import multilingual as multilingual
    from ._vectors import passage_text as passage_text
    from ._vectors import similarities as similarities

_WHERE = {
    "DocumentIndex": "._index",
    "default_cache_dir": "._index",
    "default_workers": "._index",
    "japanese_words": "._japanese",
    "segmentation": "._japanese",
    "KINDS": "._read",
    "SkippedFile": "._read",
    "CJK": "._terms",
    "SYMBOL": "._symbols",
    "DamagedIndex": "._types",
    "DocumentsError": "._types",
    "DocumentsNotFound": "._types",
    "IndexProgress": "._types",
    "IndexStats": "._types",
    "NotADirectory": "._types",
    "Passage": "._types",
    "EMBEDDER_ENV": "._vectors",
    "embedder": "._vectors",
    "multilingual": "._vectors",
    "passage_text": "._vectors",
    "similarities": "._vectors",
}

_NAMES = {"japanese_words": "words"}
"""Public names whose private module calls them otherwise."""


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), _NAMES.get(name, name))
    globals()[name] = value
    return value


__all__ = [
    "CJK",
    "DOCS_ENV",
    "EMBEDDER_ENV",
    "KINDS",
    "SYMBOL",
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
    "embedder",
    "japanese_words",
    "multilingual",
    "passage_text",
    "segmentation",
    "similarities",
]

DOCS_ENV = "RESEARCH_DOCS"
"""Environment variable naming the default documents folder."""


def documents_folder_from_env() -> Path | None:
    """``$RESEARCH_DOCS`` as a path, or ``None`` when unset or empty."""
    value = os.environ.get(DOCS_ENV, "").strip()
    return Path(value).expanduser() if value else None
