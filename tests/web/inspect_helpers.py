"""The inspector's test graph (``examples/inspect_demo.py``) and a store that lists threads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from research_fsm.engine import MemoryCheckpointStore

ROOT = Path(__file__).resolve().parents[2]


def demo() -> Any:
    """``examples/inspect_demo.py`` as a module (``graph``, ``seed``)."""
    name = "inspect_demo"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "inspect_demo.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class ListingStore(MemoryCheckpointStore):
    """The memory store with a ``threads`` listing (until every store has one)."""

    async def threads(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        prefix: str | None = None,
        status: str | None = None,
    ) -> dict[str, Any]:
        rows = []
        for thread in list(self._threads):
            latest = await self.load_latest(thread)
            if latest is None or (prefix and not thread.startswith(prefix)):
                continue
            if status and latest.status != status:
                continue
            count = len([cp async for cp in self.history(thread)])
            parent = thread.rsplit(".", 2)[0] if thread.count(".") >= 2 else None
            rows.append(
                {
                    "thread_id": thread,
                    "status": latest.status,
                    "node": latest.next,
                    "updated": latest.created_at,
                    "checkpoints": count,
                    "parent": parent,
                }
            )
        rows.sort(key=lambda r: (r["updated"], r["thread_id"]), reverse=True)
        start = int(cursor) if cursor else 0
        page = rows[start : start + limit]
        following = str(start + limit) if start + limit < len(rows) else None
        return {"threads": page, "next_cursor": following}
