"""What a ``JsonFileCheckpointStore`` left on disk for one thread, read byte by byte.

A thread's checkpoints are lines in its segment files (``...NNNNNNNNNNNN.jsonl``,
named after the seq of their first line); every complete line ends with a newline,
and zeros may follow the last one, to the end of its disk block.
These helpers look at the raw files, independently of the store's own reader.
"""

from __future__ import annotations

from pathlib import Path

from research_fsm.engine import Checkpoint
from research_fsm.stores import JsonFileCheckpointStore

SUFFIX = ".jsonl"


def first_seq(segment: Path) -> int:
    """The seq of a segment's first checkpoint, from its name."""
    return int(segment.name[-len(SUFFIX) - 12 : -len(SUFFIX)])


def segments(store: JsonFileCheckpointStore, thread_id: str) -> list[Path]:
    """The thread's segment files, oldest first."""
    found = [p for p in store.thread_files(thread_id) if p.name.endswith(SUFFIX)]
    return sorted(found, key=first_seq)


def moved_aside(store: JsonFileCheckpointStore, thread_id: str) -> list[Path]:
    """The thread's ``.corrupt`` files: damaged lines the store moved aside."""
    return [p for p in store.thread_files(thread_id) if p.name.endswith(".corrupt")]


def data(segment: Path) -> bytes:
    """A segment's bytes without the zeros after its last line (a durable store pads
    the file's last disk block with zeros: research_fsm.stores.file.append)."""
    return segment.read_bytes().rstrip(b"\0")


def contents(store: JsonFileCheckpointStore, thread_id: str) -> dict[str, bytes]:
    """Every segment's bytes (without its padding), by file name."""
    return {p.name: data(p) for p in segments(store, thread_id)}


def complete_lines(store: JsonFileCheckpointStore, thread_id: str) -> int:
    """Lines ending in a newline, over all the thread's segments."""
    return sum(data.count(b"\n") for data in contents(store, thread_id).values())


def unfinished(store: JsonFileCheckpointStore, thread_id: str) -> list[str]:
    """Segments that are empty or end in an unfinished line (a save cut short)."""
    return [name for name, data in contents(store, thread_id).items() if not data.endswith(b"\n")]


def newest_line(segment: Path) -> tuple[bytes, bytes]:
    """A segment's bytes split into (everything before its last line, its last line)."""
    raw = data(segment)
    assert raw.endswith(b"\n"), segment
    start = raw.rfind(b"\n", 0, -1) + 1
    return raw[:start], raw[start:]


async def everything_on_disk(directory: Path, thread_id: str) -> list[Checkpoint]:
    """Every checkpoint a reader finds on disk, newest first (a store without ``keep``
    lists them all, old segments not yet pruned included)."""
    return [cp async for cp in JsonFileCheckpointStore(directory).history(thread_id)]


def thread_ids(directory: Path) -> list[str]:
    """The (lower-case) threads with segments under ``directory``: ``<thread>=<seq>.jsonl``."""
    if not directory.exists():
        return []
    return sorted({p.name.partition("=")[0] for p in directory.glob(f"*={'[0-9]' * 12}{SUFFIX}")})


async def load_as_lease_holder(store: JsonFileCheckpointStore, thread_id: str) -> Checkpoint | None:
    """What the next lease holder loads (repairing what it must on the way)."""
    lease = await store.acquire(thread_id)
    try:
        return await store.load_latest(thread_id)
    finally:
        await lease.release()
