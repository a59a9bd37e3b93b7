"""structlog set-up for the CLI and the examples (the library itself never configures logging)."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from ._tracing import add_trace_ids

__all__ = ["configure_logging", "escape_controls", "redact_secrets"]

_SECRET_VARS = ("ANTHROPIC_API_KEY", "TAVILY_API_KEY")


def redact_secrets(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor that masks API keys wherever they appear in a log line."""
    secrets = [v for v in (os.environ.get(k) for k in _SECRET_VARS) if v and len(v) >= 8]
    if not secrets:
        return event
    for key, value in event.items():
        text = value if isinstance(value, str) else None
        if text is None and not isinstance(value, (int, float, bool, type(None))):
            text = repr(value)
        if text is not None and any(s in text for s in secrets):
            for s in secrets:
                text = text.replace(s, "[REDACTED]")
            event[key] = text
    return event


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor that shows control and bidi characters in text values
    escaped (``\\x1b``), so a value that came from the web or an LLM cannot drive the
    terminal or forge log lines."""
    for key, value in event.items():
        if isinstance(value, str) and _CONTROLS.search(value):
            event[key] = _CONTROLS.sub(
                lambda match: match.group().encode("unicode_escape").decode("ascii"), value
            )
    return event


def configure_logging(
    level: str | None = None, fmt: str | None = None, stream: TextIO | None = None
) -> None:
    """Log to stderr: console lines by default, JSON with ``LOG_FORMAT=json``;
    the level from ``LOG_LEVEL`` (default WARNING)."""
    level_name = (level or os.environ.get("LOG_LEVEL") or "WARNING").upper()
    numeric = logging.getLevelName(level_name)
    if not isinstance(numeric, int):
        raise ValueError(
            f"LOG_LEVEL {level_name!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
        )
    fmt = (fmt or os.environ.get("LOG_FORMAT") or "console").lower()
    if fmt not in ("console", "json"):
        raise ValueError(f"LOG_FORMAT {fmt!r} is not one of console, json")
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            add_trace_ids,
            redact_secrets,
            escape_controls,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
