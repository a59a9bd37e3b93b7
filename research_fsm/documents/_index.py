"""``DocumentIndex``: a folder's passages in an SQLite FTS5 index ranked by BM25.

Why FTS5: it ships with Python's ``sqlite3`` (no dependency), its ``bm25()`` is the
standard ranking function, the index is one file on disk that updates file by file,
and SQLite's locking lets two processes open it at once. English words are stemmed
(``porter``), Japanese and Chinese as words, or character bigrams without a segmenter
(``_terms``; the segmentation is part of the schema: another one rebuilds the index).

The index lives in ``cache_dir`` (default ``$RESEARCH_FSM_HOME/indexes``), never in
the user's folder, as ``<sha256 of the folder's path>.sqlite``. Each file's size,
modification time and content hash are kept: a second ``open`` re-reads only the
files that changed (a touched but unchanged file is not re-indexed).

Any number of processes may open one folder's index at once: a refresh holds an
exclusive ``flock`` on ``<index>.lock`` and reads what is known only under it (a second
process waits, then finds the files indexed). Each passage's text is stored with it, so
a search never reads a whole document. An index path that is no index (a folder, a
symlink, a FIFO, bytes SQLite cannot read) is moved aside as ``<name>.damaged-<ns>`` and
rebuilt.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import queue
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TypeVar, cast

import structlog

from .._home import default_home
from .._tracing import search_span
from ._japanese import segmentation
from ._pdf import pdfium_installed
from ._read import Found, SkippedFile, discover, kind_of, printable, read_bytes
from ._terms import cjk_terms, query_terms
from ._types import (
    DamagedIndex,
    DocumentsNotFound,
    IndexProgress,
    IndexStats,
    NotADirectory,
    Passage,
)
from ._vectors import (
    Embedder,
    contextual,
    embedder,
    from_blobs,
    passage_text,
    query_vector,
    sync_vectors,
)
from ._work import HEADING_SEPARATOR, Job, Work, index_body
from ._workers import TIMEOUT, Workers

__all__ = ["DocumentIndex", "default_cache_dir", "default_workers"]

_log = structlog.get_logger(__name__)
SCHEMA: Final = "research-fsm-documents-8"
RACY_NS: Final = 2_000_000_000
"""Files modified this close (ns) before the last check are hashed again."""
DATA_SOURCE: Final = "documents"  # the data source name on search spans
_TABLES: Final = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL, kind TEXT NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL);
CREATE TABLE passages(id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, start INTEGER NOT NULL,
    end INTEGER NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, page INTEGER,
    heading TEXT, text TEXT NOT NULL);
CREATE INDEX passages_file ON passages(file_id);
CREATE VIRTUAL TABLE fts USING fts5(body, title, content='',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE vectors(id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""


def _schema() -> str:
    """The schema version and how CJK text is segmented (words or bigrams)."""
    return f"{SCHEMA}+{segmentation()}"


def default_cache_dir() -> Path:
    """``indexes`` in the assistant's home (``$RESEARCH_FSM_HOME``)."""
    return default_home() / "indexes"


_SUFFIXES: Final = ("", "-wal", "-shm")
"""The index's files: the database, its write-ahead log and its shared memory."""


