"""An index that holds up: processes refreshing one index at once, file names that are
not UTF-8, search that never reads a whole document, a time limit on every extraction,
HTML nested too deep to parse, and an index path that is no index file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from research_fsm.documents import DocumentIndex

ROOT = Path(__file__).resolve().parents[2]
_OPENER = """
import asyncio, json, logging, sys
from pathlib import Path
import structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
from research_fsm.documents import DocumentIndex

async def main():
    start = Path(sys.argv[3])
    while not start.exists():
        await asyncio.sleep(0.01)
    async with await DocumentIndex.open(sys.argv[1], cache_dir=Path(sys.argv[2])) as index:
        hits = await index.search("needle")
        print(json.dumps([index.stats.files, len(index.skipped), len(hits)]))

asyncio.run(main())
"""


def notes(folder: Path, count: int, word: str = "needle") -> None:
    """``count`` Markdown notes; the first holds ``word``."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        said = word if number == 0 else f"hay{number}"
        text = f"# Note {number}\n\n" + f"Paragraph about {said} and more. " * 10 + "\n"
        (folder / f"note-{number:02d}.md").write_text(text, encoding="utf-8")


def open_at_once(folder: Path, cache: Path, count: int) -> list[list[int]]:
    """``count`` separate processes opening ``folder``'s index at the same moment."""
    start = cache.parent / f"start-{time.monotonic_ns()}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(folder), str(cache), str(start)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    time.sleep(0.5)  # every interpreter started and waiting
    start.touch()
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert 0 == process.returncode, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.slow  # eight processes, each with its extraction workers: a process race
async def test_processes_refreshing_one_index_at_once_all_succeed(tmp_path: Path) -> None:
    """Four processes open a new index together, then again after an edit: each sees
    every file, none fails; a later open reuses them all."""
    folder, cache = tmp_path / "docs", tmp_path / "cache"
    notes(folder, 30)
    assert [[30, 0, 1]] * 4 == open_at_once(folder, cache, 4)
    (folder / "note-05.md").write_text("# Note 5\n\nA needle here too.\n", encoding="utf-8")
    (folder / "note-29.md").unlink()
    assert [[29, 0, 2]] * 4 == open_at_once(folder, cache, 4)
    async with await DocumentIndex.open(folder, cache_dir=cache) as index:
        assert (29, 0, 29) == (index.stats.files, index.stats.read, index.stats.reused)


