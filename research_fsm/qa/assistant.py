"""Deprecated: the Q&A app is ``research_fsm.qa.runner`` (``QaRunner``) and the
assistant that composes the apps is ``research_fsm.assistant``. Names imported from
here still work, with a ``DeprecationWarning`` (the public front registers where each
went: ``research_fsm._moved``)."""

from __future__ import annotations

from typing import Any

from .._moved import moved

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    return moved(__name__, name)
