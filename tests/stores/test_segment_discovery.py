"""Finding a thread's segments never lists the folder (issue 23): no run or load costs more
as the folder fills with other threads; the folder is listed only to repair."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from engine.helpers import chain

from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import OFD_LOCKS, FileSystem

LEASE_KINDS = [True, False] if OFD_LOCKS else [False]


def _counting(store: JsonFileCheckpointStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every folder listing ``store`` makes through its file-system seam."""
    listed: list[str] = []
    real = store.fs.listdir

    def listdir(path: str | os.PathLike[str]) -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(store.fs, "listdir", listdir)
    return listed


def _store(root: Path, range_locks: bool, keep: int | None = None) -> JsonFileCheckpointStore:
    fs = FileSystem(range_locks=range_locks)
    return JsonFileCheckpointStore(root, durability="none", keep=keep, fs=fs)


async def _others(root: Path, range_locks: bool) -> None:
    """Fill the folder with a few other threads, one of them with two segments."""
    app = chain("a", store=_store(root, range_locks))
    for i in range(3):
        await app.run({}, thread_id=f"other-{i}")
    for _ in range(70):
        await app.run({}, thread_id="other-long")


@pytest.mark.parametrize("range_locks", LEASE_KINDS)
async def test_run_on_a_new_thread_lists_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, range_locks: bool
) -> None:
    """A run on a new thread, its lease and load included, makes no `listdir`."""
    root = tmp_path / "s"
    await _others(root, range_locks)
    store = _store(root, range_locks)
    listed = _counting(store, monkeypatch)
    result = await chain("a", "b", store=store).run({}, thread_id="new")
    assert (2, []) == (result.state.n, listed)


@pytest.mark.parametrize("range_locks", LEASE_KINDS)
@pytest.mark.parametrize("turns", [1, 70], ids=["one-segment", "two-segments"])
async def test_cold_load_of_an_existing_thread_lists_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, range_locks: bool, turns: int
) -> None:
    """A fresh store loads, reads the history of, and runs on an existing thread with no `listdir`."""
    root = tmp_path / "s"
    await _others(root, range_locks)
    app = chain("a", store=_store(root, range_locks))
    for _ in range(turns):
        await app.run({}, thread_id="t")
    segments = sorted(p.name for p in root.glob("t=*.jsonl"))
    assert turns * 2 == (await _store(root, range_locks).load_latest("t")).seq  # type: ignore[union-attr]
    fresh = _store(root, range_locks)
    listed = _counting(fresh, monkeypatch)
    latest = await fresh.load_latest("t")
    history = [cp.seq async for cp in _store(root, range_locks).history("t")]
    seqs = [cp.seq async for cp in fresh.history("t")]
    result = await chain("a", store=_store(root, range_locks)).run({}, thread_id="t")
    assert latest is not None
    assert (turns * 2, history, []) == (latest.seq, seqs, listed)
    assert (1 if turns == 1 else 2) == len(segments)
    assert turns + 1 == result.state.n


async def test_cold_load_after_pruning_lists_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `keep`, a thread whose segment 1 is gone loads and runs in a fresh store with no `listdir`."""
    root = tmp_path / "s"
    app = chain("a", store=_store(root, OFD_LOCKS, keep=2))
    for _ in range(4):
        await app.run({}, thread_id="t")  # 8 checkpoints, segments of 2: 1, 3, 5 gone
    assert not (root / "t=000000000001.jsonl").exists()
    fresh = _store(root, OFD_LOCKS, keep=2)
    listed = _counting(fresh, monkeypatch)
    latest = await fresh.load_latest("t")
    result = await chain("a", store=fresh).run({}, thread_id="t")
    assert latest is not None
    assert (8, 5, []) == (latest.seq, result.state.n, listed)


async def test_pruning_segment_one_leaves_a_mark_that_delete_removes(tmp_path: Path) -> None:
    """`<thread>=pruned` appears once segment 1 is pruned, and deleting the thread removes every file."""
    root = tmp_path / "s"
    store = _store(root, OFD_LOCKS, keep=2)
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    assert not (root / "t=pruned").exists()  # segment 1 still there
    for _ in range(2):
        await app.run({}, thread_id="t")
    assert (root / "t=pruned").exists()
    assert not (root / "t=000000000001.jsonl").exists()
    await app.delete_thread("t")
    assert [] == store.thread_files("t")


async def test_damaged_first_segment_without_a_list_still_finds_the_newest(
    tmp_path: Path,
) -> None:
    """With no `<thread>.idx` and segment 1's last line damaged, the newer segment is still found."""
    root = tmp_path / "s"
    app = chain("a", store=_store(root, OFD_LOCKS))
    for _ in range(70):
        await app.run({}, thread_id="t")  # 140 checkpoints: segments from 1 and 129
    (root / "t.idx").unlink()
    first = root / "t=000000000001.jsonl"
    data = bytearray(first.read_bytes().rstrip(b"\0"))
    data[-40] ^= 0x01  # inside the last line's checksum: the line no longer matches it
    first.write_bytes(bytes(data))
    latest = await _store(root, OFD_LOCKS).load_latest("t")
    assert latest is not None
    assert 140 == latest.seq
