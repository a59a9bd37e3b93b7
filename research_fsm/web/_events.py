"""What the page receives: the assistant's events and errors as JSON-ready dicts."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from ..common.writer import MissingFontError
from ..deep import DeepProgress, DeepText, InvalidResearchRequest, ResearchReport
from ..engine import EngineError, InvalidResumeToken, StaleResumeToken, ThreadBusy
from ..qa import Answer, InvalidQuestion, Progress, Reply, Token, confidence_words
from ..reports import CompanyNotFound, InvalidReportRequest, Report, ReportProgress
from ..sources import DataSourceError
from ._markdown import markdown_tree
from ._request import BadRequest, TooLarge
from ._sourceview import source_url
from ._sse import sse

__all__ = [
    "ask_events",
    "cited_url",
    "deep_events",
    "describe",
    "report_events",
    "split_sources",
    "status",
]

_LOG = logging.getLogger("research_fsm.web")
_SOURCES_RE: Final = re.compile(r"\n\n(?:Sources:|出典:)\n((?:- .+\n?)+)$")
_JAPANESE: Final = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
REPORT_FILES: Final = ("report.md", "report.pdf")
"""The files of a report or session folder the page may download."""

_ERRORS: Final[tuple[tuple[type[Exception], int, str | None], ...]] = (
    (TooLarge, 413, None),
    (BadRequest, 400, None),
    (
        InvalidResumeToken,
        400,
        "This answer's token is not valid: it was edited or issued by "
        "another server. Ask your question again.",
    ),
    (
        StaleResumeToken,
        409,
        "This question was already answered (its token was used before). "
        "Ask again to continue the conversation.",
    ),
    (
        ThreadBusy,
        409,
        "This conversation is still busy with another question; wait for it to finish.",
    ),
    (InvalidQuestion, 400, None),
    (InvalidReportRequest, 400, None),
    (InvalidResearchRequest, 400, None),
    (CompanyNotFound, 404, None),
    (MissingFontError, 501, None),
    (DataSourceError, 502, None),
    (EngineError, 500, None),
)


def status(exc: Exception) -> int:
    """The HTTP status of an error raised before a response started."""
    return next((code for kind, code, _ in _ERRORS if isinstance(exc, kind)), 500)


def describe(exc: Exception) -> str:
    """A message for the page: never a traceback, nor anything secret."""
    for kind, _, message in _ERRORS:
        if isinstance(exc, kind):
            return message or str(exc)
    _LOG.error("unexpected error in the web app", exc_info=exc)
    return "Unexpected error on the server (see its log)."


def split_sources(text: str) -> tuple[str, list[dict[str, str]]]:
    """An answer's text without its trailing ``Sources:`` block, and the sources it lists."""
    match = _SOURCES_RE.search(text)
    if match is None:
        return text, []
    sources = []
    for line in match.group(1).splitlines():
        title, _, url = line[2:].rpartition(": ")
        sources.append({"title": title or url, "url": url})
    return text[: match.start()], sources


def language_of(markdown: str) -> str:
    """``ja`` when the report's first section title is Japanese (``## 概要``), else ``en``:
    the page's ``lang`` for the report (a company's name may be Japanese either way)."""
    heading = next((line for line in markdown.splitlines() if line.startswith("## ")), "")
    return "ja" if _JAPANESE.search(heading) else "en"


def confidence_label(reply: Reply) -> str | None:
    """How sure the answer is, in words (``None`` when it is not about a company)."""
    return reply.confidence_label()


def confidence_data(score: int | None) -> dict[str, Any]:
    """A saved answer's badge: its ``confidence`` (0-10) and ``confidence_label`` (words),
    both ``None`` for an answer no research went into (a reloaded page shows the badge again)."""
    label = None if score is None else confidence_words(score)
    return {"confidence": score, "confidence_label": label}


def reply_data(reply: Reply) -> dict[str, Any]:
    """An answer or a question back, as the page shows it."""
    if reply.status == "needs_clarification":
        return {"text": reply.text, "token": reply.token, "thread_id": reply.thread_id}
    text, listed = split_sources(reply.text)
    sources = [{"title": s.title, "url": s.url} for s in reply.sources] or listed
    return {
        "text": text,
        "tree": markdown_tree(text, breaks=True),
        "thread_id": reply.thread_id,
        "company": reply.company,
        "confidence": reply.confidence,
        "confidence_label": confidence_label(reply),
        "sources": sources,
        "usage": reply.usage_line(),
        "notes": reply.notes,
    }


