"""The company research assistant: conversations about companies.

``ResearchAssistant`` (``assistant``) answers questions in threads on the graph of
six agents (``graph``, ``agents``) over ``ResearchState`` (``state``), with the
thresholds of ``constants``; it also writes reports and does deep research by
composing the runners of ``research_fsm.reports`` and ``research_fsm.deep``.
"""

from .assistant import (
    DEFAULT_KEEP,
    Answer,
    AssistantStream,
    InvalidQuestion,
    Progress,
    Reply,
    ResearchAssistant,
    Token,
    default_home,
    default_store,
)
from .graph import build_research_graph
from .state import Message, ResearchState

__all__ = [
    "DEFAULT_KEEP",
    "Answer",
    "AssistantStream",
    "InvalidQuestion",
    "Message",
    "Progress",
    "Reply",
    "ResearchAssistant",
    "ResearchState",
    "Token",
    "build_research_graph",
    "default_home",
    "default_store",
]
