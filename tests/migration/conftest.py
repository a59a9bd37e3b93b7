"""The migration suite's fixtures: what each LangGraph program gave (``record.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research_fsm.engine import StateSnapshot

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> Any:
    """What the LangGraph program ``name`` gave, as ``record.py`` stored it."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def as_langgraph_positions(history: list[StateSnapshot[Any]]) -> list[StateSnapshot[Any]]:
    """The translation `app.get_state_history`'s error names: a step's checkpoint and
    the pause or questions after it are one of LangGraph's, so each snapshot that a
    suspended one at the same `.next` follows is dropped (newest first, as `history`
    lists them). LangGraph's input checkpoint, its oldest, has no counterpart."""
    newer = [None, *history]
    return [
        s
        for s, after in zip(history, newer, strict=False)
        if after is None or after.status != "suspended" or after.next != s.next
    ]
