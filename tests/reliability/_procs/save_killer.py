"""Child program: runs the crash child's engine conversation and SIGKILLs itself in
the middle of saving a checkpoint.

Usage: ``python save_killer.py STORE_DIR WHICH POINT``. The store keeps 2
checkpoints, so segments hold 2 lines and a new one starts every other save.
WHICH picks the save: ``first`` (the thread's first segment is made),
``rotated`` (its second segment is made) or ``appended`` (the first line added to
a segment that a later call opened again). POINT is ``after-create`` (the segment file made, nothing
written; only when a segment is made), ``mid-write`` (half the line written) or
``before-fsync`` (the line written, not yet synced). Prints the seq of the
checkpoint being saved just before dying; exits 0 only if it was not killed.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

from crash_child import advance_engine, engine_app

from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores.file.fs import FileSystem

KEEP = 2
real_open, real_write = os.open, os.write
real_fsync, real_fdatasync = os.fsync, os.fdatasync
real_syncfs = FileSystem.syncfs
watched: set[int] = set()
made = {"n": 0}  # segments made so far
SAVING = {"seq": 0}  # the checkpoint whose line was written last


def die(seq: int) -> None:
    print(seq, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def spy_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
    fd = real_open(path, flags, mode, **kw)  # type: ignore[arg-type]
    name = Path(path).name
    if not name.endswith(".jsonl") or not flags & os.O_WRONLY:
        return fd
    if flags & os.O_CREAT:  # a new segment
        made["n"] += 1
        if (WHICH, made["n"]) in (("first", 1), ("rotated", 2)):
            watched.add(fd)
            if POINT == "after-create":
                die(int(name[-len(".jsonl") - 12 : -len(".jsonl")]))
    elif WHICH == "appended":  # opened to append to
        watched.add(fd)
    return fd


def spy_write(fd: int, data: bytes) -> int:
    if fd in watched:
        match = re.search(rb'"seq":(\d+)', bytes(data))
        assert match is not None
        if POINT == "mid-write":
            line = bytes(data).rstrip(b"\0")  # without the zeros padding its disk block
            real_write(fd, line[: len(line) // 2])
            die(int(match[1]))
        SAVING["seq"] = int(match[1])
    return real_write(fd, data)


def spy_fsync(fd: int) -> None:
    if fd in watched and POINT == "before-fsync":
        die(SAVING["seq"])
    real_fsync(fd)


def spy_syncfs(fs: FileSystem, fd: int) -> None:  # a new segment's, with its folder's
    if fd in watched and POINT == "before-fsync":
        die(SAVING["seq"])
    real_syncfs(fs, fd)


def spy_fdatasync(fd: int) -> None:
    if fd in watched and POINT == "before-fsync":
        die(SAVING["seq"])
    real_fdatasync(fd)


async def main(directory: Path) -> None:
    app = engine_app(JsonFileCheckpointStore(directory, durability="fsync", keep=KEEP))
    os.open, os.write = spy_open, spy_write  # type: ignore[assignment]
    os.fsync, os.fdatasync = spy_fsync, spy_fdatasync  # type: ignore[assignment]
    FileSystem.syncfs = spy_syncfs  # type: ignore[method-assign]
    while await advance_engine(app, "t") is not None:
        pass


if __name__ == "__main__":
    WHICH, POINT = sys.argv[2], sys.argv[3]
    asyncio.run(main(Path(sys.argv[1])))
    print("not killed", flush=True)
