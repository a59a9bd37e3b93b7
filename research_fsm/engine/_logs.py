"""The engine's structlog logger, loaded on first use.

``import structlog`` costs more than the rest of the engine's imports together (it loads
``rich`` for its tracebacks when rich is installed), and most runs log nothing: the engine
logs a warning when a node fails over to its ``on_error`` node or new input abandons a
run, and a node logs through ``ctx.log``. So structlog is imported by the first of those,
by name (``importlib``: the engine's one deferred import, which
``tests/engine/test_engine_layout.py`` keeps the only one). The logger is structlog's own
``get_logger("research_fsm.engine")``: an application's ``structlog.configure`` applies
to it as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog  # noqa: F401  (the module loaded below)

__all__ = ["engine_logger"]


def engine_logger(**context: Any) -> Any:
    """structlog's ``get_logger("research_fsm.engine")``, bound with ``context``
    (``thread_id=...``); structlog itself is imported on the first call."""
    structlog = importlib.import_module("structlog")
    return structlog.get_logger("research_fsm.engine", **context)
