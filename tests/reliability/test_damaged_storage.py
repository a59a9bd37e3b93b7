"""Damaged storage: broken checkpoint files and failing writes, through the assistant.

A damaged newest checkpoint (truncated, emptied, a flipped bit anywhere, a wrong
checksum) is moved aside with a warning and the conversation continues from the
newest valid one; with nothing readable left the error names the thread. A write
that fails (disk full, read-only or forbidden directory) fails the question with
``StoreWriteError`` naming the thread, keeps the previous checkpoint and leaves no
temporary file.
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

from research_fsm.assistant import ResearchAssistant
from research_fsm.engine import (
    CorruptCheckpoint,
    JsonFileCheckpointStore,
    StoreWriteError,
    _filestore,
)
from research_fsm.sources import MockDataSource

Q1, Q2, Q3 = "Tell me about Apple", "What about their stock?", "Now tell me about Tesla"
MOVED_ASIDE = "corrupt checkpoint moved aside; using the one before it"


class FaultyOs:
    """Stands in for the ``os`` module inside ``_filestore``, with some calls replaced."""

    def __init__(self, **overrides: Callable[..., Any]) -> None:
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def checkpoint_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.endswith(".json")}


def leftovers(root: Path) -> list[str]:
    """Temporary files anywhere under the store."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".tmp-*"))


def said(assistant_messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in assistant_messages]


async def two_answers(
    tmp_path: Path,
) -> tuple[ResearchAssistant, JsonFileCheckpointStore, list[str]]:
    """An assistant on a file store, with Q1 and Q2 answered on thread ``alice``."""
    store = JsonFileCheckpointStore(tmp_path / "store", durability="fsync")
    assistant = ResearchAssistant(source=MockDataSource(), store=store)
    answers = [(await assistant.ask(q, thread_id="alice")).text for q in (Q1, Q2)]
    return assistant, store, answers


def flip(raw: bytes, at: int, bit: int = 0x01) -> bytes:
    return raw[:at] + bytes([raw[at] ^ bit]) + raw[at + 1 :]


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated-half": lambda raw: raw[: len(raw) // 2],
    "truncated-end": lambda raw: raw[:-2],  # the checksum survives; the JSON does not
    "zero-length": lambda raw: b"",
    "flipped-byte-in-state": lambda raw: flip(raw, raw.index(b"Stock and financials")),
    "flipped-byte-in-header": lambda raw: flip(raw, raw.index(b'"seq": ') + 7),
    "wrong-checksum": lambda raw: re.sub(rb"sha256:[0-9a-f]{64}", b"sha256:" + b"ab" * 32, raw),
    "checksum-of-nothing": lambda raw: re.sub(
        rb"sha256:[0-9a-f]{64}", b"sha256:" + hashlib.sha256(b"").hexdigest().encode(), raw
    ),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
async def test_assistant_continues_from_newest_valid_checkpoint(tmp_path: Path, kind: str) -> None:
    """A damaged newest checkpoint is moved aside with a warning and the next question continues from the newest valid state."""
    assistant, store, answers = await two_answers(tmp_path)
    folder = store.thread_dir("alice")
    newest = max(folder.glob("*.json"))
    newest.write_bytes(DAMAGE[kind](newest.read_bytes()))
    with capture_logs() as logs:
        history = await assistant.history("alice")
    assert [("user", Q1), ("assistant", answers[0]), ("user", Q2)] == said(history)
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [(MOVED_ASIDE, "alice", str(newest))] == [
        (e["event"], e["thread_id"], e["file"]) for e in warnings
    ]
    assert (False, True) == (newest.exists(), newest.with_name(newest.name + ".corrupt").exists())
    reply = await assistant.ask(Q3, thread_id="alice")
    assert ("answered", "Tesla, Inc.") == (reply.status, reply.company)
    assert [
        ("user", Q1), ("assistant", answers[0]), ("user", Q2), ("user", Q3),
        ("assistant", reply.text),
    ] == said(await assistant.history("alice"))  # fmt: skip
    assert len(list(folder.glob("*.json"))) == len([cp async for cp in store.history("alice")])


@pytest.mark.slow
async def test_any_flipped_bit_is_caught_or_harmless(tmp_path: Path) -> None:
    """Flipping any one bit of the newest checkpoint either falls back to the previous one with a warning or reads back the very same checkpoint."""
    _, store, _ = await two_answers(tmp_path)
    folder = store.thread_dir("alice")
    newest = max(folder.glob("*.json"))
    original = newest.read_bytes()
    genuine = await JsonFileCheckpointStore(store.directory).load_latest("alice")
    assert genuine is not None
    outcomes: dict[str, int] = {"fell back": 0, "identical": 0}
    wrong: list[tuple[int, int]] = []
    for at in range(len(original)):
        for bit in (0x01, 0x20, 0x80):
            newest.write_bytes(flip(original, at, bit))
            with capture_logs() as logs:
                latest = await JsonFileCheckpointStore(store.directory).load_latest("alice")
            assert latest is not None
            if latest.seq == genuine.seq - 1 and [MOVED_ASIDE] == [e["event"] for e in logs]:
                outcomes["fell back"] += 1
                newest.with_name(newest.name + ".corrupt").unlink()
            elif JsonFileCheckpointStore.encode(latest) == original and not logs:
                outcomes["identical"] += 1
            else:
                wrong.append((at, bit))
    assert [] == wrong
    assert outcomes["fell back"] > 0.99 * 3 * len(original)


