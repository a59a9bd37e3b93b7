"""``file:DIR``: the JSON-lines file store, ``JsonFileCheckpointStore`` (``store``) over small parts.

``fs`` (every system call; a store takes ``fs=``, tests replace its methods to inject
faults), ``leases`` (one thread's lease: a byte-range lock, or a ``flock`` per
thread), ``segments`` (a thread's segment files and its segment list), ``heads``
(the open newest segment of each thread), ``append`` (a line written after the last
one), ``groupcommit`` and ``batch`` (saves sharing one sync; ``wakeup`` brings the
results back to the event loop) and ``secretfile`` (the token-signing key). Lines
are encoded by the stores' codec (``research_fsm.stores._codec``).
"""

from __future__ import annotations

from typing import Any

from .._schemes import InvalidStoreSetting, url_rest
from .store import JsonFileCheckpointStore

__all__ = ["JsonFileCheckpointStore", "from_url"]


def from_url(url: str, **options: Any) -> JsonFileCheckpointStore:
    """``file:DIR`` (``file:///abs/dir`` too) -> a ``JsonFileCheckpointStore`` in DIR;
    ``options`` as its constructor takes them (``keep=``, ``durability=``...)."""
    directory = url_rest(url)
    if not directory:
        raise InvalidStoreSetting("a file: store URL needs a folder: file:DIR")
    return JsonFileCheckpointStore(directory, **options)
