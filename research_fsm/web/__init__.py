"""The web page of the research assistant: ``research-fsm serve`` (needs the ``web`` extra).

``create_app(assistant)`` is the ASGI app (Starlette): one page (``/``) and JSON +
server-sent-event endpoints under ``/api``; ``serve`` runs it with uvicorn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._guard import (
    LOOPBACK_HOSTS,
    GuardMiddleware,
    InvalidServeOptions,
    allowed_host_names,
    is_loopback,
)

if TYPE_CHECKING:
    from ._app import assistant_graphs, create_app
    from ._inspect import GraphFor, InspectorRefused, inspector, inspector_app
    from ._request import MAX_BODY_BYTES
    from ._serve import serve

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_BODY_BYTES",
    "GraphFor",
    "GuardMiddleware",
    "InspectorRefused",
    "InvalidServeOptions",
    "allowed_host_names",
    "assistant_graphs",
    "create_app",
    "inspector",
    "inspector_app",
    "is_loopback",
    "serve",
]

_LAZY = {
    "create_app": "_app",
    "assistant_graphs": "_app",
    "inspector": "_inspect",
    "inspector_app": "_inspect",
    "GraphFor": "_inspect",
    "InspectorRefused": "_inspect",
    "serve": "_serve",
    "MAX_BODY_BYTES": "_request",
}
"""Loaded on first use: they bring the assistant (``research-fsm mcp`` shares the guard
without it)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'research_fsm.web' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