def _move_aside(path: Path, reason: str) -> None:
    """Rename ``path`` (whatever it is) to ``<name>.damaged-<ns>`` beside it."""
    aside = path.with_name(f"{path.name}.damaged-{time.time_ns()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    _log.warning("document index path moved aside", path=str(path), to=str(aside), reason=reason)


def _what(path: Path) -> str | None:
    """Why ``path`` is no file the index can use (``None``: a regular file, or nothing)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symlink"
    if stat.S_ISDIR(info.st_mode):
        return "a folder"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    return None


def _passage(row: Sequence[Any], score: float) -> Passage:
    """A stored passage (path, title, text, start, end, first and last line, page,
    heading path) with its score."""
    path, title, text, start, end, first, last, page, heading = row
    return Passage(
        path=path,
        title=title,
        text=text,
        start=start,
        end=end,
        line_start=first,
        line_end=last,
        page=page,
        heading=heading.split(HEADING_SEPARATOR)[-1] if heading else None,
        score=score,
        headings=tuple(heading.split(HEADING_SEPARATOR)) if heading else (),
    )


def _connect(path: Path) -> sqlite3.Connection:
    for suffix in _SUFFIXES:
        part = Path(f"{path}{suffix}")
        odd = _what(part)
        if odd is not None:
            _move_aside(part, odd)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    db = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        db.close()
        raise
    return db


def _open_db(path: Path, folder: Path, again: bool = False) -> sqlite3.Connection:
    """The index database, (re)created when missing, damaged or of another version
    (the caller holds the index's lock)."""
    db: sqlite3.Connection | None = None
    try:
        db = _connect(path)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            db.executescript(_TABLES)
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("schema", _schema()), ("folder", printable(str(folder)))],
            )
            return db
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and row[0] == _schema():
            db.execute("SELECT count(*) FROM fts").fetchone()
            return db
        db.close()
        _log.warning("document index rebuilt", index=str(path), reason="another schema version")
        for suffix in _SUFFIXES:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    except (sqlite3.DatabaseError, OSError) as exc:
        if db is not None:
            db.close()
        if again:
            raise
        for suffix in _SUFFIXES:
            _move_aside(Path(f"{path}{suffix}"), f"damaged ({exc})")
    return _open_db(path, folder, again=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the index ``path`` (``flock`` on ``<path>.lock``;
    waits for another process refreshing it). A lock path that is no regular file is
    moved aside first."""
    lock = Path(f"{path}.lock")
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    odd = _what(lock)
    if odd is not None:
        _move_aside(lock, odd)
    fd = os.open(lock, flags, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log.info("waiting for another process indexing this folder", index=str(path))
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


PROGRESS_EVERY: Final = 0.1
"""Seconds between two progress events (the first and last are always sent)."""
_Old = tuple[int, int, int, str]
"""A file already indexed: its id, size, modification time and SHA-256."""


def default_workers() -> int:
    """Worker processes for extraction: one per core."""
    return max(1, os.cpu_count() or 1)


class _Builder:
    """One refresh of the index against the folder (runs in a worker thread; the text
    extraction in a process pool)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        progress: Callable[[IndexProgress], None] | None = None,
        workers: int = 1,
        timeout: float = TIMEOUT,
    ) -> None:
        self.db = db
        self.timeout = timeout
        self.read = self.reused = self.bytes_read = 0
        self.racy_after = -1
        self.skipped: list[SkippedFile] = []
        self.progress = progress
        self.workers = workers
        self.started = time.perf_counter()
        self.done = self.bytes_done = self.files_total = self.bytes_total = 0
        self.last_event = -1.0
        self.next_passage = 1
        """The id of the next passage stored."""

    def refresh(self, files: list[Found]) -> int:
        self.files_total = len(files)
        self.bytes_total = sum(found.size for found in files)
        now = time.time_ns()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            # what is known is read under the write lock: another process may have
            # indexed the folder while this one waited for it
            known = {
                row[0]: row[1:]
                for row in self.db.execute("SELECT path, id, size, mtime_ns, sha256 FROM files")
            }
            checked = self.db.execute("SELECT value FROM meta WHERE key='checked_ns'").fetchone()
            # a file modified within the timestamp granularity of the last check may have
            # changed again with the same size and mtime: such files are hashed again
            self.racy_after = int(checked[0]) - RACY_NS if checked else -1
            # passage ids are given here (the write lock is held): one insert per file
            row = self.db.execute("SELECT coalesce(max(id), 0) + 1 FROM passages").fetchone()
            self.next_passage = int(row[0])
            olds = [(found, known.pop(found.path, None)) for found in files]
            self._all(olds)
            for file_id, *_ in known.values():
                self._drop(file_id)
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('checked_ns', ?)", (str(now),))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self._tick(force=True, finished=True)
        return len(known)

    def _all(self, olds: list[tuple[Found, _Old | None]]) -> None:
        """Reuse what is unchanged; extract the rest in worker processes, each file under
        the time limit (however few they are)."""
        changed = [(f, old) for f, old in olds if not self._unchanged(f, old)]
        self._tick(force=True)
        count = min(self.workers, len(changed))
        if count < 1:
            return
        # the largest first: a big file left for last would keep one worker busy while
        # the others idle
        changed.sort(key=lambda item: item[0].size, reverse=True)
        workers = Workers(count, timeout=self.timeout)
        waiting: dict[int, tuple[Found, _Old | None]] = {}

        def drain(block: bool = False) -> None:
            while waiting:
                try:
                    key, work = workers.results.get(block=block)
                except queue.Empty:
                    return
                self._store(*waiting.pop(cast(int, key)), work)

        try:
            for number, (found, old) in enumerate(changed):
                job = self._job(found, old)
                if job is not None:
                    waiting[number] = (found, old)
                    workers.submit((number, job), drain)
                drain()
            while waiting:
                drain(block=True)
        finally:
            workers.close()
            workers.join()

    def _unchanged(self, found: Found, old: _Old | None) -> bool:
        same = old is not None and (old[1], old[2]) == (found.size, found.mtime_ns)
        if same and found.mtime_ns < self.racy_after:
            self.reused += 1
            self._count(found)
            return True
        return False

    def _job(self, found: Found, old: _Old | None) -> Job | None:
        """The job for a file that is new or may have changed: a new one is read by the
        job; one indexed before is read and hashed here, and is no job when its bytes
        are the same."""
        kind = kind_of(found.real.name) or kind_of(found.path) or "text"
        root = str(found.root) if found.root is not None else None
        name = printable(found.real.name)
        if old is None:
            return str(found.real), root, None, kind, name
        try:
            data = read_bytes(found.real, found.root)
        except OSError as exc:
            self.skipped.append(SkippedFile(path=found.path, reason=f"cannot read it ({exc})"))
            self._drop(old[0])
            self._count(found)
            return None
        if old[3] == hashlib.sha256(data).hexdigest():
            self.db.execute(
                "UPDATE files SET size=?, mtime_ns=? WHERE id=?",
                (found.size, found.mtime_ns, old[0]),
            )
            self.reused += 1
            self._count(found)
            return None
        return str(found.real), root, data, kind, name

    def _count(self, found: Found) -> None:
        self.done += 1
        self.bytes_done += found.size
        self._tick()

    def _tick(self, *, force: bool = False, finished: bool = False) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        if not force and now - self.last_event < PROGRESS_EVERY and self.done < self.files_total:
            return
        self.last_event = now
        self.progress(
            IndexProgress(
                files_done=self.done,
                files_total=self.files_total,
                bytes_done=self.bytes_done,
                bytes_total=self.bytes_total,
                read=self.read,
                seconds=now - self.started,
                finished=finished,
            )
        )

    def _store(self, found: Found, old: _Old | None, work: Work) -> None:
        digest, prepared = work
        if old is not None:
            self._drop(old[0])
        self._count(found)
        if isinstance(prepared, str):
            self.skipped.append(SkippedFile(path=found.path, reason=prepared))
            return
        self.read += 1
        self.bytes_read += found.size
        cursor = self.db.execute(
            "INSERT INTO files(path, size, mtime_ns, sha256, kind, title, text) VALUES (?,?,?,?,?,?,?)",
            (
                found.path,
                found.size,
                found.mtime_ns,
                digest,
                prepared.kind,
                prepared.title,
                prepared.text,
            ),
        )
        file_id = cursor.lastrowid
        spans = prepared.spans
        first = self.next_passage
        self.next_passage += len(spans)
        text, title = prepared.text, cjk_terms(prepared.title)
        self.db.executemany(
            "INSERT INTO passages(id, file_id, start, end, line_start, line_end, page, heading,"
            " text) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (first + number, file_id, *span, text[span[0] : span[1]])
                for number, span in enumerate(spans)
            ],
        )
        self.db.executemany(
            "INSERT INTO fts(rowid, body, title) VALUES (?,?,?)",
            [
                (first + number, body if body is not None else text[span[0] : span[1]], title)
                for number, (span, body) in enumerate(zip(spans, prepared.bodies, strict=True))
            ],
        )

    def _drop(self, file_id: int) -> None:
        # the index keeps no copy of the passages (``content=''``): deleting one names
        # the values it was indexed with, made again as ``_store`` made them
        row = self.db.execute("SELECT title FROM files WHERE id=?", (file_id,)).fetchone()
        if row is not None:
            title = cjk_terms(row[0])
            passages = self.db.execute(
                "SELECT id, text FROM passages WHERE file_id=?", (file_id,)
            ).fetchall()
            self.db.executemany(
                "INSERT INTO fts(fts, rowid, body, title) VALUES ('delete', ?, ?, ?)",
                [(id_, index_body(text), title) for id_, text in passages],
            )
        self.db.execute(
            "DELETE FROM vectors WHERE id IN (SELECT id FROM passages WHERE file_id=?)", (file_id,)
        )
        self.db.execute("DELETE FROM passages WHERE file_id=?", (file_id,))
        self.db.execute("DELETE FROM files WHERE id=?", (file_id,))


