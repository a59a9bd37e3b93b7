"""``research-fsm inspect``: the thread inspector page (needs the ``web`` extra)."""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..engine import CheckpointStore, CompiledGraph, StateGraph
from ._serve import EXIT_ADDRESS, EXIT_USAGE, address_problem, web_refused

__all__ = ["add_inspect_parser", "load_graph", "run_inspect"]


class GraphNotFound(ValueError):
    """``--graph module:attribute`` names nothing importable, or not a graph."""


def add_inspect_parser(sub: Any) -> None:
    """Add ``inspect`` to the CLI's subcommands."""
    inspect = sub.add_parser(
        "inspect",
        help="look at, edit, re-run and fork the threads of a store in the browser",
        description="Serve a page with the threads of a store: their timelines of "
        "checkpoints, each state and what changed, the graph, and (with --graph) edits, "
        "re-runs, forks, resumes and deletes through the engine. Without --store: the "
        "assistant's own store and graphs. Binds to 127.0.0.1; --allow-remote serves "
        "beyond loopback behind a token printed at start. Needs: pip install "
        "'research-fsm[web]'. Exit status: 0 stopped with Ctrl-C, 2 bad usage, 4 the "
        "address cannot be listened on.",
    )
    inspect.add_argument(
        "--store",
        metavar="DIR|URL",
        help="a file store's folder, or postgresql://... (default: the assistant's store)",
    )
    inspect.add_argument(
        "--graph",
        metavar="MODULE:ATTRIBUTE",
        help="the compiled graph (or StateGraph) that runs the threads, e.g. "
        "myapp.graphs:app; without it a --store is read-only",
    )
    inspect.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    inspect.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    inspect.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host beyond loopback: every request then needs the token printed at start",
    )
    inspect.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the page is reached by besides localhost (repeat for several)",
    )


def load_graph(spec: str) -> CompiledGraph[Any]:
    """The graph ``module:attribute`` names (the current folder importable), compiled
    if it is a ``StateGraph``; ``GraphNotFound`` saying what is wrong."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise GraphNotFound(
            f"--graph must be module:attribute (e.g. myapp.graphs:app), got {spec!r}"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise GraphNotFound(f"--graph: cannot import {module_name!r}: {exc}") from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise GraphNotFound(f"--graph: {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if isinstance(value, StateGraph):
        value = value.compile()
    if not isinstance(value, CompiledGraph):
        raise GraphNotFound(
            f"--graph: {spec} is a {type(value).__name__}, not a compiled graph or a StateGraph"
        )
    return value


def _open_store(spec: str) -> CheckpointStore:
    from ..stores import JsonFileCheckpointStore, open_store

    if "://" in spec or spec.startswith(("file:", "memory:")):
        return open_store(spec)
    return JsonFileCheckpointStore(spec)


def run_inspect(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 when the ``web`` extra is missing or the options are
    bad, 4 when the address cannot be listened on."""
    refused = web_refused(args.port, "the inspector", ("starlette", "uvicorn"))
    if refused is not None:
        return refused
    from ..web import InvalidServeOptions, allowed_host_names, inspector_app, is_loopback

    remote = not is_loopback(args.host)
    if remote and not args.allow_remote:
        print(
            f"research-fsm: --host {args.host} is beyond loopback: add --allow-remote (every "
            "request then needs the token printed at start)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        allowed_host_names(args.allowed_host)
        graph = load_graph(args.graph) if args.graph else None
        store, graph_for, what = _target(args.store, graph, args.graph)
    except (InvalidServeOptions, GraphNotFound, ValueError) as exc:
        print(f"research-fsm: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = address_problem(args.host, args.port)
    if problem is not None:
        print(f"research-fsm: {problem}", file=sys.stderr)
        return EXIT_ADDRESS
    token = secrets.token_urlsafe(24) if remote else None
    app = inspector_app(store, graph_for, allowed_hosts=args.allowed_host, token=token)
    name = args.host if not remote else (args.allowed_host or [args.host])[0]
    shown = f"[{name}]" if ":" in name else name
    address = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    print(f"research-fsm: {what}", file=sys.stderr)
    print(f"research-fsm: the inspector is at {address} (Ctrl-C stops)", file=sys.stderr)
    if token:
        print(
            "research-fsm: warning: beyond loopback; the token in that address is required "
            "on every request, keep it secret",
            file=sys.stderr,
        )
    import uvicorn

    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    except SystemExit as exc:
        if exc.code in (0, None):
            return 0
        print(f"research-fsm: cannot listen on {args.host} port {args.port}", file=sys.stderr)
        return EXIT_ADDRESS
    return 0


def _target(
    spec: str | None, graph: CompiledGraph[Any] | None, graph_spec: str | None = None
) -> tuple[CheckpointStore, Callable[[str], Awaitable[CompiledGraph[Any] | None]], str]:
    """The store, the graph of each thread, and a line saying what is inspected."""
    if spec is None and graph is None:
        from ..assistant import ResearchAssistant
        from ..web import assistant_graphs

        assistant = ResearchAssistant.from_env()
        return assistant.store, assistant_graphs(assistant), "the assistant's threads"
    if spec is None:
        assert graph is not None
        store = graph.store
    else:
        store = _open_store(spec)
    if graph is not None:
        bound = graph.on_store(store)
        if bound.store is not store:
            raise ValueError(
                "--graph is compiled with a store of its own: compile it without a store "
                "(the inspector runs it on --store), or leave --store out"
            )

        async def only(thread: str) -> CompiledGraph[Any] | None:
            return bound

        where = spec or "the graph's own store"
        return store, only, f"threads of {where}, run by {graph_spec}"

    async def none(thread: str) -> CompiledGraph[Any] | None:
        return None

    return store, none, f"threads of {spec} (read-only: give --graph to edit and continue)"
