"""The rows of ``PostgresCheckpointStore``: a checkpoint as one JSON body, whole or as changes.

Pure functions over checkpoints and bytes (no driver). A *full* row holds the
whole state; a *changes* row holds only what its step changed: the fields set
(``"set"``), which of them got items appended at the end (``"append"``: the set
value is then just the new items), and the parallel-branch records added or
replaced (``"bset"``) and removed (``"bdel"``). A changes row always follows its
parent's row (``seq - 1``), so a thread's newest state is its newest full row
folded with the changes rows after it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from research_fsm.engine import Checkpoint, CorruptCheckpoint
from research_fsm.engine._logformat import (
    SCHEMA_VERSION,
    Damaged,
    aliases_of,
    encode_body,
    fold,
)

__all__ = ["ROW_VERSION", "Folder", "encode"]

ROW_VERSION = SCHEMA_VERSION
"""Version of the row body format (the file store's line body); a newer one is refused."""


def encode(cp: Checkpoint, *, full: bool) -> bytes:
    """``cp`` as a row body: its whole state (``full``), or just ``cp.changes``."""
    aliases = aliases_of(type(cp.state)) if isinstance(cp.state, BaseModel) else {}
    return encode_body(cp, None if full else cp.changes, aliases)


class Folder:
    """Rebuilds checkpoints from a thread's rows, oldest first (a full row, then changes rows)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.latest: Checkpoint | None = None
        self._state: dict[str, Any] = {}

    def add(self, seq: int, body: bytes) -> Checkpoint:
        """Fold one row (``seq``, ``body``) onto the ones before it; return its checkpoint."""
        data = self._decode(seq, body)
        try:
            self.latest, self._state = fold(data, self._state, self.latest)
        except Damaged as exc:
            raise self._corrupt(seq, str(exc)) from None
        return self.latest

    def _decode(self, seq: int, body: bytes) -> dict[str, Any]:
        try:
            data = json.loads(body.decode("utf-8", "surrogatepass"))
        except ValueError as exc:
            raise self._corrupt(seq, f"not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("v"), int):
            raise self._corrupt(seq, "no row version")
        if data["v"] > ROW_VERSION:
            raise self._corrupt(
                seq,
                f"written with row version {data['v']}; this research_fsm reads up to "
                f"version {ROW_VERSION}: upgrade research_fsm",
            )
        if data.get("thread_id") != self.thread_id or data.get("seq") != seq:
            raise self._corrupt(seq, "the row belongs to another thread or position")
        return data

    def _corrupt(self, seq: int, detail: str) -> CorruptCheckpoint:
        return CorruptCheckpoint(self.thread_id, f"checkpoint row {seq}: {detail}")
