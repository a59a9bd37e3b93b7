"""The page's past work: its conversations, saved company reports and research sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Final

from ..assistant import ResearchAssistant
from ..deep import list_sessions, sessions_home
from ..engine.store import ThreadListing
from ..reports import list_reports, reports_home
from ._events import REPORT_FILES, cited_url, language_of
from ._markdown import markdown_tree

__all__ = ["past_work", "saved_report"]

SHOWN: Final = 20
"""Items of each kind listed (the newest)."""
_TITLE: Final = 80


def _files(kind: str, folder: Path) -> list[dict[str, str]]:
    return [
        {"name": name, "url": f"/api/files/{kind}/{folder.name}/{name}"}
        for name in REPORT_FILES
        if (folder / name).is_file()
    ]


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE else line[: _TITLE - 1] + "…"


async def _conversations(assistant: ResearchAssistant) -> list[dict[str, Any]]:
    """The page's conversations (``web-...`` threads), newest first, each titled by its
    first question."""
    store = assistant.store
    if not isinstance(store, ThreadListing):
        return []
    page = await store.threads(limit=SHOWN, prefix="web-", children=False)
    found = []
    for info in page.threads:
        messages = await assistant.history(info.thread_id)
        first = next((m.content for m in messages if m.role == "user"), "")
        found.append(
            {
                "thread_id": info.thread_id,
                "title": _title(first) or info.thread_id,
                "turns": sum(m.role == "user" for m in messages),
                "updated": info.updated_at,
                "status": info.status,
            }
        )
    return found


def _saved() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    reports = [
        {
            "id": entry.path.name,
            "title": entry.company,
            "created": entry.generated_at,
            "files": _files("reports", entry.path),
        }
        for entry in list_reports(reports_home())[:SHOWN]
    ]
    sessions = [
        {
            "id": entry.id,
            "title": _title(entry.topic),
            "created": entry.created_at,
            "status": entry.status,
            "files": _files("sessions", entry.folder),
        }
        for entry in list_sessions(sessions_home())[:SHOWN]
    ]
    return reports, sessions


async def past_work(assistant: ResearchAssistant) -> dict[str, Any]:
    """The newest conversations, company reports and research sessions."""
    reports, sessions = await asyncio.to_thread(_saved)
    conversations = await _conversations(assistant)
    return {"conversations": conversations, "reports": reports, "sessions": sessions}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _links(folder: Path) -> dict[str, str]:
    """A session's ``[S#]`` links, from its ``sources.json``: web pages, and the page's
    view of a cited file at its lines."""
    try:
        sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    links = {}
    for source in sources if isinstance(sources, list) else []:
        if isinstance(source, dict) and isinstance(source.get("id"), str):
            url = cited_url(folder.name, source)
            if url:
                links[source["id"]] = url
    return links


async def saved_report(kind: str, folder: Path) -> dict[str, Any] | None:
    """A saved report's or session's ``report.md`` as the page's tree, or ``None``."""
    markdown = await asyncio.to_thread(_read, folder / "report.md")
    if markdown is None:
        return None
    links = await asyncio.to_thread(_links, folder) if kind == "sessions" else {}
    return {
        "id": folder.name,
        "language": language_of(markdown),
        "tree": markdown_tree(markdown, links),
        "files": await asyncio.to_thread(_files, kind, folder),
    }
