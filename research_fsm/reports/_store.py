"""Where reports are saved: ``<home>/reports/<slug>-<UTC timestamp>/``, owner-only."""

from __future__ import annotations

import json
import os
import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

__all__ = [
    "ReportEntry",
    "ReportStoreError",
    "list_reports",
    "new_report_dir",
    "slug",
    "write_file",
]

MAX_SLUG: Final = 48
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")


class ReportStoreError(OSError):
    """A report folder could not be created or written (names the path)."""


def slug(name: str) -> str:
    """A file-name-safe form of a company name: ASCII letters, digits and dashes only,
    so no name can leave the reports folder ("../x" -> "x"); ``company`` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")[:MAX_SLUG].strip("-")
    return cleaned or "company"


def new_report_dir(root: Path, company: str, now: datetime | None = None) -> Path:
    """Create (0700) and return a new folder for a report of ``company`` under ``root``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = f"{slug(company)}-{stamp}"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        for attempt in range(1, 100):
            path = root / (base if attempt == 1 else f"{base}-{attempt}")
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise ReportStoreError(f"cannot create a report folder in {root}: {exc}") from exc
    raise ReportStoreError(f"too many reports of {company!r} this second in {root}")


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


@dataclass(frozen=True, slots=True)
class ReportEntry:
    """A saved report, as ``research-fsm reports`` lists it."""

    company: str
    generated_at: str
    score: int | None
    path: Path


def list_reports(root: Path) -> list[ReportEntry]:
    """Saved reports under ``root``, newest first (folders without a readable
    ``meta.json`` are skipped)."""
    entries = []
    for folder in root.glob("*/meta.json") if root.is_dir() else []:
        try:
            meta = json.loads(folder.read_text(encoding="utf-8"))
            entries.append(
                ReportEntry(
                    str(meta["company"]), str(meta["generated_at"]),
                    meta.get("score"), folder.parent,
                )
            )  # fmt: skip
        except (OSError, ValueError, KeyError):
            continue
    return sorted(entries, key=lambda e: (e.generated_at, str(e.path)), reverse=True)
