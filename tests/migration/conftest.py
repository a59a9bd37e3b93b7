"""The migration suite's fixtures: what each LangGraph program gave (``record.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> Any:
    """What the LangGraph program ``name`` gave, as ``record.py`` stored it."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
