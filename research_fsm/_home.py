"""The assistant's home folder: conversations, reports, deep-research sessions and
document indexes all live under it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_home"]


def default_home() -> Path:
    """``$RESEARCH_FSM_HOME``, else ``research-fsm`` in the user's data directory
    (``$XDG_DATA_HOME``, else ``~/.local/share``)."""
    env = os.environ.get("RESEARCH_FSM_HOME")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "research-fsm"
