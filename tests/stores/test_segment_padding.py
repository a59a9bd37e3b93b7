"""Zero padding in segments: a durable file store pads the file's last disk block with
zeros, later lines overwrite them in place, and every reader and writer copes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import chain
from structlog.testing import capture_logs

from research_fsm.engine import CorruptCheckpoint
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.logformat import scan_bytes

from .helpers import segment_data

BLOCK = 4096


async def seqs(directory: Path, thread_id: str = "t") -> list[int]:
    """Every checkpoint a fresh store finds for ``thread_id``, oldest first."""
    return [cp.seq async for cp in JsonFileCheckpointStore(directory).history(thread_id)][::-1]


def lines(path: Path) -> list[bytes]:
    return segment_data(path).splitlines(keepends=True)


async def written(tmp_path: Path, turns: int) -> tuple[Path, list[bytes]]:
    """``turns`` runs of a one-node graph on thread ``t`` of a durable store under
    ``tmp_path / "s"``: its segment and the segment's lines (two per turn)."""
    app = chain("a", store=JsonFileCheckpointStore(tmp_path / "s"))
    for _ in range(turns):
        await app.run({}, thread_id="t")
    path = JsonFileCheckpointStore(tmp_path / "s").segment_path("t", 1)
    return path, lines(path)


async def test_a_durable_save_pads_its_block_and_later_ones_write_into_the_padding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that grows a segment ends on a block boundary with zeros; most later lines go into those zeros without changing the file's size."""
    store = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    sizes: list[tuple[int, int, int]] = []  # (bytes written, zeros among them, file size after)
    real_write = store.fs.write

    def write(fd: int, data: Any) -> int:
        written = real_write(fd, data)
        raw = bytes(data)
        if raw.startswith(b'["t",'):  # a record of the thread listing's journal (.threads)
            return written
        sizes.append((len(raw), len(raw) - len(raw.rstrip(b"\0")), os.fstat(fd).st_size))
        return written

    monkeypatch.setattr(store.fs, "write", write)
    app = chain("a", "b", store=store)
    for _ in range(10):
        await app.run({}, thread_id="t")
    monkeypatch.undo()
    path = store.segment_path("t", 1)
    grew = [size for _, zeros, size in sizes if zeros]
    assert 30 == len(sizes)  # one write per checkpoint: input, a, b, ten times
    assert [0] * len(grew) == [size % BLOCK for size in grew]
    assert len(grew) < len(sizes) // 2  # most lines were written into the padding
    assert path.stat().st_size == -(-len(segment_data(path)) // BLOCK) * BLOCK
    assert list(range(1, 31)) == await seqs(store.directory)


async def test_another_store_writing_into_the_padding_is_not_missed(tmp_path: Path) -> None:
    """A store that remembers a thread's newest line sees that another store wrote a newer one into the padding (same inode, same file size)."""
    first = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    second = JsonFileCheckpointStore(tmp_path / "s", durability="fsync")
    assert 1 == (await chain("a", store=first).run({}, thread_id="t")).state.n
    path = first.segment_path("t", 1)
    size = path.stat().st_size
    assert 2 == (await chain("a", store=second).run({}, thread_id="t")).state.n
    assert size == path.stat().st_size  # the second store wrote into the padding
    assert 3 == (await chain("a", store=first).run({}, thread_id="t")).state.n
    assert list(range(1, 7)) == await seqs(first.directory)


async def test_a_store_without_fsync_continues_a_padded_segment_after_its_last_line(
    tmp_path: Path,
) -> None:
    """A ``durability="none"`` store writes its lines where the last one ended, over the padding, not after it."""
    await chain("a", store=JsonFileCheckpointStore(tmp_path / "s")).run({}, thread_id="t")
    loose = JsonFileCheckpointStore(tmp_path / "s", durability="none")
    for _ in range(2):
        await chain("a", store=loose).run({}, thread_id="t")
    data = segment_data(loose.segment_path("t", 1))
    assert b"\0" not in data
    assert 6 == len(lines(loose.segment_path("t", 1)))
    assert list(range(1, 7)) == await seqs(loose.directory)


async def test_lines_after_a_run_of_zeros_are_read(tmp_path: Path) -> None:
    """Lines a writer unaware of the padding appended after it are read in order, and the thread continues after them."""
    path, before = await written(tmp_path, 2)
    head = b"".join(before[:2])
    path.write_bytes(head + bytes(-len(head) % BLOCK) + b"".join(before[2:]))
    fresh = JsonFileCheckpointStore(tmp_path / "s")
    with capture_logs() as logs:
        assert 3 == (await chain("a", store=fresh).run({}, thread_id="t")).state.n
    assert [] == [e for e in logs if e["log_level"] in ("warning", "error")]
    assert list(range(1, 7)) == await seqs(fresh.directory)


async def test_a_line_zeroed_in_the_middle_is_damage_not_padding(tmp_path: Path) -> None:
    """A whole line turned to zeros between intact lines is not skipped as padding: the line after it does not follow, so the thread is refused, naming the segment, and nothing is moved."""
    path, before = await written(tmp_path, 3)
    damaged = [*before[:2], bytes(len(before[2])), *before[3:]]
    path.write_bytes(b"".join(damaged))
    with pytest.raises(CorruptCheckpoint, match=path.name):
        await chain("a", store=JsonFileCheckpointStore(tmp_path / "s")).run({}, thread_id="t")
    assert b"".join(damaged) == path.read_bytes()


@pytest.mark.parametrize("zeros", [0, 1, BLOCK - 1])
async def test_intact_lines_after_zeros_still_forbid_rolling_back_over_damage(
    tmp_path: Path, zeros: int
) -> None:
    """A damaged line followed by zeros and an intact line refuses the thread, as without the zeros: the intact line is not moved aside."""
    path, (first, second, third, fourth) = await written(tmp_path, 2)
    at = third.index(b'"seq"') + 1
    damaged = first + second + third[:at] + b"X" + third[at + 1 :] + bytes(zeros) + fourth
    path.write_bytes(damaged)
    with pytest.raises(CorruptCheckpoint, match="1 intact checkpoint"):
        await chain("a", store=JsonFileCheckpointStore(tmp_path / "s")).run({}, thread_id="t")
    assert damaged == path.read_bytes()


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(b"", ("torn", 0, 0), id="empty"),
        pytest.param(bytes(BLOCK), ("torn", 0, BLOCK), id="zeros-only"),
        pytest.param(b"\0\0{", ("torn", 0, 0), id="zeros-then-unfinished"),
    ],
)
def test_a_segment_without_a_line_is_an_unfinished_one(
    raw: bytes, expected: tuple[str, int, int]
) -> None:
    """A segment holding nothing but zeros is read as an unfinished (torn) one, like an empty one."""
    scan = scan_bytes(raw, "t")
    assert expected == (scan.problem, len(scan.records), scan.padding)


async def test_padding_after_the_last_line_is_counted_and_kept(tmp_path: Path) -> None:
    """The scan of a padded segment reports its padding and ends its data at the last line, and the next lease holder continues the thread after that line."""
    store = JsonFileCheckpointStore(tmp_path / "s")
    await chain("a", store=store).run({}, thread_id="t")
    path = store.segment_path("t", 1)
    raw = path.read_bytes()
    scan = scan_bytes(raw, "t")
    data = segment_data(path)
    assert ("", 2, len(data), len(raw) - len(data)) == (
        scan.problem,
        len(scan.records),
        scan.good_size,
        scan.padding,
    )
    assert 0 < scan.padding
    await chain("a", store=JsonFileCheckpointStore(tmp_path / "s")).run({}, thread_id="t")
    assert [1, 2, 3, 4] == await seqs(store.directory)
