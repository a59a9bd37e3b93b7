"""Indexing a folder: every per-file failure skips that file with a warning naming it
(a fuzz of mutated PDFs proves a run never dies), extraction in worker processes gives
the same index as in-process, and progress is reported as files are done."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from structlog.testing import capture_logs

from research_fsm.documents import DocumentIndex

if TYPE_CHECKING:
    from research_fsm.documents import IndexProgress


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF (reportlab, its content stream compressed)."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.drawString(72, 720, text)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A damaged copy: flipped bytes, a cut, a chunk removed, an unsupported /Filter or an
    over-declared xref."""
    kind = rng.randrange(5)
    if kind == 0:
        out = bytearray(data)
        for _ in range(rng.randint(1, 40)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if kind == 1:
        return data[: rng.randrange(8, len(data))]
    if kind == 2:
        at = rng.randrange(len(data))
        return data[:at] + data[at + rng.randint(1, 400) :]
    if kind == 3:
        return data.replace(b"/FlateDecode", b"/FooBarDecod")
    return data.replace(b"/Size ", b"/Size 99999", 1).replace(b"xref\n0 ", b"xref\n0 9999", 1)


async def test_an_unsupported_pdf_filter_skips_only_that_file(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bad.pdf").write_bytes(pdf_bytes("Sleuth").replace(b"/FlateDecode", b"/FooBarDecod"))
    (root / "good.md").write_text("# Tracing\n\nMicrometer Tracing replaces Sleuth.\n")
    with capture_logs() as logs:
        async with await DocumentIndex.open(root, cache_dir=tmp_path / "c") as index:
            assert ["good.md"] == [p.path for p in await index.search("Sleuth")]
            (skipped,) = index.skipped
    assert "bad.pdf" == skipped.path
    assert "NotImplementedError" in skipped.reason and "FooBarDecod" in skipped.reason
    warnings = [e for e in logs if e["event"] == "document skipped"]
    assert [("bad.pdf", skipped.reason)] == [(e["path"], e["reason"]) for e in warnings]


@pytest.mark.parametrize(
    "count", [pytest.param(30, id="30"), pytest.param(300, id="300", marks=pytest.mark.slow)]
)
async def test_mutated_pdfs_never_end_a_run(tmp_path: Path, count: int) -> None:
    """Every mutant is either indexed or skipped with a reason; the good file is found."""
    rng = random.Random(count)
    root = tmp_path / "docs"
    root.mkdir()
    good = pdf_bytes("Micrometer Tracing replaces Sleuth in Spring Boot 3")
    for number in range(count):
        (root / f"mutant-{number:03d}.pdf").write_bytes(mutate(good, rng))
    (root / "notes.md").write_text("# Notes\n\nJakarta imports replace javax imports.\n")
    # one worker process per core (the default), or this process on a machine of one
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c") as index:
        assert ["notes.md"] == [p.path for p in await index.search("jakarta")]
        skipped = {s.path: s.reason for s in index.skipped}
        assert count + 1 == index.stats.files + len(skipped)
        assert all(reason for reason in skipped.values())
        assert len(skipped) >= count // 5  # the mutations do break files


async def test_worker_processes_build_the_same_index(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    for number in range(20):
        body = f"<p>Page {number} explains option{number} in detail.</p>"
        html = f"<html><head><title>Page {number}</title></head><body><main>{body}</main>"
        (root / f"page-{number}.html").write_text(html + "</body></html>")
        (root / f"note-{number}.md").write_text(f"# Note {number}\n\nSee option{number}.\n")
    found: dict[int, list[tuple[str, str, int, int]]] = {}
    for workers in (1, 2):
        cache = tmp_path / f"cache-{workers}"
        async with await DocumentIndex.open(root, cache_dir=cache, workers=workers) as index:
            assert (40, 40, []) == (index.stats.files, index.stats.read, index.skipped)
            found[workers] = [
                (p.path, p.text, p.line_start, p.line_end)
                for n in range(20)
                for p in await index.search(f"option{n}")
            ]
    assert found[1] == found[2]
    assert 40 == len(found[1])


async def test_progress_counts_files_and_bytes_to_the_end(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    sizes = 0
    for number in range(15):
        text = f"# Note {number}\n\n" + "Words about indexing. " * 50 * (number + 1)
        (root / f"note-{number:02d}.md").write_text(text)
        sizes += len(text)
    events: list[IndexProgress] = []
    async with await DocumentIndex.open(
        root, cache_dir=tmp_path / "c", workers=2, progress=events.append
    ):
        pass
    assert events[-1].finished and not any(e.finished for e in events[:-1])
    assert (15, 15, sizes, sizes, 15) == (
        events[-1].files_done,
        events[-1].files_total,
        events[-1].bytes_done,
        events[-1].bytes_total,
        events[-1].read,
    )
    done = [e.files_done for e in events]
    assert done == sorted(done) and 0 == done[0]
    assert "15/15 files" in events[-1].bar() and "done in" in events[-1].bar()
    reopened: list[IndexProgress] = []
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c", progress=reopened.append):
        pass
    assert (15, 0) == (reopened[-1].files_done, reopened[-1].read)
