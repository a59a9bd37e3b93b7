"""``research_fsm.documents``: reading the four formats, passages, BM25 search, the
index kept on disk and refreshed file by file, and bad folders and files."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from research_fsm.documents import DocumentIndex, DocumentsNotFound, NotADirectory

SPRING = """# Spring Boot 3 migration

Spring Boot 3 requires Java 17. Replace javax imports with jakarta imports.

## Caveats

WebSecurityConfigurerAdapter was removed in Spring Security 6.
"""
JAPANESE = "# 移行メモ\n\nSpring Boot 3 では Java 17 以上が必要です。移行手順を確認してください。\n"
HTML = """<html><head><title>Native images</title><script>var secret = "scripted";</script>
<style>p { color: red }</style></head><body><h1>Native images</h1>
<p>GraalVM native images start fast &amp; need reflection hints.</p></body></html>"""


def make_pdf(path: Path, pages: list[str]) -> None:
    """A PDF with one line of text per page (reportlab)."""
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    for text in pages:
        pdf.drawString(72, 720, text)
        pdf.showPage()
    pdf.save()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with one document of each kind (and a file of another kind)."""
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "spring.md").write_text(SPRING, encoding="utf-8")
    (root / "sub" / "ja.md").write_text(JAPANESE, encoding="utf-8")
    (root / "native.html").write_text(HTML, encoding="utf-8")
    (root / "plain.txt").write_text("Hibernate 6 changes query semantics.\n", encoding="utf-8")
    make_pdf(root / "guide.pdf", ["Cover page about nothing", "Micrometer Tracing replaces Sleuth"])
    (root / "image.png").write_bytes(b"\x89PNG\r\n")
    return root


async def open_index(folder: Path, tmp_path: Path, **kwargs: int) -> DocumentIndex:
    """The folder's index, kept under the test's cache folder."""
    return await DocumentIndex.open(folder, cache_dir=tmp_path / "cache", **kwargs)


async def test_all_four_formats_are_searchable(folder: Path, tmp_path: Path) -> None:
    """Markdown, text, HTML and PDF are indexed; other files are ignored without a warning."""
    async with await open_index(folder, tmp_path) as index:
        assert (5, []) == (index.stats.files, index.skipped)
        assert ["spring.md"] == [p.path for p in await index.search("jakarta")]
        assert ["plain.txt"] == [p.path for p in await index.search("Hibernate semantics")]
        (html,) = await index.search("GraalVM reflection")
        assert ("native.html", "Native images") == (html.path, html.title)
        assert "scripted" not in html.text and "color" not in html.text
        (pdf,) = await index.search("Micrometer Sleuth")
        assert ("guide.pdf", 2, "guide.pdf, page 2") == (pdf.path, pdf.page, pdf.locator())


async def test_japanese_text_is_found_by_two_character_words(folder: Path, tmp_path: Path) -> None:
    """A Japanese query (even one two-character word) finds the Japanese note."""
    async with await open_index(folder, tmp_path) as index:
        assert ["sub/ja.md"] == [p.path for p in await index.search("移行")]
        assert ["sub/ja.md"] == [p.path for p in await index.search("移行手順の確認")]
        assert [] == await index.search("確認 jakarta")


async def test_a_passage_is_exactly_its_place_in_the_file(folder: Path, tmp_path: Path) -> None:
    """Passage text is text[start:end] of the file's text, with the right lines and heading."""
    async with await open_index(folder, tmp_path) as index:
        (passage,) = await index.search("WebSecurityConfigurerAdapter")
        text = await index.document_text("spring.md")
        assert passage.text == text[passage.start : passage.end]
        first = text.count("\n", 0, passage.start) + 1
        last = text.count("\n", 0, passage.end - 1) + 1
        assert (first, last) == (passage.line_start, passage.line_end)
        # short sections share a passage, which knows the heading path where it starts
        assert "spring.md, lines 1-7" == passage.locator()
        assert ("Spring Boot 3 migration",) == passage.headings
        assert "Spring Boot 3 migration" == passage.heading
        with pytest.raises(KeyError, match="not an indexed file"):
            await index.document_text("nope.md")


