"""``research-fsm mcp``: the assistant as a Model Context Protocol server (needs the
``mcp`` extra: ``pip install 'research-fsm[mcp]'``).

``create_server(options)`` is the SDK's ``MCPServer`` with the tools ``ask``, ``report``,
``deep_research``, ``continue_run``, ``list_reports`` and ``list_sessions``, and the saved
reports and research sessions as resources (``research-fsm://reports/<id>/report.md``...);
``serve_stdio`` and ``serve_http`` run it. ``DocsRoots`` holds the only folders deep
research may read. See docs/mcp.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._options import ServerOptions
from ._roots import DocsRoots, FolderNotAllowed, InvalidDocsRoot

if TYPE_CHECKING:
    from ._front import serve_stdio
    from ._models import (
        AskResult,
        ContinueResult,
        DeepResult,
        ReportItem,
        ReportList,
        ReportResult,
        SessionItem,
        SessionList,
        SourceItem,
    )
    from ._serve import http_app, serve_http
    from ._server import SCHEME, create_server

__all__ = [
    "SCHEME",
    "AskResult",
    "ContinueResult",
    "DeepResult",
    "DocsRoots",
    "FolderNotAllowed",
    "InvalidDocsRoot",
    "ReportItem",
    "ReportList",
    "ReportResult",
    "ServerOptions",
    "SessionItem",
    "SessionList",
    "SourceItem",
    "create_server",
    "http_app",
    "serve_http",
    "serve_stdio",
]

_LAZY = {
    **dict.fromkeys(
        [
            "AskResult",
            "ContinueResult",
            "DeepResult",
            "ReportItem",
            "ReportList",
            "ReportResult",
            "SessionItem",
            "SessionList",
            "SourceItem",
        ],
        "_models",
    ),
    **dict.fromkeys(["http_app", "serve_http"], "_serve"),
    "serve_stdio": "_front",
    **dict.fromkeys(["SCHEME", "create_server"], "_server"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'research_fsm.mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
