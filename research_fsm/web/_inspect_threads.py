"""A store's threads, one page at a time, as the inspector's list shows them."""

from __future__ import annotations

from typing import Any

from ..engine import CheckpointStore, ThreadInfo
from ..engine.store import THREAD_STATUSES, ThreadListing
from ..errors import ResearchError

__all__ = ["THREAD_STATUSES", "ThreadsUnavailable", "list_threads"]


class ThreadsUnavailable(ResearchError, TypeError):
    """The store cannot list its threads (a store of your own without ``threads``)."""


def _json(info: ThreadInfo) -> dict[str, Any]:
    return {
        "id": info.thread_id,
        "status": info.status,
        "node": info.node,
        "updated": info.updated_at,
        "checkpoints": info.checkpoints,
        "parent": info.parent_thread_id,
        "unreadable": info.unreadable,
    }


async def list_threads(
    store: CheckpointStore,
    *,
    limit: int,
    cursor: str | None,
    prefix: str,
    status: str | None,
    children: bool,
) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the store's threads, newest first, and the cursor of the next page
    (``None``: the last page); ``InvalidThreadQuery`` for a bad argument."""
    if not isinstance(store, ThreadListing):
        raise ThreadsUnavailable(
            f"{type(store).__name__} cannot list its threads (it has no threads() method); "
            "open a thread by its id instead"
        )
    page = await store.threads(
        limit=limit, cursor=cursor, prefix=prefix, status=status, children=children
    )
    return [_json(info) for info in page.threads], page.next_cursor