async def test_all_checkpoints_damaged_gives_corrupt_checkpoint_naming_the_thread(
    tmp_path: Path,
) -> None:
    """With every checkpoint damaged, ask and history raise CorruptCheckpoint naming the thread, every time; other threads are unaffected."""
    assistant, store, _ = await two_answers(tmp_path)
    await assistant.ask(Q1, thread_id="bob")
    folder = store.thread_dir("alice")
    for path in folder.glob("*.json"):
        path.write_bytes(DAMAGE["truncated-half"](path.read_bytes()))
    for attempt in range(2):  # the files were moved aside by the first attempt
        with pytest.raises(CorruptCheckpoint) as info:
            await assistant.ask(Q3, thread_id="alice")
        assert "alice" == info.value.thread_id
        assert str(info.value).startswith("thread `alice`: no readable checkpoint left"), attempt
        with pytest.raises(CorruptCheckpoint, match="thread `alice`"):
            await assistant.history("alice")
    assert "answered" == (await assistant.ask(Q2, thread_id="bob")).status


def disk_full_after(allowed: int) -> Callable[..., int]:
    """An ``os.write`` that lets ``allowed`` calls through, then writes half of one
    buffer and fails with ENOSPC from there on."""
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
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
    """An ``os.open`` as in a directory chmod 0500 (which root ignores): no new files."""
    if flags & os.O_CREAT and not Path(path).exists():
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    return os.open(path, flags, *args, **kwargs)


FAULTS: dict[str, tuple[int, Callable[[], dict[str, Callable[..., Any]]]]] = {
    # name: (the errno the error carries, the os functions replaced)
    "disk-full-at-once": (errno.ENOSPC, lambda: {"write": disk_full_after(0)}),
    "disk-full-mid-question": (errno.ENOSPC, lambda: {"write": disk_full_after(2)}),
    "read-only-file-system": (errno.EROFS, lambda: {"open": read_only()}),
    "permission-denied": (errno.EACCES, lambda: {"open": forbidden}),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("thread", ["alice", "newcomer"])
async def test_failed_write_fails_the_question_and_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, thread: str
) -> None:
    """A write that fails (ENOSPC, EROFS, EACCES) fails ask with StoreWriteError naming the thread; the previous checkpoint stays loadable, no temp file is left, and the question goes through once the disk is fine."""
    assistant, store, answers = await two_answers(tmp_path)
    folder = store.thread_dir(thread)
    before = checkpoint_files(folder) if folder.exists() else {}
    latest_before = await store.load_latest(thread)
    code, replaced = FAULTS[fault]
    monkeypatch.setattr(_filestore, "os", FaultyOs(**replaced()))
    with pytest.raises(StoreWriteError) as info:
        await assistant.ask(Q3, thread_id=thread)
    monkeypatch.undo()
    assert (thread, code) == (info.value.thread_id, info.value.cause.errno)
    assert f"thread `{thread}`" in str(info.value)
    assert [] == leftovers(store.directory)
    fresh = JsonFileCheckpointStore(store.directory)
    latest = await fresh.load_latest(thread)
    if fault == "disk-full-mid-question":  # the question's first steps were saved
        saved = checkpoint_files(folder)
        assert before == {name: saved[name] for name in before}  # older files untouched
        assert latest is not None
        assert (2, "running", "research") == (len(saved) - len(before), latest.status, latest.next)
    else:
        assert before == (checkpoint_files(folder) if folder.exists() else {})
        assert (latest_before and latest_before.checkpoint_id) == (latest and latest.checkpoint_id)
    reply = await assistant.ask(Q3, thread_id=thread)
    assert ("answered", "Tesla, Inc.") == (reply.status, reply.company)
    if thread == "alice":
        earlier = [("user", Q1), ("assistant", answers[0]), ("user", Q2), ("assistant", answers[1])]
        assert earlier == said(await assistant.history("alice"))[:4]


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
async def test_read_only_directory_fails_with_store_write_error(
    tmp_path: Path, thread: str
) -> None:
    """With the store directories chmod 0500, ask fails with StoreWriteError naming the thread and the previous checkpoint stays loadable."""
    if not permissions_enforced(tmp_path):
        pytest.skip("directory permissions are not enforced for this user (root)")
    assistant, store, _ = await two_answers(tmp_path)
    before = await store.load_latest(thread)
    folders = [store.directory, store.thread_dir("alice")]
    for folder in folders:
        folder.chmod(0o500)
    try:
        with pytest.raises(StoreWriteError) as info:
            await assistant.ask(Q3, thread_id=thread)
        assert (thread, errno.EACCES) == (info.value.thread_id, info.value.cause.errno)
        after = await JsonFileCheckpointStore(store.directory).load_latest(thread)
        assert (before and before.checkpoint_id) == (after and after.checkpoint_id)
    finally:
        for folder in folders:
            folder.chmod(0o700)
    assert [] == leftovers(store.directory)
    assert "answered" == (await assistant.ask(Q3, thread_id=thread)).status


async def test_disk_full_while_creating_the_key_leaves_no_partial_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC while the store writes its signing key leaves no key file and no temp file; the key is made once the disk has room."""
    directory = tmp_path / "store"
    store = JsonFileCheckpointStore(directory)
    monkeypatch.setattr(_filestore, "os", FaultyOs(write=disk_full_after(0)))
    with pytest.raises(OSError) as info:
        await store.secret()
    monkeypatch.undo()
    assert errno.ENOSPC == info.value.errno
    assert [] == sorted(os.listdir(directory))
    key = await JsonFileCheckpointStore(directory).secret()
    assert key.hex() == (directory / ".secret").read_text()
