"""``serve_http``: the MCP server over streamable HTTP (stdio: ``_front``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ._options import ServerOptions
from ._server import create_server

__all__ = ["http_app", "serve_http"]


def http_app(
    options: ServerOptions | None = None,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
) -> Any:
    """The ASGI app of streamable HTTP at ``/mcp``, behind the web page's rules: only the
    loopback names and ``allowed_hosts`` as ``Host`` (DNS rebinding), and no request
    from another site's page (``Origin``); ``InvalidServeOptions`` beyond loopback
    without ``allowed_hosts``."""
    from mcp.server.transport_security import TransportSecuritySettings

    from ..web import GuardMiddleware, allowed_host_names

    names = allowed_host_names(allowed_hosts, bind=host)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{name}:*" for name in names)],
        allowed_origins=[
            *(f"{scheme}://{name}" for scheme in ("http", "https") for name in names),
            *(f"{scheme}://{name}:*" for scheme in ("http", "https") for name in names),
        ],
    )
    server = create_server(options)
    app = server.streamable_http_app(transport_security=security, host=host)
    return GuardMiddleware(app, names)


def serve_http(
    options: ServerOptions | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allowed_hosts: Sequence[str] = (),
    err: TextIO | None = None,
) -> None:
    """Serve streamable HTTP on ``host:port`` until interrupted (loopback by default)."""
    import uvicorn

    from ..web import is_loopback

    err = err if err is not None else sys.stderr
    app = http_app(options, host=host, allowed_hosts=allowed_hosts)
    if not is_loopback(host):
        print(
            f"research-fsm: warning: serving MCP on {host}, not loopback: anyone who can "
            "reach this address can use the assistant and its API keys; there is no login",
            file=err,
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"research-fsm: MCP at http://{shown}:{port}/mcp (Ctrl-C stops)", file=err, flush=True)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
    )
