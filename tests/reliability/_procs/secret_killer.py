"""Child program: starts a thread that suspends, and SIGKILLs itself while the store
writes its token-signing key (the first suspension is what creates ``.secret``).

Usage: ``python secret_killer.py STORE_DIR POINT`` with POINT one of
``before-write`` (key file opened, nothing written), ``mid-write`` (half the key
written) or ``before-fsync`` (key written, not yet synced). Prints the number of
checkpoint files written before dying; exits 0 only if it was not killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from crash_child import engine_app

from research_fsm.stores import JsonFileCheckpointStore

real_open, real_write, real_fsync = os.open, os.write, os.fsync
key_fds: set[int] = set()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def spy_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
    fd = real_open(path, flags, mode, **kw)  # type: ignore[arg-type]
    if "secret" in Path(path).name:
        key_fds.add(fd)
    return fd


def spy_write(fd: int, data: bytes) -> int:
    if fd in key_fds:
        if POINT == "before-write":
            die()
        if POINT == "mid-write":
            real_write(fd, bytes(data)[: len(data) // 2])
            die()
    return real_write(fd, data)


def spy_fsync(fd: int) -> None:
    if fd in key_fds and POINT == "before-fsync":
        die()
    real_fsync(fd)


async def main(directory: Path) -> None:
    app = engine_app(JsonFileCheckpointStore(directory, durability="fsync"))
    os.open, os.write, os.fsync = spy_open, spy_write, spy_fsync  # type: ignore[assignment]
    await app.run({"turn": 1, "log": ["in1"]}, thread_id="t")


if __name__ == "__main__":
    POINT = sys.argv[2]
    asyncio.run(main(Path(sys.argv[1])))
    print("not killed", flush=True)