def ask_events(event: Progress | Token | Answer) -> Iterable[bytes]:
    """A conversation's events: ``progress``, ``token``, then ``answer`` or ``question``."""
    if isinstance(event, Progress):
        yield sse("progress", {"agent": event.agent, "message": event.message})
    elif isinstance(event, Token):
        yield sse("token", {"text": event.text})
    else:
        kind = "question" if event.reply.status == "needs_clarification" else "answer"
        yield sse(kind, reply_data(event.reply))


def _files(kind: str, folder: Path | None, paths: list[Path]) -> list[dict[str, str]]:
    if folder is None:
        return []
    names = [p.name for p in paths if p.name in REPORT_FILES and p.parent == folder]
    return [{"name": n, "url": f"/api/files/{kind}/{folder.name}/{n}"} for n in names]


def _step(name: str, branch: str | None, finished: bool, message: str) -> dict[str, Any]:
    """A step of a report or a session: one line per agent (and parallel branch), its
    message from the app's agent table (an event made without one shows its name's words)."""
    shown = message or name.replace("_", " ")
    return {"agent": name, "branch": branch, "finished": finished, "message": shown}


def report_events(event: ReportProgress | Report) -> Iterable[bytes]:
    """A report's events: ``progress``..., then ``report`` or ``question`` (which company?)."""
    if isinstance(event, ReportProgress):
        yield sse("progress", _step(event.agent, event.branch, event.finished, event.message))
    elif event.status == "needs_clarification":
        data = {"text": event.question, "choices": event.choices, "thread_id": event.thread_id}
        yield sse("question", data)
    else:
        links = {str(s.get("id")): str(s.get("url", "")) for s in event.sources}
        yield sse(
            "report",
            {
                "company": event.company,
                "thread_id": event.thread_id,
                "summary": event.summary_line(),
                "language": language_of(event.markdown),
                "tree": markdown_tree(event.markdown, links),
                "files": _files("reports", event.folder, event.paths),
                "folder": None if event.folder is None else event.folder.name,
            },
        )


def cited_url(session_id: str, source: dict[str, Any]) -> str | None:
    """Where the page opens a session's source: a web page's URL, or the page's own view
    of a cited file at its lines (``/api/source/<session>/<S#>``)."""
    if source.get("kind") == "file":
        return source_url(session_id, str(source.get("id")))
    locator = source.get("locator")
    return locator if isinstance(locator, str) else None


def deep_events(event: DeepProgress | DeepText | ResearchReport) -> Iterable[bytes]:
    """A deep-research session's events: ``progress``, ``token`` (the draft), ``deep``."""
    if isinstance(event, DeepProgress) and event.indexing is not None:
        step = event.indexing
        data = _step(event.stage, None, event.finished, event.message)
        eta = step.eta_seconds()
        data["message"] += f": {step.files_done}/{step.files_total} files" + (
            "" if event.finished or eta is None else f", about {eta:.0f} s left"
        )
        data["indexing"] = {
            "files_done": step.files_done,
            "files_total": step.files_total,
            "mb_per_s": round(step.bytes_per_second() / 1_048_576, 2),
            "eta_s": None if eta is None else round(eta, 1),
        }
        yield sse("progress", data)
    elif isinstance(event, DeepProgress):
        yield sse("progress", _step(event.stage, event.branch, event.finished, event.message))
    elif isinstance(event, DeepText):
        yield sse("token", {"text": event.text})
    else:
        sources = [
            {
                "id": s.get("id"),
                "title": s.get("title") or s.get("locator"),
                "url": cited_url(event.session_id, s),
            }
            for s in event.sources
        ]
        links = {str(s["id"]): str(s["url"]) for s in sources if s["id"]}
        yield sse(
            "deep",
            {
                "status": event.status,
                "session_id": event.session_id,
                "topic": event.topic,
                "language": event.language,
                "tree": markdown_tree(event.markdown, links),
                "summary": event.summary,
                "key_points": event.key_points,
                "steps": event.steps,
                "caveats": event.caveats,
                "sources": sources,
                "files": _files("sessions", event.folder, event.paths),
                "folder": None if event.folder is None else event.folder.name,
            },
        )