async def test_ranking_puts_the_document_about_the_topic_first(tmp_path: Path) -> None:
    """BM25: the passage that is about jakarta outranks one that mentions it once."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "about.md").write_text("Jakarta EE. Jakarta packages. Move to jakarta now.\n")
    (root / "mention.md").write_text("Many topics here: logging, metrics, builds, and jakarta.\n")
    async with await open_index(root, tmp_path) as index:
        ranked = await index.search("jakarta")
        assert ["about.md", "mention.md"] == [p.path for p in ranked]
        assert ranked[0].score > ranked[1].score


async def test_all_needs_every_term_and_any_needs_one(folder: Path, tmp_path: Path) -> None:
    """match="all" requires every term; match="any" broadens to any of them."""
    async with await open_index(folder, tmp_path) as index:
        assert [] == await index.search("jakarta Hibernate")
        found = {p.path for p in await index.search("jakarta Hibernate", match="any")}
        assert {"spring.md", "plain.txt"} == found
        with pytest.raises(ValueError, match="'all' or 'any'"):
            await index.search("x", match="some")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "query", ['"', "jakarta*", "NEAR(jakarta", "a OR", "-jakarta", "body:x", "("]
)
async def test_query_syntax_is_only_ever_words(folder: Path, tmp_path: Path, query: str) -> None:
    """FTS5 operators in a query are searched as words, never an error or an injection."""
    async with await open_index(folder, tmp_path) as index:
        results = await index.search(query)
        assert all("jakarta" in p.text.lower() for p in results)


async def test_a_second_open_reads_nothing(folder: Path, tmp_path: Path) -> None:
    """An unchanged folder is not read again; a touched but unchanged file is not re-indexed."""
    await (await open_index(folder, tmp_path)).aclose()
    os.utime(folder / "plain.txt", ns=(1, 1))
    async with await open_index(folder, tmp_path) as index:
        assert (0, 5, 0) == (index.stats.read, index.stats.reused, index.stats.removed)
        assert ["plain.txt"] == [p.path for p in await index.search("Hibernate")]


async def test_changes_reindex_only_the_changed_files(folder: Path, tmp_path: Path) -> None:
    """Edit one file, delete one, add one: only those are read; old text is gone."""
    await (await open_index(folder, tmp_path)).aclose()
    (folder / "plain.txt").write_text("Flyway migrations need version 9.\n", encoding="utf-8")
    (folder / "native.html").unlink()
    (folder / "new.md").write_text("Observability with Micrometer.\n", encoding="utf-8")
    async with await open_index(folder, tmp_path) as index:
        assert (2, 3, 1, 5) == (
            index.stats.read,
            index.stats.reused,
            index.stats.removed,
            index.stats.files,
        )
        assert [] == await index.search("Hibernate")
        assert ["plain.txt"] == [p.path for p in await index.search("Flyway")]
        assert [] == await index.search("GraalVM")
        assert ["new.md"] == [p.path for p in await index.search("Observability")]


async def test_an_edited_file_leaves_none_of_its_old_words_in_the_index(
    folder: Path, tmp_path: Path
) -> None:
    """The index keeps no copy of the text: edits and deletions remove every old term
    (English, Japanese bigrams, titles) from the full-text index itself."""
    await (await open_index(folder, tmp_path)).aclose()
    (folder / "spring.md").write_text("# Quarkus notes\n\nQuarkus starts fast.\n", "utf-8")
    (folder / "sub" / "ja.md").write_text("# メモ\n\nビルド手順です。\n", encoding="utf-8")
    (folder / "native.html").unlink()
    await (await open_index(folder, tmp_path)).aclose()
    (index_file,) = (tmp_path / "cache").glob("*.sqlite")
    db = sqlite3.connect(index_file)
    try:
        db.execute("INSERT INTO fts(fts) VALUES ('integrity-check')")
        counts = {
            word: db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (word,)).fetchone()[0]
            for word in ("jakarta", "WebSecurityConfigurerAdapter", "移行", "GraalVM", "Quarkus")
        }
        (passages,) = db.execute("SELECT count(*) FROM passages").fetchone()
        (rows,) = db.execute("SELECT count(*) FROM fts").fetchone()
    finally:
        db.close()
    expected = {"jakarta": 0, "WebSecurityConfigurerAdapter": 0, "移行": 0, "GraalVM": 0}
    assert {**expected, "Quarkus": 1} == counts
    assert passages == rows


async def test_a_damaged_index_is_rebuilt(folder: Path, tmp_path: Path) -> None:
    """An index file that is not a database is rebuilt from the folder, not a crash."""
    await (await open_index(folder, tmp_path)).aclose()
    (index_file,) = (tmp_path / "cache").glob("*.sqlite")
    index_file.write_bytes(b"this is not sqlite" * 100)
    async with await open_index(folder, tmp_path) as index:
        assert (5, 5) == (index.stats.read, index.stats.files)
    assert 0o600 == stat.S_IMODE(index_file.stat().st_mode)
    assert 0o700 == stat.S_IMODE((tmp_path / "cache").stat().st_mode)


async def test_missing_folder_and_file_are_named(tmp_path: Path) -> None:
    """A folder that does not exist, or a file given as the folder, is a clear error."""
    with pytest.raises(DocumentsNotFound, match="does not exist"):
        await open_index(tmp_path / "missing", tmp_path)
    (tmp_path / "a.md").write_text("x")
    with pytest.raises(NotADirectory, match="is not a folder"):
        await open_index(tmp_path / "a.md", tmp_path)


async def test_bad_files_are_skipped_with_a_reason(folder: Path, tmp_path: Path) -> None:
    """Binary, huge (a 200 MB sparse file), unreadable, FIFO and symlinks leading outside:
    each skipped with its reason; nothing outside the folder is read; no hang."""
    outside = tmp_path / "secret.md"
    outside.write_text("top secret jakarta plans", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside)
    (folder / "outdir").symlink_to(tmp_path, target_is_directory=True)
    (folder / "binary.txt").write_bytes(b"jakarta\x00\x01\x02" * 10)
    with open(folder / "huge.txt", "wb") as handle:
        handle.truncate(200 * 1024 * 1024)
    os.mkfifo(folder / "pipe.md")
    locked = folder / "locked.md"
    locked.write_text("jakarta locked", encoding="utf-8")
    locked.chmod(0)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    async with await open_index(folder, tmp_path) as index:
        reasons = {s.path: s.reason for s in index.skipped}
        assert "symlink leading outside the folder (not followed)" == reasons["leak.md"]
        assert "symlinked folder (not followed)" == reasons["outdir"]
        assert "binary file" == reasons["binary.txt"]
        assert "larger than 50 MB (200 MB)" == reasons["huge.txt"]
        assert "not a regular file" == reasons["pipe.md"]
        assert reasons["broken.pdf"].startswith("unreadable PDF")
        if os.geteuid() != 0:
            assert reasons["locked.md"].startswith("cannot read it")
        assert [] == [p for p in await index.search("secret plans", match="any")]


async def test_a_same_size_edit_within_the_same_tick_is_seen(folder: Path, tmp_path: Path) -> None:
    """An edit that keeps size and mtime, right after indexing, is still re-read (hash)."""
    target = folder / "plain.txt"
    await (await open_index(folder, tmp_path)).aclose()
    before = target.stat()
    target.write_text("Hibernate 7 changes query semantics.\n", encoding="utf-8")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    async with await open_index(folder, tmp_path) as index:
        assert 1 == index.stats.read
        assert ["plain.txt"] == [p.path for p in await index.search("Hibernate 7")]


async def test_damage_found_while_in_use_removes_the_index(folder: Path, tmp_path: Path) -> None:
    """An index damaged under an open DocumentIndex: DamagedIndex naming the file, the file
    removed, and the next open rebuilds it and finds the text again."""
    import sqlite3

    from research_fsm.documents import DamagedIndex

    index = await open_index(folder, tmp_path)
    (index_file,) = (tmp_path / "cache").glob("*.sqlite")
    other = sqlite3.connect(index_file)
    other.execute("DROP TABLE passages")
    other.commit()
    other.close()
    with pytest.raises(DamagedIndex, match=f"{index_file.name}.*is damaged"):
        await index.search("jakarta")
    assert not index_file.exists()
    async with await open_index(folder, tmp_path) as again:
        assert (5, ["spring.md"]) == (
            again.stats.read,
            [p.path for p in await again.search("jakarta")],
        )


async def test_a_folder_swapped_for_a_symlink_after_discovery_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subfolder replaced by a symlink to elsewhere between discovery and reading is
    refused: every folder on the way to a file is opened without following links."""
    import shutil

    from research_fsm.documents import _index

    folder, outside = tmp_path / "docs", tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "notes.md").write_text("jakarta notes", encoding="utf-8")
    outside.mkdir()
    (outside / "notes.md").write_text("jakarta top secret plans", encoding="utf-8")
    real_discover = _index.discover

    def discover_then_swap(root: Path, **kwargs: int) -> Any:
        found = real_discover(root, **kwargs)
        shutil.rmtree(root / "sub")
        (root / "sub").symlink_to(outside, target_is_directory=True)
        return found

    monkeypatch.setattr(_index, "discover", discover_then_swap)
    async with await open_index(folder, tmp_path) as index:
        reasons = {s.path: s.reason for s in index.skipped}
        hits = await index.search("secret plans", match="any")
    assert ([], True) == (hits, reasons["sub/notes.md"].startswith("cannot read it"))
