"""Deprecated: the Q&A app is ``research_fsm.qa.runner`` (``QaRunner``) and the
assistant that composes the apps is ``research_fsm.assistant``. Names imported from
here still work, with a ``DeprecationWarning``."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__: list[str] = []

_HOME = {
    "DEFAULT_KEEP": "research_fsm.assistant",
    "ResearchAssistant": "research_fsm.assistant",
    "default_store": "research_fsm.assistant",
    "default_home": "research_fsm.assistant",
    "Answer": "research_fsm.qa.runner",
    "AssistantStream": "research_fsm.qa.runner",
    "InvalidQuestion": "research_fsm.qa.runner",
    "Progress": "research_fsm.qa.runner",
    "Reply": "research_fsm.qa.runner",
    "Token": "research_fsm.qa.runner",
}
"""Where each name of this module went."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"research_fsm.qa.assistant is deprecated: import {name} from "
        f"{home if home == 'research_fsm.assistant' else 'research_fsm.qa'}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
