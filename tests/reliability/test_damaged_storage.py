"""Damaged storage: broken checkpoint lines and failing writes, through the assistant.

A thread's checkpoints are lines in append-only segment files. The newest line
damaged in place (a flipped bit anywhere, a wrong checksum, a line of another
thread) is moved aside by the next lease holder with a warning, and the
conversation continues from the line before it; a line cut short (no newline at
the end: what a writer killed mid-save leaves) and an empty segment are cut off
silently. Readers without the lease fall back the same way but change no file.
With nothing readable left the error names the thread. A write that fails (disk
full, fsync error, read-only or forbidden files) fails the question with
``StoreWriteError`` naming the thread, keeps the previous checkpoint and leaves no
partial line and no temporary file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from research_fsm import ResearchAssistant
from research_fsm.engine import CorruptCheckpoint, StoreWriteError
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore

from . import disk

Q1, Q2, Q3 = "Tell me about Apple", "What about their stock?", "Now tell me about Tesla"
MOVED_ASIDE = "corrupt checkpoint moved aside; using the one before it"
STEPS = 4
"""Checkpoints one question makes: its input, then clarity, research, synthesis."""


def inject(
    monkeypatch: pytest.MonkeyPatch, store: JsonFileCheckpointStore, **calls: Callable[..., Any]
) -> None:
    """Replace some system calls of ``store`` (its ``fs`` seam) until ``monkeypatch.undo()``."""
    for name, call in calls.items():
        monkeypatch.setattr(store.fs, name, call)


def leftovers(root: Path) -> list[str]:
    """Temporary files anywhere under the store."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".tmp-*"))


def said(assistant_messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in assistant_messages]


