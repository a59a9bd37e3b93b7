"""``ServerOptions``: what ``research-fsm mcp`` was started with (no SDK import: the
stdio front reads it before the SDK has loaded)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._roots import DocsRoots

__all__ = ["ServerOptions"]


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """What ``research-fsm mcp`` was started with."""

    docs_roots: DocsRoots = field(default_factory=DocsRoots)
    """The only folders deep research may read."""
    source: str | None = None
    """The data source of questions and reports (``mock``, ``directory``, ``tavily``, ``auto``)."""
