"""Run each LangGraph program of ``langgraph_programs`` once and store what it gave in
``fixtures/<name>.json`` (needs LangGraph: ``pip install -e .[bench]``)::

    python -m tests.migration.record
"""

from __future__ import annotations

import json
from pathlib import Path

from .langgraph_programs import PROGRAMS

FIXTURES = Path(__file__).parent / "fixtures"


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    for name, program in PROGRAMS.items():
        result = program()
        text = json.dumps(result, indent=1, sort_keys=True, default=str) + "\n"
        (FIXTURES / f"{name}.json").write_text(text, encoding="utf-8")
        print(f"{name}: {len(text)} bytes")


if __name__ == "__main__":
    main()
