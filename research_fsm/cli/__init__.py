"""``research-fsm``, the command line: ask, answer, chat, graph, history (``_main``),
report and reports (``_reports``), deep and sessions (``_deep``), serve (``_serve``).

``main`` is the entry point of ``research-fsm``, ``python -m research_fsm`` and
``python -m research_fsm.cli``.
"""

from ._main import main

__all__ = ["main"]
