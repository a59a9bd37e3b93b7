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

from typing import Any

from .._home import default_home
from .._moved import moved
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
    confidence_words,
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
    "confidence_words",
    "default_home",
]


def __getattr__(name: str) -> Any:
    # ResearchAssistant, default_store, DEFAULT_KEEP: moved up to the composition root,
    # which the public front registers (this package cannot name the floor above it)
    return moved(__name__, name)
