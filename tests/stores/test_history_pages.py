"""A page of a thread's history reads only the part of the thread it needs: the file
store the segments around it, the Postgres store the rows from the full row below it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from research_fsm.engine import CheckpointStore, MemoryCheckpointStore
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file import segments as segments_module

from .helpers import close_store, postgres_store
from .test_store_contract import looping


async def test_a_file_store_page_reads_only_the_segments_around_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page deep in a thread of four segments parses the segment holding the page, up
    to the page (and under ``keep`` the newest too, which keep counts from), not the
    others; load likewise. A segment read once is read on from where it ended: the same
    page again parses nothing, nor does a page or a load it already covers."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await looping(store, 500).run({}, thread_id="t")
    whole = [cp async for cp in store.history("t")]
    assert [385, 257, 129, 1] == store._segments.live("t")[0]
    parsed: list[tuple[int, int]] = []  # (first seq parsed, lines parsed) of each parse
    original = segments_module.scan_bytes

    def counting(raw: bytes, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        scan = original(raw, thread_id, *args, **kwargs)
        parsed.append((scan.records[0].seq if scan.records else 0, scan.lines))
        return scan

    monkeypatch.setattr(segments_module, "scan_bytes", counting)
    newest = [cp async for cp in store.history("t", limit=5)]
    assert [cp.seq for cp in newest] == [cp.seq for cp in whole[:5]]
    assert [(385, whole[0].seq - 384)] == parsed  # the newest segment
    parsed.clear()
    assert newest == [cp async for cp in store.history("t", limit=5)]
    assert [] == parsed  # read before, and unchanged
    at_200 = next(cp for cp in whole if cp.seq == 200)
    page = [cp async for cp in store.history("t", limit=5, before=at_200.checkpoint_id)]
    assert [199, 198, 197, 196, 195] == [cp.seq for cp in page]
    assert [(129, 72)] == parsed  # lines 129 to 200
    parsed.clear()
    found = await store.load("t", at_200.checkpoint_id)
    assert found is not None and found.checkpoint_id == at_200.checkpoint_id
    assert [] == parsed  # lines 129 to 200 were read
    at_230 = next(cp for cp in whole if cp.seq == 230)
    page = [cp async for cp in store.history("t", limit=3, before=at_230.checkpoint_id)]
    assert [229, 228, 227] == [cp.seq for cp in page]
    assert [(201, 30)] == parsed  # read on from line 200 to 230
    parsed.clear()
    at_130 = next(cp for cp in whole if cp.seq == 130)
    page = [cp async for cp in store.history("t", limit=3, before=at_130.checkpoint_id)]
    assert [129, 128, 127] == [cp.seq for cp in page]
    assert [(1, 128)] == parsed  # segment 129 was read past 130; segment 1 whole
    parsed.clear()
    await looping(store, 510).run(None, thread_id="t")  # no-op: finished
    kept = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=1000)
    page = [cp async for cp in kept.history("t", limit=5, before=at_200.checkpoint_id)]
    assert [199, 198, 197, 196, 195] == [cp.seq for cp in page]
    assert {385, 129} == {first for first, _ in parsed}


async def test_a_segment_read_before_and_written_since_is_read_on(tmp_path: Path) -> None:
    """Pages of a thread that grows between them show every new checkpoint (the store
    reads on from where it stopped), also from another store object, durable or not."""
    for durability in ("none", "fsync"):
        root = tmp_path / durability
        writer = JsonFileCheckpointStore(root, durability=durability)
        reader = JsonFileCheckpointStore(root, durability=durability)
        app = looping(writer, 3)
        await app.run({}, thread_id="t")
        first = [cp.seq async for cp in reader.history("t", limit=2)]
        await app.run({"n": 0}, thread_id="t")
        grown = [cp async for cp in reader.history("t", limit=10)]
        whole = [cp async for cp in JsonFileCheckpointStore(root).history("t")]
        assert [cp.checkpoint_id for cp in grown] == [cp.checkpoint_id for cp in whole[:10]]
        assert [cp.state for cp in grown] == [cp.state for cp in whole[:10]]
        assert first == [4, 3] and len(whole) == 8  # two runs of 4 checkpoints


async def test_a_thread_deleted_and_made_again_is_not_read_from_memory(tmp_path: Path) -> None:
    """A new thread in a deleted one's place (its segment maybe on the same inode) reads anew."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    other = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    await looping(store, 3).run({}, thread_id="t")
    before = [cp.checkpoint_id async for cp in other.history("t", limit=3)]
    await store.delete("t")
    await looping(store, 3).run({}, thread_id="t")
    after = [cp.checkpoint_id async for cp in other.history("t", limit=3)]
    assert after == [cp.checkpoint_id async for cp in store.history("t")][:3]
    assert not set(before) & set(after)


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
