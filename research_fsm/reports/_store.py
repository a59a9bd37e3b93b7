"""Where reports are saved: ``<home>/reports/<slug>-<UTC timestamp>/``, owner-only."""

from __future__ import annotations

import json
import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from .._home import default_home
from ..common.files import ReportStoreError

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


def check_out_folder(root: Path) -> None:
    """Before a run that will save under ``root``: create it (0700) if missing and make
    and remove an empty folder in it, so a folder that cannot take a report (``/proc``,
    a file, no permission) is refused at once, by name, instead of after the research."""
    if root.exists() and not root.is_dir():
        raise ReportStoreError(f"cannot save reports in {root}: it is not a folder")
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=".write-check-", dir=root))
        probe.rmdir()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ReportStoreError(f"cannot save reports in {root}: {reason}") from exc


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
