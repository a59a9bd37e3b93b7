"""structlog set-up for the CLI and the examples (the library itself never configures
logging), and the package's loggers.

structlog is imported by the first log line, not at start: ``import structlog`` loads
``rich`` (when installed) for its tracebacks and costs about as much as the rest of a cold
``research-fsm ask``'s imports, and most commands log nothing. ``get_logger(name)`` is
structlog's logger ``name`` with structlog imported on its first call;
``configure_logging`` applies at once when structlog is loaded, else the moment anything
imports it (the engine's warnings, a package's logger, another library), through a
one-shot finder on ``sys.meta_path``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Callable, MutableMapping, Sequence
from types import ModuleType
from typing import Any, TextIO

__all__ = ["configure_logging", "escape_controls", "get_logger", "redact_secrets"]


_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "critical": 50}
_threshold: int | None = None
"""The level ``configure_logging`` set while structlog was not loaded yet: a call below
it is dropped without loading structlog (structlog's filtering logger would drop it)."""


def _drop(*_args: Any, **_kwargs: Any) -> None:
    """A log call below the configured level."""


class _Logger:
    """structlog's logger ``name``, structlog imported on the first call (``.warning``,
    ``.bind``...) that is not below the level ``configure_logging`` set. structlog's own
    loggers resolve the configuration on each call, so this one does too."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        level = _LEVELS.get(attr, 0)
        if _threshold is not None and 0 < level < _threshold and "structlog" not in sys.modules:
            return _drop
        return getattr(importlib.import_module("structlog").get_logger(self._name), attr)

    def __repr__(self) -> str:
        return f"<logger {self._name!r}, structlog loaded on first use>"


def get_logger(name: str) -> Any:
    """structlog's ``get_logger(name)``, without importing structlog until it logs."""
    return _Logger(name)


_Apply = Callable[[ModuleType], None]


class _ThenApply(importlib.abc.Loader):
    """structlog's own loader, then ``apply`` on the module it made."""

    def __init__(self, loader: importlib.abc.Loader, apply: _Apply) -> None:
        self.loader, self.apply = loader, apply

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.apply(module)


class _WhenImported(importlib.abc.MetaPathFinder):
    """On ``sys.meta_path`` until structlog is imported: finds it the usual way and
    applies the configuration right after it loads; then leaves."""

    def __init__(self, apply: _Apply) -> None:
        self.apply = apply

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "structlog":
            return None
        _forget_pending()
        spec = importlib.util.find_spec(fullname)  # the finders after this one
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenApply(spec.loader, self.apply)
        return spec


def _forget_pending() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _WhenImported)]


def _when_structlog_loads(apply: _Apply) -> None:
    """``apply(structlog)`` now when structlog is loaded, else right after its import."""
    _forget_pending()
    loaded = sys.modules.get("structlog")
    if loaded is not None:
        apply(loaded)
    else:
        sys.meta_path.insert(0, _WhenImported(apply))


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
    the level from ``LOG_LEVEL`` (default WARNING). Checked now; applied to structlog
    now if it is loaded, else when it is first imported."""
    level_name = (level or os.environ.get("LOG_LEVEL") or "WARNING").upper()
    numeric = logging.getLevelName(level_name)
    if not isinstance(numeric, int):
        raise ValueError(
            f"LOG_LEVEL {level_name!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
        )
    fmt = (fmt or os.environ.get("LOG_FORMAT") or "console").lower()
    if fmt not in ("console", "json"):
        raise ValueError(f"LOG_FORMAT {fmt!r} is not one of console, json")
    out = stream or sys.stderr
    global _threshold
    _threshold = numeric

    def apply(structlog: Any) -> None:
        from ._tracing import add_trace_ids  # OpenTelemetry's API: loaded with structlog

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
            logger_factory=structlog.PrintLoggerFactory(file=out),
            cache_logger_on_first_use=False,
        )

    _when_structlog_loads(apply)
