"""A page of a thread's history reads only the part of the thread it needs: the file
store the segments around it, the Postgres store the rows from the full row below it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import CheckpointStore, MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.segments import Segments

from .helpers import close_store, postgres_store
from .test_store_contract import looping


async def test_a_file_store_page_reads_only_the_segments_around_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page deep in a thread of four segments reads the segment holding the page, up
    to the page (and under ``keep`` the newest too, which keep counts from), not the
    others; load likewise. Of the lines read, only the page's become checkpoints (the
    lines before fold the state)."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await looping(store, 500).run({}, thread_id="t")
    whole = [cp async for cp in store.history("t")]
    assert [385, 257, 129, 1] == store._segments.live("t")[0]
    scanned: list[int] = []
    original = Segments.scan

    def counting(
        self: Segments,
        stem: str,
        first: int,
        thread_id: str,
        until: Any = None,
        keep_from: Any = None,
        keep_last: Any = None,
    ) -> Any:
        scan = original(self, stem, first, thread_id, until, keep_from, keep_last)
        scanned.append((first, scan.lines, len(scan.records)))
        return scan

    monkeypatch.setattr(Segments, "scan", counting)
    newest = [cp async for cp in store.history("t", limit=5)]
    assert [cp.seq for cp in newest] == [cp.seq for cp in whole[:5]]
    assert [(385, whole[0].seq - 384, 6)] == scanned  # the newest segment, 6 kept
    scanned.clear()
    at_200 = next(cp for cp in whole if cp.seq == 200)
    page = [cp async for cp in store.history("t", limit=5, before=at_200.checkpoint_id)]
    assert [199, 198, 197, 196, 195] == [cp.seq for cp in page]
    assert [(129, 72, 6)] == scanned  # lines 129 to 200, checkpoints 195 to 200
    scanned.clear()
    found = await store.load("t", at_200.checkpoint_id)
    assert found is not None and found.checkpoint_id == at_200.checkpoint_id
    assert [(129, 72, 2)] == scanned
    scanned.clear()
    at_130 = next(cp for cp in whole if cp.seq == 130)
    page = [cp async for cp in store.history("t", limit=3, before=at_130.checkpoint_id)]
    assert [129, 128, 127] == [cp.seq for cp in page]
    assert [(129, 2, 2), (1, 128, 2)] == scanned
    scanned.clear()
    kept = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1000)
    page = [cp async for cp in kept.history("t", limit=5, before=at_200.checkpoint_id)]
    assert [199, 198, 197, 196, 195] == [cp.seq for cp in page]
    assert {385, 129} == {first for first, _, _ in scanned}


async def test_a_postgres_page_folds_at_most_a_full_rows_worth(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of 5 deep in a thread of 501 rows folds fewer than 5 + 128 rows."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    from research_fsm.stores.postgres import rows as _pgrows

    store = postgres_store(request)
    try:
        await looping(store, 500).run({}, thread_id="t")
        whole = [cp async for cp in store.history("t")]
        folded = 0
        original = _pgrows.Folder.add

        def counting(self: Any, *args: Any) -> Any:
            nonlocal folded
            folded += 1
            return original(self, *args)

        monkeypatch.setattr(_pgrows.Folder, "add", counting)
        at_200 = next(cp for cp in whole if cp.seq == 200)
        page = [cp async for cp in store.history("t", limit=5, before=at_200.checkpoint_id)]
        assert [199, 198, 197, 196, 195] == [cp.seq for cp in page]
        assert 5 <= folded < 5 + 128
    finally:
        await close_store(store)


async def test_a_memory_page_does_not_copy_the_thread() -> None:
    """The memory store finds ``before`` by the seq its id carries (no scan): a page of a
    long thread is as quick to get as the first."""
    store: CheckpointStore = MemoryCheckpointStore()
    await looping(store, 300).run({}, thread_id="t")
    whole = [cp async for cp in store.history("t")]
    page = [cp async for cp in store.history("t", limit=3, before=whole[250].checkpoint_id)]
    assert whole[251:254] == page
