"""The list of live segments (`<thread>.idx`): written before pruning, repaired when missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine.helpers import chain

from research_fsm.stores import JsonFileCheckpointStore


class Killed(BaseException):
    """Stands for the process dying at that instant: nothing after it runs."""


async def test_kill_while_pruning_never_hides_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer dying as it deletes a pruned segment leaves every segment on disk in readers' reach."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=2)
    app = chain("a", store=store)
    await app.run({}, thread_id="t")  # checkpoints 1, 2 in segment 1
    await app.run({}, thread_id="t")  # 3, 4 in segment 3; the list says [3, 1]
    (tmp_path / "s" / "t.idx").unlink()  # as if a kill had lost that write
    real_unlink = store.fs.unlink
    listed_then: list[list[int]] = []

    def dying_unlink(path: Path) -> None:
        if path.name.endswith(".jsonl"):
            listed_then.append(_seqs((tmp_path / "s" / "t.idx").read_text()))
            raise Killed
        real_unlink(path)

    monkeypatch.setattr(store.fs, "unlink", dying_unlink)
    with pytest.raises(Killed):
        for _ in range(5):
            await app.run({}, thread_id="t")
    monkeypatch.undo()
    on_disk = sorted(p.name for p in store.thread_files("t"))
    assert "t=000000000001.jsonl" in on_disk  # the pruned segment was never deleted
    assert [[5, 3, 1]] == listed_then  # the list named it again before it was to go
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none", keep=2)
    latest = await fresh.load_latest("t")
    assert latest is not None
    everything = JsonFileCheckpointStore(tmp_path / "s", durability="none")  # keep=None
    seqs = [cp.seq async for cp in everything.history("t")]
    assert list(range(latest.seq, 0, -1)) == seqs  # no segment on disk is out of its reach
    result = await chain("a", store=fresh).run({}, thread_id="t")
    assert latest.seq + 2 == (await fresh.load_latest("t")).seq  # type: ignore[union-attr]
    assert ["a"] == result.path


async def test_lease_holder_rewrites_a_missing_segment_list(tmp_path: Path) -> None:
    """With `<thread>.idx` gone (segment 1 still there), the next lease holder writes it again."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    app = chain("a", store=store)
    for _ in range(70):
        await app.run({}, thread_id="t")  # 140 checkpoints: segments from 1 and 129
    index = tmp_path / "s" / "t.idx"
    expected = index.read_text()
    index.unlink()
    fresh = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    lease = await fresh.acquire("t")
    await lease.release()
    assert expected == index.read_text()


def _seqs(text: str) -> list[int]:
    return [int(word) for word in text.split()]


async def test_segment_list_names_only_live_segments(tmp_path: Path) -> None:
    """After pruning, `<thread>.idx` lists exactly the segments left on disk, newest first."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync", keep=3)
    app = chain("a", store=store)
    for _ in range(6):
        await app.run({}, thread_id="t")
    listed = _seqs((tmp_path / "s" / "t.idx").read_text())
    on_disk = sorted(
        (int(p.name.split("=")[1][:12]) for p in store.thread_files("t") if p.suffix == ".jsonl"),
        reverse=True,
    )
    assert on_disk == listed