def _discard(db: sqlite3.Connection) -> str:
    """Close ``db`` and delete its files; the path it had."""
    path = next((str(row[2]) for row in db.execute("PRAGMA database_list") if row[1] == "main"), "")
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if path:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


_said: list[bool] = []


def _say_pdf_engine(files: list[Found]) -> None:
    """Warn once a process when PDFs are read without pdfium."""
    if _said or not any(kind_of(found.path) == "pdf" for found in files):
        return
    _said.append(True)
    if not pdfium_installed():
        _log.warning(
            "pypdfium2 is not installed: PDFs are read with pypdf (slower, words may be split"
            " or run together); pip install pypdfium2"
        )


def _check_folder(folder: str | os.PathLike[str]) -> Path:
    path = Path(folder).expanduser()
    if not path.exists():
        raise DocumentsNotFound(f"the documents folder {str(path)!r} does not exist")
    if not path.is_dir():
        raise NotADirectory(f"{str(path)!r} is not a folder; give the folder of your documents")
    return path.resolve()


def _build(
    folder: Path,
    cache_dir: Path,
    limit: int,
    max_files: int,
    progress: Callable[[IndexProgress], None] | None = None,
    workers: int = 1,
    timeout: float = TIMEOUT,
) -> tuple[sqlite3.Connection, IndexStats, list[SkippedFile]]:
    started = time.perf_counter()
    cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = hashlib.sha256(str(folder).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    files, skipped = discover(folder, limit=limit, max_files=max_files)
    _say_pdf_engine(files)
    path = cache_dir / f"{name}.sqlite"
    with _locked(path):
        db = _open_db(path, folder)
        try:
            builder = _Builder(db, progress, workers, timeout)
            removed = builder.refresh(files)
            embedded = time.perf_counter()
            made = sync_vectors(db, embedder())
            if made:
                _log.info(
                    "passages embedded",
                    passages=made,
                    seconds=round(time.perf_counter() - embedded, 3),
                )
            counts = db.execute(
                "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM passages)"
            )
            total_files, total_passages = counts.fetchone()
        except BaseException:
            db.close()
            raise
    stats = IndexStats(
        files=total_files,
        passages=total_passages,
        read=builder.read,
        reused=builder.reused,
        removed=removed,
        seconds=round(time.perf_counter() - started, 4),
        bytes_read=builder.bytes_read,
    )
    for skip in [*skipped, *builder.skipped]:
        _log.warning("document skipped", path=skip.path, reason=skip.reason)
    return db, stats, [*skipped, *builder.skipped]


_SEARCH: Final = """
SELECT f.path, f.title, p.text, p.start, p.end, p.line_start, p.line_end, p.page, p.heading,
       best.rank
FROM (SELECT rowid, bm25(fts, 1.0, 0.5) AS rank FROM fts WHERE fts MATCH ?
      ORDER BY rank LIMIT ?) AS best
JOIN passages p ON p.id = best.rowid JOIN files f ON f.id = p.file_id
ORDER BY best.rank
"""
"""The best passages ranked on the full-text index alone (only row ids and ranks are
sorted), then their own text: a search never reads a whole document."""


_NEAREST: Final = """
SELECT p.id, f.path, f.title, substr(f.text, p.start + 1, p.end - p.start), p.start, p.end,
       p.line_start, p.line_end, p.page, p.heading
FROM passages p JOIN files f ON f.id = p.file_id WHERE p.id IN ({})
"""

T = TypeVar("T")
_Row = tuple[str, str, str, int, int, int, int, int | None, str | None, float]


class DocumentIndex:
    """A folder of ``.md``, ``.txt``, ``.html`` and ``.pdf`` files, searchable by BM25.

    Open with ``await DocumentIndex.open(folder)`` (indexes new and changed files);
    close with ``await index.aclose()`` or use ``async with``.
    """

    def __init__(
        self, folder: Path, db: sqlite3.Connection, stats: IndexStats, skipped: list[SkippedFile]
    ) -> None:
        self.folder = folder
        """The folder (resolved)."""
        self.stats = stats
        """What opening did."""
        self.skipped = skipped
        """Files not indexed, and why."""
        self._db = db
        self._lock = asyncio.Lock()
        self._vectors: tuple[tuple[int, int], Any, Any] | None = None
        """The stored vectors as read last: (their count and last id, ids, matrix)."""

    @classmethod
    async def open(
        cls,
        folder: str | os.PathLike[str],
        *,
        cache_dir: Path | None = None,
        max_file_bytes: int = 50 * 1024 * 1024,
        max_files: int = 20_000,
        progress: Callable[[IndexProgress], object] | None = None,
        workers: int | None = None,
        extract_timeout: float = TIMEOUT,
    ) -> DocumentIndex:
        """Index ``folder`` (only what changed since the last time) and open it.

        ``progress`` is called on the event loop's thread with an ``IndexProgress`` as
        files are looked at (at most ten times a second, and once at the end);
        ``workers``: processes extracting text (default: one per core; never fewer
        than one: every file is extracted in a worker process, which is stopped after
        ``extract_timeout`` seconds on one file). A file that cannot be read or
        extracted in time is skipped, with a warning naming it, and listed in
        ``skipped``. Other processes may open the same folder at once: a refresh waits
        for theirs."""
        if not extract_timeout > 0:
            raise ValueError(f"extract_timeout must be a positive number, got {extract_timeout!r}")
        path = _check_folder(folder)
        cache = cache_dir if cache_dir is not None else default_cache_dir()
        report: Callable[[IndexProgress], None] | None = None
        if progress is not None:
            loop = asyncio.get_running_loop()
            callback = progress

            def report(event: IndexProgress) -> None:
                loop.call_soon_threadsafe(callback, event)

        count = default_workers() if workers is None else max(1, workers)
        db, stats, skipped = await asyncio.to_thread(
            _build, path, cache, max_file_bytes, max_files, report, count, extract_timeout
        )
        _log.info(
            "documents indexed",
            folder=str(path),
            files=stats.files,
            read=stats.read,
            reused=stats.reused,
            removed=stats.removed,
            seconds=stats.seconds,
        )
        return cls(path, db, stats, skipped)

    async def search(
        self, query: str, *, limit: int = 10, match: Literal["all", "any"] = "all"
    ) -> list[Passage]:
        """Passages holding every term of ``query`` (``any``: at least one), best first.
        The query is plain text: FTS5 operators in it are searched as words."""
        if match not in ("all", "any"):
            raise ValueError(f"match must be 'all' or 'any', got {match!r}")
        with search_span(DATA_SOURCE, query) as span:
            passages = await self._search(query, limit, match)
            span.set_attribute("research_fsm.search.results", len(passages))
            return passages

    async def _search(self, query: str, limit: int, match: str) -> list[Passage]:
        terms = query_terms(query)
        if not terms or limit < 1:
            return []
        expression = (" AND " if match == "all" else " OR ").join(f'"{t}"' for t in terms)
        rows = await self._read(self._query, expression, limit)
        return [_passage(row[:-1], -row[-1]) for row in rows]

    @property
    def semantic(self) -> str | None:
        """The embedding model passages are also found by (``None``: words alone)."""
        model = embedder()
        return model.name if model is not None else None

    async def nearest(self, query: str, *, limit: int = 10) -> list[Passage]:
        """The passages closest in meaning to ``query`` (cosine of the embedding model's
        vectors, as ``score``), best first; none without a model (``semantic``)."""
        model = embedder()
        if model is None or limit < 1 or not query.strip():
            return []
        with search_span(DATA_SOURCE, query) as span:
            passages = await self._read(self._nearest, model, query, limit)
            span.set_attribute("research_fsm.search.results", len(passages))
            return passages

    def _stored(self, model: Embedder) -> tuple[Any, Any] | None:
        """The stored vectors' passage ids and matrix (read again when they changed), or
        ``None`` when they are another model's."""
        import numpy as np

        stored = self._db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
        if stored is None or stored[0] != model.name:
            return None
        key = tuple(
            self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM vectors").fetchone()
        )
        if self._vectors is None or self._vectors[0] != key:
            rows = self._db.execute("SELECT id, vec FROM vectors ORDER BY id").fetchall()
            ids = np.array([row[0] for row in rows], dtype=np.int64)
            self._vectors = (key, ids, from_blobs([row[1] for row in rows], model.dim))
        return self._vectors[1], self._vectors[2]

    async def similarity(self, query: str, passages: Sequence[Passage]) -> list[float] | None:
        """Each passage's similarity to ``query`` by its stored vector (one not stored is
        embedded now); ``None`` without a model."""
        model = embedder()
        if model is None:
            return None
        return await self._read(self._similarity, model, query, list(passages))

    def _similarity(self, model: Embedder, query: str, passages: list[Passage]) -> list[float]:
        import numpy as np

        wanted = query_vector(model, query)
        stored = self._stored(model)
        out: list[float] = []
        for passage in passages:
            row = self._db.execute(
                "SELECT p.id FROM passages p JOIN files f ON f.id = p.file_id"
                " WHERE f.path = ? AND p.start = ? AND p.end = ?",
                (passage.path, passage.start, passage.end),
            ).fetchone()
            at = -1
            if stored is not None and row is not None:
                at = int(np.searchsorted(stored[0], row[0]))
                if at >= len(stored[0]) or stored[0][at] != row[0]:
                    at = -1
            if at >= 0 and stored is not None:
                out.append(round(float(stored[1][at] @ wanted), 4))
            else:
                text = passage_text(
                    passage.title, passage.headings, passage.text, context=contextual(model)
                )
                out.append(round(float(model.embed([text])[0] @ wanted), 4))
        return out

    def _nearest(self, model: Embedder, query: str, limit: int) -> list[Passage]:
        import numpy as np

        stored = self._stored(model)
        if stored is None or not len(stored[0]):
            return []
        ids, matrix = stored
        similarity = matrix @ query_vector(model, query)
        count = min(limit, len(ids))
        top = np.argpartition(-similarity, count - 1)[:count]
        top = top[np.argsort(-similarity[top], kind="stable")]
        wanted = [int(ids[i]) for i in top]
        scores = {int(ids[i]): float(similarity[i]) for i in top}
        sql = _NEAREST.format(",".join("?" * len(wanted)))
        found = {row[0]: row[1:] for row in self._db.execute(sql, wanted)}
        passages = []
        for number in wanted:
            if number not in found:
                continue
            passages.append(_passage(found[number], round(scores[number], 4)))
        return passages

    def _query(self, expression: str, limit: int) -> list[_Row]:
        return list(self._db.execute(_SEARCH, (expression, limit)))

    def _text_of(self, path: str) -> tuple[str] | None:
        row: tuple[str] | None = self._db.execute(
            "SELECT text FROM files WHERE path=?", (path,)
        ).fetchone()
        return row

    async def _read(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the index in a worker thread; damage found on the way removes
        the index file (rebuilt at the next open) and raises ``DamagedIndex``."""
        async with self._lock:
            try:
                return await asyncio.to_thread(work, *args)
            except sqlite3.DatabaseError as exc:
                path = await asyncio.to_thread(_discard, self._db)
                _log.warning("document index damaged; removed", index=path, error=str(exc))
                raise DamagedIndex(
                    f"the document index {path} is damaged ({exc}); it was removed and is "
                    f"rebuilt when {self.folder} is opened again"
                ) from None

    async def document_text(self, path: str) -> str:
        """The extracted text of the indexed file ``path`` (relative to the folder)."""
        row = await self._read(self._text_of, path)
        if row is None:
            raise KeyError(f"{path!r} is not an indexed file of {self.folder}")
        return str(row[0])

    async def frequencies(self, words: list[str]) -> tuple[int, dict[str, int]]:
        """The number of passages, and of passages holding each of ``words`` (stemmed as
        the index stems them; a word of several tokens, "http/2", as a phrase): what
        inverse document frequencies are computed from."""
        return await self._read(self._frequencies, words)

    async def names(self) -> frozenset[str]:
        """The lower-case words of every indexed file's name and title: what a question
        names when it names a document ("starlette" for ``starlette.md``). A title that
        is a sentence (a README's first line, "An ASGI web server, for Python.") names
        nothing: its words are what documents say, not what they are called."""
        return await self._read(self._names)

    def _names(self) -> frozenset[str]:
        found: set[str] = set()
        for path, title in self._db.execute("SELECT path, title FROM files"):
            stem = str(path).rsplit("/", 1)[-1].rsplit(".", 1)[0]
            name = "" if str(title).rstrip().endswith((".", "!", "?", ":")) else title
            found.update(query_terms(f"{stem} {name}"))
        return frozenset(found)

    def _frequencies(self, words: list[str]) -> tuple[int, dict[str, int]]:
        total = int(self._db.execute("SELECT count(*) FROM passages").fetchone()[0])
        counts: dict[str, int] = {}
        for word in words:
            found = query_terms(word)
            if not found:
                continue
            expression = '"' + " ".join(found) + '"'  # its tokens as a phrase
            row = self._db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (expression,))
            counts[word] = int(row.fetchone()[0])
        return total, counts

    async def aclose(self) -> None:
        """Close the index file."""
        async with self._lock:
            await asyncio.to_thread(self._db.close)

    async def __aenter__(self) -> DocumentIndex:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
