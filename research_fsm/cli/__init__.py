"""``research-fsm``, the command line: ask, answer, chat, graph, history (``_main``),
report and reports (``_reports``), deep and sessions (``_deep``), serve (``_serve``),
mcp (``_mcp``).

``main`` is the entry point of ``research-fsm``, ``python -m research_fsm`` and
``python -m research_fsm.cli``. It loads the commands itself, so Ctrl-C while they load
ends in one line too (exit status 130).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``research-fsm`` and ``python -m research_fsm``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["mcp"]:  # straight to the server: the tools list before the apps load
        from ._mcp import main_mcp

        return main_mcp(args[1:])
    try:
        from ._main import main as run
    except KeyboardInterrupt:
        print("research-fsm: interrupted", file=sys.stderr)
        return 130
    return run(argv)