async def test_a_file_name_that_is_not_utf8_is_stored_safely(tmp_path: Path) -> None:
    """Names in Latin-1 bytes (as unzip leaves them), in a file and a folder: the folder is
    indexed, each such file under a printable path, and its text is found."""
    folder = tmp_path / "docs"
    notes(folder, 2)
    raw = os.fsencode(folder)
    with open(raw + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Cafe\n\nThe espresso machine manual.\n")
    os.mkdir(raw + b"/r\xe9sum\xe9s")
    with open(raw + b"/r\xe9sum\xe9s/notes.md", "wb") as handle:
        handle.write(b"# Resume\n\nThe curriculum vitae template.\n")
    async with await DocumentIndex.open(folder, cache_dir=tmp_path / "cache") as index:
        assert (4, []) == (index.stats.files, index.skipped)
        (espresso,) = await index.search("espresso")
        (vitae,) = await index.search("curriculum vitae")
    assert ("caf\\xe9.md", "r\\xe9sum\\xe9s/notes.md") == (espresso.path, vitae.path)
    json.dumps([espresso.path, espresso.title, vitae.path], ensure_ascii=False).encode("utf-8")


async def test_search_reads_passages_never_the_whole_document(tmp_path: Path) -> None:
    """A search returns each passage's own text without reading its document's text, so
    its cost does not grow with the file's size (blanking the documents' stored text
    changes no result)."""
    folder, cache = tmp_path / "docs", tmp_path / "cache"
    notes(folder, 3)
    async with await DocumentIndex.open(folder, cache_dir=cache) as index:
        before = await index.search("needle")
    (index_file,) = cache.glob("*.sqlite")
    db = sqlite3.connect(index_file)
    db.execute("UPDATE files SET text = ''")
    db.commit()
    db.close()
    async with await DocumentIndex.open(folder, cache_dir=cache) as index:
        after = await index.search("needle")
    assert "needle" in before[0].text
    assert [(p.path, p.text, p.start, p.end) for p in before] == [
        (p.path, p.text, p.start, p.end) for p in after
    ]


def hostile_pdf(pages: int, zero_mb: int) -> bytes:
    """A small PDF whose every page draws one content stream of ``zero_mb`` MB of zero
    bytes (a few KB compressed): slow to extract, page after page."""
    stream = zlib.compress(b"\x00" * (zero_mb << 20), 9)
    kids = " ".join(f"{4 + n} 0 R" for n in range(pages))
    bodies = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"] * pages,
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(bodies, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return bytes(out)


async def test_a_hostile_pdf_is_stopped_at_the_time_limit_among_few_files(
    tmp_path: Path,
) -> None:
    """Two files only (no pool of workers needed): the PDF that would keep extraction busy
    for a minute is skipped at the one-second limit, with the reason; the note is found."""
    pytest.importorskip("pypdfium2")
    folder = tmp_path / "docs"
    notes(folder, 1)
    data = hostile_pdf(300, 8)
    assert len(data) < 50_000
    (folder / "hostile.pdf").write_bytes(data)
    started = time.monotonic()
    async with await DocumentIndex.open(
        folder, cache_dir=tmp_path / "cache", extract_timeout=1.0
    ) as index:
        elapsed = time.monotonic() - started
        assert [("hostile.pdf", "extraction took longer than 1 s")] == [
            (s.path, s.reason) for s in index.skipped
        ]
        assert ["note-00.md"] == [p.path for p in await index.search("needle")]
    assert elapsed < 30


def nested(depth: int, words: str) -> str:
    """A page whose text sits ``depth`` ``<div>`` levels down, then a last paragraph."""
    body = "<div>" * depth + f"<p>{words}</p>" + "</div>" * depth
    return f"<html><head><title>Deep</title></head><body>{body}<p>Closing words.</p></body></html>"


async def test_html_nested_too_deep_is_read_fully_or_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    """300 levels (past libxml2's default 256) are read fully; 5,000 levels are skipped,
    saying the page is nested too deep, never indexed empty."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "deep.html").write_text(nested(300, "Quokka habitat survey"), encoding="utf-8")
    (folder / "deeper.html").write_text(nested(5000, "Wombat burrow survey"), encoding="utf-8")
    async with await DocumentIndex.open(folder, cache_dir=tmp_path / "cache") as index:
        assert ["deep.html"] == [p.path for p in await index.search("quokka")]
        assert "Closing words." in await index.document_text("deep.html")
        reasons = {s.path: s.reason for s in index.skipped}
    assert ["deeper.html"] == list(reasons)
    assert "nested deeper than" in reasons["deeper.html"]


def _damage(path: Path, kind: str) -> None:
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "dangling symlink":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "symlink to a folder":
        path.symlink_to(path.parent)
    elif kind == "garbage":
        path.write_bytes(os.urandom(8192))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize(
    "kind", ["directory", "dangling symlink", "symlink to a folder", "garbage", "fifo"]
)
@pytest.mark.parametrize("suffix", ["", "-wal", ".lock"])
async def test_a_damaged_index_path_is_moved_aside_and_rebuilt(
    tmp_path: Path, kind: str, suffix: str
) -> None:
    """The index file (or its log, or its lock) replaced by something else: opening
    rebuilds the index, keeps the thing aside, and a second open reuses the new index."""
    folder, cache = tmp_path / "docs", tmp_path / "cache"
    notes(folder, 2)
    async with await DocumentIndex.open(folder, cache_dir=cache):
        pass
    (index_file,) = cache.glob("*.sqlite")
    target = Path(f"{index_file}{suffix}")
    for leftover in [index_file, Path(f"{index_file}-wal"), Path(f"{index_file}-shm"), target]:
        if leftover.exists() or leftover.is_symlink():
            leftover.unlink()
    _damage(target, kind)
    async with await DocumentIndex.open(folder, cache_dir=cache) as index:
        assert {"note-00.md"} == {p.path for p in await index.search("needle")}
    assert index_file.is_file() and not index_file.is_symlink()
    aside = [p for p in cache.iterdir() if ".damaged" in p.name]
    if kind != "garbage" or suffix == "":  # SQLite ignores a bad log; a lock holds no data
        assert aside, sorted(p.name for p in cache.iterdir())
    async with await DocumentIndex.open(folder, cache_dir=cache) as index:
        assert (2, 0) == (index.stats.reused, index.stats.read)
