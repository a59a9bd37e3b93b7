"""``research-fsm mcp``: the assistant as an MCP server (needs the ``mcp`` extra).

Loaded without the rest of the command line (``cli.main`` routes ``mcp`` here first),
so a client sees the tools listed as soon as the SDK has loaded."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from typing import Any

__all__ = ["add_mcp_parser", "main_mcp", "run_mcp"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_ADDRESS, EXIT_INTERRUPTED = 0, 1, 2, 4, 130


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default: a desktop client starts the server) or http (streamable "
        "HTTP at http://HOST:PORT/mcp)",
    )
    parser.add_argument(
        "--docs-root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder deep_research may read (repeat for several); no other folder is read",
    )
    parser.add_argument("--host", default="127.0.0.1", help="http: address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="http: port (default 8765)")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="http: a host name the server is reached by besides localhost; required "
        "with a --host beyond loopback",
    )
    parser.add_argument("--source", help="data source: mock, directory, tavily or auto")


DESCRIPTION = (
    "Serve the assistant's tools (ask, report, deep_research, continue_run, list_reports, "
    "list_sessions) and its saved reports and sessions over the Model Context Protocol. "
    "Needs: pip install 'research-fsm[mcp]'. Exit status: 0 the client closed the "
    "connection, 2 bad usage or the mcp extra missing, 4 the address cannot be listened "
    "on, 130 interrupted."
)


def add_mcp_parser(sub: Any) -> None:
    """Add ``mcp`` to the CLI's subcommands (so ``--help`` lists it)."""
    _arguments(
        sub.add_parser(
            "mcp", help="serve the assistant over MCP (stdio or HTTP)", description=DESCRIPTION
        )
    )


def _fail(message: str, code: int) -> int:
    print(f"research-fsm: {message}", file=sys.stderr, flush=True)
    return code


def main_mcp(argv: list[str]) -> int:
    """``research-fsm mcp ARGS``: parse and serve."""
    parser = argparse.ArgumentParser(prog="research-fsm mcp", description=DESCRIPTION)
    _arguments(parser)
    return run_mcp(parser.parse_args(argv))


def run_mcp(args: argparse.Namespace) -> int:
    """Serve until the client leaves (stdio) or Ctrl-C (http)."""
    if importlib.util.find_spec("mcp") is None:
        return _fail(
            "the MCP server needs the mcp extra: pip install 'research-fsm[mcp]'", EXIT_USAGE
        )
    if not 0 < args.port < 65536:
        return _fail(f"--port must be from 1 to 65535, got {args.port}", EXIT_USAGE)
    from .._logging import configure_logging
    from ..errors import ResearchError
    from ..mcp import DocsRoots

    try:
        configure_logging()
        roots = DocsRoots(args.docs_root)  # checked before the SDK loads
        from ..mcp import ServerOptions

        options = ServerOptions(docs_roots=roots, source=args.source)
        if args.transport == "stdio":
            from ..mcp import serve_stdio

            asyncio.run(serve_stdio(options))
            return EXIT_OK
        from ..web import allowed_host_names
        from ._serve import address_problem

        allowed_host_names(args.allowed_host, bind=args.host)
        problem = address_problem(args.host, args.port)
        if problem is not None:
            return _fail(problem, EXIT_ADDRESS)
        from ..mcp import serve_http

        serve_http(options, host=args.host, port=args.port, allowed_hosts=args.allowed_host)
        return EXIT_OK
    except ResearchError as exc:
        return _fail(str(exc), EXIT_USAGE if isinstance(exc, ValueError) else EXIT_ERROR)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except SystemExit as exc:
        return (
            EXIT_OK
            if exc.code in (0, None)
            else _fail("the MCP server could not start", EXIT_ADDRESS)
        )
