"""research_fsm: a small asyncio agent-workflow engine and the company research
assistant built on it.

The engine's names (``StateGraph``, ``Suspend``, ``JsonFileCheckpointStore``...)
are importable from here and from ``research_fsm.engine``; the assistant's
(``ResearchAssistant``, ``Reply``...) load on first use, so ``import
research_fsm`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .engine import *  # noqa: F403
from .engine import __all__ as _engine_all

if TYPE_CHECKING:
    from ._logging import configure_logging as configure_logging
    from .assistant import Answer as Answer
    from .assistant import InvalidQuestion as InvalidQuestion
    from .assistant import Progress as Progress
    from .assistant import Reply as Reply
    from .assistant import ResearchAssistant as ResearchAssistant
    from .assistant import Token as Token
    from .state import ResearchState as ResearchState

__version__ = "0.1.0"

_LAZY = {
    "Answer": "assistant",
    "InvalidQuestion": "assistant",
    "Progress": "assistant",
    "Reply": "assistant",
    "ResearchAssistant": "assistant",
    "ResearchState": "state",
    "Token": "assistant",
    "configure_logging": "_logging",
}

__all__ = sorted([*_engine_all, *_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'research_fsm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
