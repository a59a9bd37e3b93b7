"""``benchmarks.fsync_paths``, the durable-write experiment, keeps working (its numbers are
judged on full runs, never here)."""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path

import pytest

from benchmarks.fsync_paths import Uring, measure


async def test_every_path_is_timed(tmp_path: Path) -> None:
    """A short run times every path, each a positive finite number of seconds."""
    result = await measure(tmp_path, 4)
    assert {"raw", "thread", "save", "prezeroed"} <= set(result)
    assert all(math.isfinite(seconds) and seconds > 0 for seconds in result.values()), result


async def test_io_uring_write_lands_in_order(tmp_path: Path) -> None:
    """The io_uring path appends each line whole and in order before it reports back."""
    try:
        uring = Uring()
    except OSError as exc:
        pytest.skip(f"io_uring is not available here: {exc}")
    uring.watch(asyncio.get_running_loop())
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for n in range(3):
            await uring.write_sync(fd, f"line {n}\n".encode())
    finally:
        os.close(fd)
        uring.close()
    assert "line 0\nline 1\nline 2\n" == (tmp_path / "log").read_text()
