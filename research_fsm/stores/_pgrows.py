"""The rows of ``PostgresCheckpointStore``: a checkpoint as one JSON body, whole or as changes.

Pure functions over checkpoints and bytes (no driver). A *full* row holds the
whole state; a *changes* row holds only what its step changed: the fields set
(``"set"``), which of them got items appended at the end (``"append"``: the set
value is then just the new items), and the parallel-branch records added or
replaced (``"bset"``) and removed (``"bdel"``). A changes row always follows its
parent's row (``seq - 1``), so a thread's newest state is its newest full row
folded with the changes rows after it.

On disk a row's body is that JSON (older rows: it starts with ``{``) or, since
layout version 2, a tag byte ``\x01`` and the JSON compressed with raw deflate,
using as preset dictionary the last ``WINDOW`` bytes of the JSON of the rows
before it back to its full row (a full row: no dictionary). Steps repeat their
keys, ids and often values from turn to turn, so a changes row shrinks to a
tenth or less; reading still folds a full row and the rows after it in order.
"""

from __future__ import annotations

import json
import zlib
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

__all__ = ["DEFLATE", "ROW_VERSION", "WINDOW", "Folder", "encode", "pack", "slide"]

ROW_VERSION = SCHEMA_VERSION
"""Version of the row body format (the file store's line body); a newer one is refused."""


DEFLATE = 1
"""Tag byte of a compressed body (a plain JSON body starts with ``{``)."""
WINDOW = 4096
"""Bytes of the preceding rows' JSON a compressed body may refer back to."""


def encode(cp: Checkpoint, *, full: bool) -> bytes:
    """``cp`` as a row's JSON: its whole state (``full``), or just ``cp.changes``."""
    aliases = aliases_of(type(cp.state)) if isinstance(cp.state, BaseModel) else {}
    return encode_body(cp, None if full else cp.changes, aliases)


def pack(raw: bytes, window: bytes) -> bytes:
    """A row's JSON ``raw`` as stored: compressed against ``window`` (the rows before)."""
    # memLevel 7, not 9: the same bodies for rows this small, and a compressor that fits
    # under malloc's mmap threshold (memLevel 9 costs ~100 µs a row, 7 costs ~15).
    packer = (
        zlib.compressobj(9, zlib.DEFLATED, -15, 7, zdict=window)
        if window
        else zlib.compressobj(9, zlib.DEFLATED, -15, 7)
    )
    return bytes((DEFLATE,)) + packer.compress(raw) + packer.flush()


def slide(window: bytes, raw: bytes) -> bytes:
    """The window for the row after the one whose JSON is ``raw``."""
    return (window + raw)[-WINDOW:]


class Folder:
    """Rebuilds checkpoints from a thread's rows, oldest first (a full row, then changes rows)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.latest: Checkpoint | None = None
        self.window = b""
        """The dictionary of the next row (see ``pack``)."""
        self._state: dict[str, Any] = {}

    def add(self, seq: int, full: bool, body: bytes) -> Checkpoint:
        """Fold one row (``seq``, ``full``, ``body``) onto the ones before it; return its checkpoint."""
        if full:
            self.window = b""
        raw = self._unpack(seq, body)
        self.window = slide(self.window, raw)
        data = self._decode(seq, raw)
        try:
            self.latest, self._state = fold(data, self._state, self.latest)
        except Damaged as exc:
            raise self._corrupt(seq, str(exc)) from None
        return self.latest

    def _unpack(self, seq: int, body: bytes) -> bytes:
        """A stored body's JSON (a plain body is its own JSON)."""
        if not body or body[0] >= 0x20:  # JSON, or damage that _decode names
            return body
        if body[0] != DEFLATE:
            raise self._corrupt(
                seq,
                f"written with row format {body[0]}; this research_fsm reads up to "
                f"format {DEFLATE}: upgrade research_fsm",
            )
        unpacker = (
            zlib.decompressobj(-15, zdict=self.window) if self.window else zlib.decompressobj(-15)
        )
        try:
            raw = unpacker.decompress(body[1:]) + unpacker.flush()
        except zlib.error as exc:
            raise self._corrupt(seq, f"cannot decompress: {exc}") from None
        if not unpacker.eof:
            raise self._corrupt(seq, "compressed body is cut short")
        return raw

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
