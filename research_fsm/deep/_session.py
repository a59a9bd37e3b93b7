"""Session history on disk: ``<home>/sessions/<id>/``, owner-only, one file per stage,
each written as its stage finishes (design 003's ``HistoryManager``).

| file | written by | holds |
| --- | --- | --- |
| ``session.json`` | start, report | topic, language, mode, status, created/finished |
| ``queries.json`` | query_parser | every query searched with |
| ``search_results.json`` | search | every retrieved source with its full text |
| ``relevance.json`` | relevance_filter | the filter's verdicts |
| ``evidence.json`` | synthesis | every analysis' facts and quotes |
| ``draft.md`` | synthesis | the draft with its ``[S#]`` citations |
| ``verification.json`` | verification | every round's claim checks and counts |
| ``report.md``, ``report.pdf`` | report | the report |
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._home import default_home
from ..common.files import ReportStoreError, write_file

__all__ = [
    "SessionEntry",
    "list_sessions",
    "new_session_folder",
    "new_session_id",
    "read_session",
    "session_folder",
    "sessions_home",
    "write_json",
    "write_stage",
]


def sessions_home() -> Path:
    """``$RESEARCH_FSM_HOME/sessions`` (the same home as the conversations)."""
    return default_home() / "sessions"


def new_session_id(now: datetime | None = None) -> str:
    """``deep-<UTC timestamp>-<64 random bits>``: sortable, unique, a valid thread id."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"deep-{stamp}-{secrets.token_hex(8)}"


def new_session_folder(root: Path) -> tuple[str, Path]:
    """A new session id and its folder, created (0700) by this call alone: an id whose
    folder exists already is never reused, so two sessions never share a folder."""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportStoreError(f"cannot create the sessions folder {root}: {exc}") from exc
    for _ in range(100):
        session_id = new_session_id()
        path = root / session_id
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as exc:
            raise ReportStoreError(f"cannot create the session folder {path}: {exc}") from exc
        return session_id, path
    raise ReportStoreError(f"cannot find a free session folder name in {root}")


def session_folder(root: Path, session_id: str) -> Path:
    """Create (0700) and return the folder of a session whose id the caller chose
    (generated ids go through ``new_session_folder``)."""
    path = root / session_id
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)
    except OSError as exc:
        raise ReportStoreError(f"cannot create the session folder {path}: {exc}") from exc
    return path


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as indented UTF-8 JSON, owner-only (blocking)."""
    write_file(path, json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8"))


async def write_stage(folder: str, files: dict[str, Any]) -> None:
    """Write a stage's files into the session folder off the event loop: ``str`` and
    ``bytes`` values as they are, anything else as JSON."""

    def work() -> None:
        base = Path(folder)
        for name, value in files.items():
            if isinstance(value, bytes):
                write_file(base / name, value)
            elif isinstance(value, str):
                write_file(base / name, value.encode("utf-8"))
            else:
                write_json(base / name, value)

    await asyncio.to_thread(work)


def read_session(folder: Path) -> dict[str, Any] | None:
    """The session's ``session.json``, or ``None`` when missing or unreadable."""
    try:
        value = json.loads((folder / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def mark_session(folder: Path, status: str) -> bool:
    """Set a session's ``status`` in its ``session.json`` (``cancelled`` when its run was
    stopped; continuing it writes ``completed`` at the end); ``False`` when it has none
    or has ended already (blocking)."""
    meta = read_session(folder)
    if meta is None or meta.get("status", "running") != "running":
        return False
    write_json(folder / "session.json", meta | {"status": status})
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEntry:
    """A session, as ``research-fsm sessions`` lists it."""

    id: str
    """The session id (also its thread id: ``--resume`` takes it)."""
    topic: str
    """The topic."""
    status: str
    """``running`` (or interrupted), ``cancelled``, ``completed`` or ``no_sources``."""
    created_at: str
    """When it started (ISO-8601 UTC)."""
    mode: str
    """``web`` or ``docs``."""
    folder: Path
    """Its folder."""
    report: Path | None
    """``report.md`` once written."""


def list_sessions(root: Path) -> list[SessionEntry]:
    """Every session under ``root``, newest first (folders without a readable
    ``session.json`` are left out)."""
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    entries = []
    for folder in folders:
        meta = read_session(folder)
        if meta is None:
            continue
        report = folder / "report.md"
        entries.append(
            SessionEntry(
                id=folder.name,
                topic=str(meta.get("topic", "")),
                status=str(meta.get("status", "running")),
                created_at=str(meta.get("created_at", "")),
                mode=str(meta.get("mode", "")),
                folder=folder,
                report=report if report.is_file() else None,
            )
        )
    return sorted(entries, key=lambda e: (e.created_at, e.id), reverse=True)
