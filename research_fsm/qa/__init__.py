"""The Q&A app: conversations about companies.

``QaRunner`` (``runner``) answers questions in threads on the graph of agents
(``graph``, ``agents``, each described once in ``agent_table``) over ``ResearchState``
(``state``), with the thresholds of ``constants``. ``research_fsm.ResearchAssistant``
composes it with the report and deep-research apps; importing ``ResearchAssistant``,
``default_store`` or ``DEFAULT_KEEP`` from here still works, with a
``DeprecationWarning`` (import them from ``research_fsm.assistant``; ``ResearchAssistant``
from ``research_fsm`` too).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .._home import default_home
from .agent_table import AGENTS
from .graph import build_research_graph
from .runner import (
    Answer,
    AssistantStream,
    InvalidQuestion,
    Progress,
    QaEvent,
    QaRunner,
    Reply,
    Token,
)
from .state import Message, ResearchState

__all__ = [
    "AGENTS",
    "Answer",
    "AssistantStream",
    "InvalidQuestion",
    "Message",
    "Progress",
    "QaEvent",
    "QaRunner",
    "Reply",
    "ResearchState",
    "Token",
    "build_research_graph",
    "default_home",
]

_MOVED = ("DEFAULT_KEEP", "ResearchAssistant", "default_store")
"""Names that moved up to the composition root, ``research_fsm.assistant``."""


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    where = "research_fsm" if name == "ResearchAssistant" else "research_fsm.assistant"
    warnings.warn(
        f"research_fsm.qa.{name} moved: `from {where} import {name}`",
        DeprecationWarning,
        stacklevel=2,
    )
    # by name, at the call: the composition root stands above the apps
    return getattr(importlib.import_module("research_fsm.assistant"), name)
