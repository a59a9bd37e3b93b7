"""``memory:``: the engine's ``MemoryCheckpointStore`` (nothing survives the process).

The smallest store folder: ``from_url`` is all the store table needs. The store
itself lives in the engine (``research_fsm.engine``), which runs without this package.
"""

from __future__ import annotations

from typing import Any

from research_fsm.engine import MemoryCheckpointStore

from .._schemes import InvalidStoreSetting, url_rest

__all__ = ["MemoryCheckpointStore", "from_url"]


def from_url(url: str, **options: Any) -> MemoryCheckpointStore:
    """``memory:`` -> a new ``MemoryCheckpointStore(**options)`` (``keep=``, ``secret=``)."""
    if url_rest(url):
        raise InvalidStoreSetting("a memory: store URL takes nothing after 'memory:'")
    return MemoryCheckpointStore(**options)
