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

from .._home import default_home
from ..common.files import ReportStoreError, write_file

__all__ = ["ReportEntry", "list_reports", "new_report_dir", "reports_home", "slug"]

MAX_SLUG: Final = 48
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")


def reports_home() -> Path:
    """``$RESEARCH_FSM_HOME/reports`` (the same home as the conversations)."""
    return default_home() / "reports"


def slug(name: str) -> str:
    """A file-name-safe form of a company name: ASCII letters, digits and dashes only,
    so no name can leave the reports folder ("../x" -> "x"); ``company`` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")[:MAX_SLUG].strip("-")
    return cleaned or "company"


def _make_folders(root: Path) -> None:
    """Create ``root`` and any missing parent, each owner-only (0700 whatever the
    umask); a folder that exists already is left exactly as it is."""
    missing = []
    path = root
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by someone else: not ours to change
            continue
        os.chmod(folder, 0o700)


def _new_folder(path: Path) -> None:
    """Create ``path`` (its parent exists), owner-only; ``FileExistsError`` if it exists."""
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)


_PROBE_FILE: Final = "report.md"


def check_out_folder(root: Path) -> None:
    """Before a run that will save under ``root``: prove a report can be written there,
    by doing what saving it does: the missing folders made (0700), a report folder
    made in ``root`` and a file written into it, then both removed. A folder that
    cannot take a report (``/proc``, a file, no permission) is refused at once, by
    name, instead of after the research; ``root`` itself is never changed."""
    if root.exists() and not root.is_dir():
        raise ReportStoreError(f"cannot save reports in {root}: it is not a folder")
    try:
        _make_folders(root)
        probe = root / f".write-check-{secrets.token_hex(6)}"
        _new_folder(probe)
        try:
            write_file(probe / _PROBE_FILE, b"")
            (probe / _PROBE_FILE).unlink()
        finally:
            probe.rmdir()
    except (OSError, ReportStoreError) as exc:
        reason = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
        raise ReportStoreError(f"cannot save reports in {root}: {reason}") from exc


def new_report_dir(root: Path, company: str, now: datetime | None = None) -> Path:
    """Create (0700) and return a new folder for a report of ``company`` under ``root``
    (``root`` and its parents made when missing; an existing ``root`` is left as it is)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = f"{slug(company)}-{stamp}"
    try:
        _make_folders(root)
        for attempt in range(1, 100):
            path = root / (base if attempt == 1 else f"{base}-{attempt}")
            try:
                _new_folder(path)
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise ReportStoreError(f"cannot create a report folder in {root}: {exc}") from exc
    raise ReportStoreError(f"too many reports of {company!r} this second in {root}")


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
                    str(meta["company"]),
                    str(meta["generated_at"]),
                    meta.get("score"),
                    folder.parent,
                )
            )
        except (OSError, ValueError, KeyError):
            continue
    return sorted(entries, key=lambda e: (e.generated_at, str(e.path)), reverse=True)
