"""The web page of the research assistant: ``research-fsm serve`` (needs the ``web`` extra).

``create_app(assistant)`` is the ASGI app (Starlette): one page (``/``) and JSON +
server-sent-event endpoints under ``/api``; ``serve`` runs it with uvicorn.
"""

from __future__ import annotations

from ._app import create_app
from ._guard import LOOPBACK_HOSTS, InvalidServeOptions, allowed_host_names, is_loopback
from ._request import MAX_BODY_BYTES
from ._serve import serve

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_BODY_BYTES",
    "InvalidServeOptions",
    "allowed_host_names",
    "create_app",
    "is_loopback",
    "serve",
]