def events(logs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Warnings and worse, as (event, thread, file)."""
    return [
        (e["event"], e.get("thread_id", ""), e.get("file", ""))
        for e in logs
        if e["log_level"] in ("warning", "error", "critical")
    ]


LAYOUTS = {"appended": None, "own-segment": 2 * STEPS - 1}
"""Where the newest checkpoint (the 8th: Q2's answer) sits, by the store's ``keep``:
``appended`` after the 7 others in the one segment, as a line of changes;
``own-segment`` alone, with the whole state, in a second segment (segments of 7)."""


async def two_answers(
    tmp_path: Path, keep: int | None = None
) -> tuple[ResearchAssistant, JsonFileCheckpointStore, list[str]]:
    """An assistant on a file store, with Q1 and Q2 answered on thread ``alice``."""
    store = JsonFileCheckpointStore(tmp_path / "store", durability="fsync", keep=keep)
    assistant = ResearchAssistant(source=MockDataSource(), store=store)
    answers = [(await assistant.ask(q, thread_id="alice")).text for q in (Q1, Q2)]
    return assistant, store, answers


async def newest_line(
    tmp_path: Path, layout: str
) -> tuple[ResearchAssistant, JsonFileCheckpointStore, list[str], Path, bytes, bytes]:
    """:func:`two_answers` laid out as ``layout``; also the newest segment, the bytes
    before its last line and that line (the newest checkpoint)."""
    assistant, store, answers = await two_answers(tmp_path, LAYOUTS[layout])
    segment = disk.segments(store, "alice")[-1]
    prefix, line = disk.newest_line(segment)
    expected_first = 1 if layout == "appended" else 2 * STEPS
    assert (expected_first, prefix == b"") == (disk.first_seq(segment), layout != "appended")
    return assistant, store, answers, segment, prefix, line


def flip(raw: bytes, at: int, bit: int = 0x01) -> bytes:
    return raw[:at] + bytes([raw[at] ^ bit]) + raw[at + 1 :]


def resealed(body: bytes) -> bytes:
    """A complete line with a correct checksum for ``body``."""
    return body + b"\t" + hashlib.sha256(body).hexdigest()[:32].encode() + b"\n"


def body(line: bytes) -> bytes:
    return line.rpartition(b"\t")[0]


CHECKSUM = re.compile(rb"\t[0-9a-f]{32}\n$")
TORN, DAMAGED = "torn", "damaged"
DAMAGE: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    # name: (what the store must take it for, the newest line -> what is left of it)
    "truncated-half": (TORN, lambda line: line[: len(line) // 2]),
    "truncated-end": (TORN, lambda line: line[:-2]),  # the newline and a checksum digit
    "zero-length": (TORN, lambda line: b""),  # the segment made, nothing written
    "flipped-byte-in-state": (DAMAGED, lambda line: flip(line, line.index(b"Stock and finan"))),
    "flipped-byte-in-header": (DAMAGED, lambda line: flip(line, line.index(b'"seq":') + 6)),
    "wrong-checksum": (DAMAGED, lambda line: CHECKSUM.sub(b"\t" + b"ab" * 16 + b"\n", line)),
    "checksum-of-nothing": (
        DAMAGED,
        lambda line: CHECKSUM.sub(
            b"\t" + hashlib.sha256(b"").hexdigest()[:32].encode() + b"\n", line
        ),
    ),
    "line-of-another-thread": (
        DAMAGED,
        lambda line: resealed(body(line).replace(b'"thread_id":"alice"', b'"thread_id":"bobby"')),
    ),
    "out-of-sequence": (  # a well-sealed line whose seq does not follow the one before
        DAMAGED,
        lambda line: resealed(re.sub(rb'"seq":(\d+)', rb'"seq":1\1', body(line), count=1)),
    ),
}


def damage_cases() -> list[Any]:
    cases = []
    for layout in LAYOUTS:
        for kind in DAMAGE:
            if (layout, kind) in (("appended", "zero-length"), ("own-segment", "out-of-sequence")):
                continue  # an empty line is no line; a segment's first line follows nothing
            cases.append(pytest.param(layout, kind, id=f"{layout}-{kind}"))
    return cases


@pytest.mark.parametrize(("layout", "kind"), damage_cases())
async def test_assistant_continues_from_newest_valid_checkpoint(
    tmp_path: Path, layout: str, kind: str
) -> None:
    """A damaged newest checkpoint line is moved aside with a warning (a line cut short, or an empty segment, is cut off silently) by the next lease holder, and the next question continues from the line before it."""
    _, store, answers, segment, prefix, line = await newest_line(tmp_path, layout)
    problem, damage = DAMAGE[kind]
    damaged = damage(line)
    assert damaged != line
    segment.write_bytes(prefix + damaged)
    # a new process: nothing cached from before the damage
    fresh = JsonFileCheckpointStore(store.directory, durability="fsync", keep=store.keep)
    assistant = ResearchAssistant(source=MockDataSource(), store=fresh)
    earlier = [("user", Q1), ("assistant", answers[0]), ("user", Q2)]
    # a reader without the lease falls back to the line before, silently, changing nothing
    with capture_logs() as logs:
        assert earlier == said(await assistant.history("alice"))
    assert ([], prefix + damaged) == (events(logs), segment.read_bytes())
    # the next lease holder repairs the segment
    with capture_logs() as logs:
        latest = await disk.load_as_lease_holder(fresh, "alice")
    assert latest is not None and 2 * STEPS - 1 == latest.seq
    aside = segment.with_name(segment.name + ".corrupt")
    if problem == TORN:
        assert [] == events(logs)
        assert [] == disk.moved_aside(store, "alice")
    else:
        assert [(MOVED_ASIDE, "alice", str(segment))] == events(logs)
        assert [aside] == disk.moved_aside(store, "alice")
        assert damaged == aside.read_bytes()
    if prefix:  # the segment now ends with the line before
        assert prefix == segment.read_bytes()
    else:  # the segment held nothing else: it is gone
        assert not segment.exists()
    reply = await assistant.ask(Q3, thread_id="alice")
    assert ("answered", "Tesla, Inc.") == (reply.status, reply.company)
    assert [*earlier, ("user", Q3), ("assistant", reply.text)] == said(
        await assistant.history("alice")
    )
    # every line on disk is whole and parses
    assert [] == disk.unfinished(store, "alice")
    on_disk = await disk.everything_on_disk(store.directory, "alice")
    assert (disk.complete_lines(store, "alice"), latest.seq + STEPS) == (
        len(on_disk),
        on_disk[0].seq,
    )


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_any_flipped_bit_is_caught_or_harmless(tmp_path: Path, layout: str) -> None:
    """Flipping any one bit of the newest checkpoint line makes the next lease holder fall back to the line before (with a warning, or silently where the bit was the line's final newline) or read back the very same checkpoint."""
    _, store, _, segment, prefix, line = await newest_line(tmp_path, layout)
    history = await disk.everything_on_disk(store.directory, "alice")
    genuine, previous = history[0], history[1]
    outcomes: dict[str, int] = {"fell back": 0, "cut as torn": 0, "identical": 0}
    wrong: list[tuple[int, int]] = []
    for at in range(len(line)):
        for bit in (0x01, 0x20, 0x80):
            segment.write_bytes(prefix + flip(line, at, bit))
            fresh = JsonFileCheckpointStore(store.directory)
            with capture_logs() as logs:
                latest = await disk.load_as_lease_holder(fresh, "alice")
            warned = [e["event"] for e in logs]
            if latest == previous and [MOVED_ASIDE] == warned:
                outcomes["fell back"] += 1
                for path in disk.moved_aside(store, "alice"):
                    path.unlink()
            elif latest == previous and [] == warned and at == len(line) - 1:
                outcomes["cut as torn"] += 1
            elif latest == genuine and [] == warned:
                outcomes["identical"] += 1
            else:
                wrong.append((at, bit))
    assert [] == wrong
    assert outcomes["fell back"] > 0.99 * 3 * len(line)


async def test_all_checkpoints_damaged_gives_corrupt_checkpoint_naming_the_thread(
    tmp_path: Path,
) -> None:
    """With the first (whole-state) line of every segment damaged, ask and history raise CorruptCheckpoint naming the thread and the newest file, every time, moving nothing; other threads are unaffected."""
    assistant, store, _ = await two_answers(tmp_path, keep=STEPS)  # segments of 4 lines
    await assistant.ask(Q1, thread_id="bob")
    segments = disk.segments(store, "alice")
    assert [1, STEPS + 1] == [disk.first_seq(p) for p in segments]
    for path in segments:
        data = path.read_bytes()
        path.write_bytes(flip(data, data.index(b'"state":') + 20))
    # a new process: nothing cached from before the damage
    store = JsonFileCheckpointStore(store.directory, durability="fsync", keep=STEPS)
    assistant = ResearchAssistant(source=MockDataSource(), store=store)
    for attempt in range(2):  # intact changes follow each damaged line: nothing is moved
        with pytest.raises(CorruptCheckpoint) as info:
            await assistant.ask(Q3, thread_id="alice")
        assert "alice" == info.value.thread_id
        assert segments[-1].name in str(info.value), attempt
        assert "intact checkpoint" in str(info.value), attempt
        with pytest.raises(CorruptCheckpoint, match="thread `alice`"):
            await assistant.history("alice")
    assert (segments, []) == (
        disk.segments(store, "alice"),
        sorted(p.name for p in disk.moved_aside(store, "alice")),
    )
    assert "answered" == (await assistant.ask(Q2, thread_id="bob")).status


def _to_listing_journal(fd: int) -> bool:
    """Whether ``fd`` is the file store's thread-listing journal (``.threads``, a cache
    whose writes a save never waits on), as Linux's ``/proc`` names it."""
    try:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == ".threads"
    except OSError:
        return False


def disk_full_after(allowed: int) -> Callable[..., int]:
    """An ``os.write`` that lets ``allowed`` writes of checkpoints through (the listing
    journal's own writes pass uncounted until the disk is full), then writes half of one
    buffer and fails with ENOSPC from there on."""
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        if calls["n"] < allowed and _to_listing_journal(fd):
            return os.write(fd, data)
        calls["n"] += 1
        if calls["n"] <= allowed:
            return os.write(fd, data)
        if calls["n"] == allowed + 1 and len(data) > 1:
            return os.write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return write


def read_only() -> Callable[..., int]:
    """An ``os.open`` that fails with EROFS for any open that could write."""

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return os.open(path, flags, *args, **kwargs)

    return open_


def forbidden(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
    """An ``os.open`` as with the store folder chmod 0500 and its segments chmod 0400
    (which root ignores): no new file, and no segment opened for writing."""
    denied = flags & os.O_CREAT and not Path(path).exists()
    if denied or (str(path).endswith(disk.SUFFIX) and flags & (os.O_WRONLY | os.O_RDWR)):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    return os.open(path, flags, *args, **kwargs)


def io_error(*args: Any) -> None:
    """An ``fsync``, ``fdatasync`` or ``syncfs`` that fails: the disk could not keep the data."""
    raise OSError(errno.EIO, os.strerror(errno.EIO))


FAULTS: dict[str, tuple[int, Callable[[], dict[str, Callable[..., Any]]]]] = {
    # name: (the errno the error carries, the os functions replaced)
    "disk-full-at-once": (errno.ENOSPC, lambda: {"write": disk_full_after(0)}),
    "disk-full-mid-question": (errno.ENOSPC, lambda: {"write": disk_full_after(2)}),
    "fsync-fails": (
        errno.EIO,
        lambda: {"fsync": io_error, "fdatasync": io_error, "syncfs": io_error},
    ),
    "read-only-file-system": (errno.EROFS, lambda: {"open": read_only()}),
    "permission-denied": (errno.EACCES, lambda: {"open": forbidden}),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("thread", ["alice", "newcomer"])
async def test_failed_write_fails_the_question_and_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, thread: str
) -> None:
    """A write that fails (ENOSPC, EIO, EROFS, EACCES) fails ask with StoreWriteError naming the thread; the previous checkpoint stays the latest, no partial line or temp file is left, and the question goes through once the disk is fine."""
    assistant, store, answers = await two_answers(tmp_path)
    before = disk.contents(store, thread)
    latest_before = await store.load_latest(thread)
    code, replaced = FAULTS[fault]
    inject(monkeypatch, store, **replaced())
    with pytest.raises(StoreWriteError) as info:
        await assistant.ask(Q3, thread_id=thread)
    monkeypatch.undo()
    assert (thread, code) == (info.value.thread_id, info.value.cause.errno)
    assert f"thread `{thread}`" in str(info.value)
    assert ([], []) == (leftovers(store.directory), disk.unfinished(store, thread))
    fresh = JsonFileCheckpointStore(store.directory)
    with capture_logs() as logs:
        lease = await fresh.acquire(thread)  # nothing for the next lease holder to repair
        try:
            latest = await fresh.load_latest(thread)
        finally:
            await lease.release()
    assert [] == events(logs)
    after = disk.contents(store, thread)
    if fault == "disk-full-mid-question":  # the question's first steps were saved
        assert before == {name: after[name][: len(before[name])] for name in before}
        assert latest is not None
        saved = latest.seq - (latest_before.seq if latest_before else 0)
        assert (2, "running", "research") == (saved, latest.status, latest.next)
        assert sum(map(len, before.values())) < sum(map(len, after.values()))
    else:
        assert before == after  # not a byte added
        assert (latest_before and latest_before.checkpoint_id) == (latest and latest.checkpoint_id)
    reply = await assistant.ask(Q3, thread_id=thread)
    assert ("answered", "Tesla, Inc.") == (reply.status, reply.company)
    if thread == "alice":
        earlier = [("user", Q1), ("assistant", answers[0]), ("user", Q2), ("assistant", answers[1])]
        assert earlier == said(await assistant.history("alice"))[:4]
    on_disk = await disk.everything_on_disk(store.directory, thread)
    assert disk.complete_lines(store, thread) == len(on_disk)


def permissions_enforced(tmp_path: Path) -> bool:
    """Whether a chmod 0500 directory refuses new files here (root ignores it)."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o500)
    try:
        (probe / "file").touch()
    except PermissionError:
        return True
    finally:
        probe.chmod(0o700)
    return False


@pytest.mark.parametrize("thread", ["alice", "newcomer"])
async def test_read_only_store_fails_with_store_write_error(tmp_path: Path, thread: str) -> None:
    """With the store folder chmod 0500 and the segments chmod 0400, ask fails with StoreWriteError naming the thread and the previous checkpoint stays loadable."""
    if not permissions_enforced(tmp_path):
        pytest.skip("file permissions are not enforced for this user (root)")
    assistant, store, _ = await two_answers(tmp_path)
    before = await store.load_latest(thread)
    segments = disk.segments(store, "alice")
    store.directory.chmod(0o500)
    for segment in segments:
        segment.chmod(0o400)
    try:
        with pytest.raises(StoreWriteError) as info:
            await assistant.ask(Q3, thread_id=thread)
        assert (thread, errno.EACCES) == (info.value.thread_id, info.value.cause.errno)
        after = await JsonFileCheckpointStore(store.directory).load_latest(thread)
        assert (before and before.checkpoint_id) == (after and after.checkpoint_id)
    finally:
        store.directory.chmod(0o700)
        for segment in segments:
            segment.chmod(0o600)
    assert ([], []) == (leftovers(store.directory), disk.unfinished(store, thread))
    assert "answered" == (await assistant.ask(Q3, thread_id=thread)).status


async def test_disk_full_while_creating_the_key_leaves_no_partial_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC while the store writes its signing key leaves no key file and no temp file; the key is made once the disk has room."""
    directory = tmp_path / "store"
    store = JsonFileCheckpointStore(directory)
    inject(monkeypatch, store, write=disk_full_after(0))
    with pytest.raises(OSError) as info:
        await store.secret()
    monkeypatch.undo()
    assert errno.ENOSPC == info.value.errno
    assert [] == sorted(os.listdir(directory))
    key = await JsonFileCheckpointStore(directory).secret()
    assert key.hex() == (directory / ".secret").read_text()
