"""What the apps save: owner-only files written all or nothing, stamped with ``utc_now``."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ResearchError

__all__ = ["Clock", "ReportStoreError", "utc_now", "write_file"]

Clock = Callable[[], datetime]
"""What tells the apps the time (``ResearchAssistant(clock=...)``; tests pass a fixed one)."""


class ReportStoreError(ResearchError, OSError):
    """A report folder could not be created or written (names the path)."""


def utc_now(clock: Clock | None = None) -> str:
    """The current UTC time (``clock``'s, default the system's), ISO-8601 to the second."""
    now = clock() if clock is not None else datetime.now(UTC)
    return now.astimezone(UTC).isoformat(timespec="seconds")


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, owner-only and all or nothing (blocking): into a new
    temporary file beside it (``O_EXCL``, never through a link), then renamed over
    ``path``, so a crash leaves the old file or the new one, and a link planted at
    ``path`` is replaced, never written through."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ReportStoreError(f"cannot write {path}: {exc}") from exc
