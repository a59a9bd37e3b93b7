"""``research-fsm serve``: the web page (needs the ``web`` extra)."""

from __future__ import annotations

import argparse
import importlib.util
import socket
import sys
from typing import Any

__all__ = ["add_serve_parser", "run_serve"]

EXIT_USAGE, EXIT_ADDRESS = 2, 4


def web_refused(port: int, what: str, needs: tuple[str, ...]) -> int | None:
    """``EXIT_USAGE``, said on stderr, when a module of the ``web`` extra that ``what``
    (a page) ``needs`` is missing or ``port`` is no port; ``None`` when it can start."""
    if any(importlib.util.find_spec(m) is None for m in needs):
        print(
            f"research-fsm: {what} needs the web extra: pip install 'research-fsm[web]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not 0 < port < 65536:
        print(f"research-fsm: --port must be from 1 to 65535, got {port}", file=sys.stderr)
        return EXIT_USAGE
    return None


def address_problem(host: str, port: int) -> str | None:
    """Why the page cannot listen on ``host:port`` (in use, not allowed, unknown host),
    found by binding it for a moment as the server will; ``None`` when it can."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in infos:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
                probe.bind(address)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"cannot listen on {host} port {port}: {reason}; choose another with --port"
    return None


def add_serve_parser(sub: Any) -> None:
    """Add ``serve`` to the CLI's subcommands."""
    serve = sub.add_parser(
        "serve",
        help="serve the web page (conversations, reports, deep research)",
        description="Serve one page where you hold conversations with the assistant, see "
        "each agent's progress and the answer as it is written, and write reports. "
        "Binds to 127.0.0.1 unless told otherwise; needs: pip install 'research-fsm[web]'. "
        "There is no login: anyone who can reach the address can use the assistant and its "
        "API keys, so serving beyond loopback needs --allowed-host. "
        "Exit status: 0 stopped with Ctrl-C, 2 bad usage or the web extra missing, "
        "4 the address cannot be listened on (port in use, or not allowed).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name (or IP address) the page is reached by, besides localhost; "
        "repeat for several; required with a --host beyond loopback (no login: every "
        "request under these names is served)",
    )
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--docs", metavar="DIR", help="documents folder of deep research (default: $RESEARCH_DOCS)"
    )
    serve.add_argument("--source", help="data source: mock, directory, tavily or auto")


def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 when the ``web`` extra is missing or the options are bad,
    4 when the address cannot be listened on (checked before the page is announced)."""
    refused = web_refused(args.port, "the web page", ("starlette", "uvicorn", "markdown_it"))
    if refused is not None:
        return refused
    from ..assistant import ResearchAssistant
    from ..web import InvalidServeOptions, allowed_host_names, serve

    try:
        allowed_host_names(args.allowed_host, bind=args.host)
    except InvalidServeOptions as exc:
        print(f"research-fsm: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        assistant = ResearchAssistant.from_env(source=args.source)
    except ValueError as exc:
        print(f"research-fsm: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = address_problem(args.host, args.port)
    if problem is not None:
        print(f"research-fsm: {problem}", file=sys.stderr)
        return EXIT_ADDRESS
    try:
        serve(
            args.host,
            args.port,
            docs=args.docs,
            assistant=assistant,
            allowed_hosts=args.allowed_host,
        )
    except SystemExit as exc:  # the server could not start after all (taken meanwhile)
        if exc.code in (0, None):
            return 0
        print(f"research-fsm: cannot listen on {args.host} port {args.port}", file=sys.stderr)
        return EXIT_ADDRESS
    return 0
