"""A store's threads, one page at a time: the store's own ``threads`` listing.

A thin adapter over ``CheckpointStore.threads`` (cursor-paged thread summaries), so
the inspector reads one shape whatever the store returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..engine import CheckpointStore
from ..errors import ResearchError

__all__ = ["STATUSES", "ThreadRow", "ThreadsUnavailable", "list_threads"]

STATUSES: Final = ("completed", "suspended", "failed", "running")
"""The statuses a thread can be filtered by."""


class ThreadsUnavailable(ResearchError, TypeError):
    """The store cannot list its threads (it has no ``threads`` method)."""


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """One thread as the list shows it."""

    thread_id: str
    status: str | None
    node: str | None
    updated: str | None
    checkpoints: int | None
    parent: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.thread_id,
            "status": self.status,
            "node": self.node,
            "updated": self.updated,
            "checkpoints": self.checkpoints,
            "parent": self.parent,
        }


def _field(item: Any, *names: str) -> Any:
    for name in names:
        value = item.get(name) if isinstance(item, dict) else getattr(item, name, None)
        if value is not None:
            return value
    return None


async def list_threads(
    store: CheckpointStore,
    *,
    limit: int,
    cursor: str | None,
    prefix: str | None,
    status: str | None,
) -> tuple[list[ThreadRow], str | None]:
    """A page of the store's threads, newest first, and the cursor of the next page
    (``None``: the last page)."""
    threads = getattr(store, "threads", None)
    if threads is None:
        raise ThreadsUnavailable(
            f"{type(store).__name__} cannot list its threads (it has no threads() method); "
            "open a thread by its id instead"
        )
    page = await threads(limit=limit, cursor=cursor, prefix=prefix, status=status)
    items = _field(page, "threads", "items")
    items = page if items is None else items
    rows = [
        ThreadRow(
            thread_id=_field(item, "thread_id", "id"),
            status=_field(item, "status"),
            node=_field(item, "node", "next"),
            updated=_field(item, "updated", "updated_at"),
            checkpoints=_field(item, "checkpoints", "checkpoint_count", "count"),
            parent=_field(item, "parent", "parent_id", "parent_thread_id"),
        )
        for item in items
    ]
    following = _field(page, "next_cursor", "cursor", "next")
    return rows, following if isinstance(following, str) else None
