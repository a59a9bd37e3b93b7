"""The rows of ``PostgresCheckpointStore``: a checkpoint as one JSON body, whole or as changes.

Pure functions over checkpoints and bytes (no driver). A *full* row holds the
whole state; a *changes* row holds only what its step changed: the fields set
(``"set"``), which of them got items appended at the end (``"append"``: the set
value is then just the new items), and the parallel-branch records added or
replaced (``"bset"``) and removed (``"bdel"``). A changes row always follows its
parent's row (``seq - 1``), so a thread's newest state is its newest full row
folded with the changes rows after it.

On disk a row's body is that JSON (layout 1: it starts with ``{``), or a tag
byte and the JSON compressed with raw deflate, using as preset dictionary the
last ``WINDOW`` bytes of the JSON of the rows before it back to its full row (a
full row: none) and, since layout 3 (tag ``\x02``; layout 2 wrote ``\x01``, which
is still read), the row's own checkpoint id in hex after them: the id column
holds it (``stored_id``), so the body's copy of it costs a back-reference instead
of 24 random digits. Steps repeat their keys, ids and often values from turn to
turn, so a changes row shrinks to a tenth or less; reading still folds a full row
and the rows after it in order.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from pydantic import BaseModel

from research_fsm.engine import Checkpoint, CorruptCheckpoint

from .._codec.logformat import (
    SCHEMA_VERSION,
    Damaged,
    aliases_of,
    encode_body,
    fold,
)

__all__ = [
    "DEFLATE",
    "DEFLATE_ID",
    "ROW_VERSION",
    "WINDOW",
    "Folder",
    "encode",
    "pack",
    "slide",
    "stored_id",
]

ROW_VERSION = SCHEMA_VERSION
"""Version of the row body format (the file store's line body); a newer one is refused."""


DEFLATE = 1
"""Tag byte of a body compressed against the rows before it (layout 2; JSON starts ``{``)."""
DEFLATE_ID = 2
"""Tag byte of a body compressed against the rows before it and its own id (layout 3)."""
WINDOW = 4096
"""Bytes of the preceding rows' JSON a compressed body may refer back to."""
_ENGINE_ID = re.compile(r"[0-9a-f]{24}")


def stored_id(checkpoint_id: str) -> bytes:
    """How the ``checkpoint_id`` column holds an id: one of the engine's (24 lowercase hex
    digits) as its 12 bytes, any other as its UTF-8 (one byte 0xFF after it when that is
    12 bytes long; UTF-8 never has 0xFF): equal ids are equal bytes, different ones never."""
    if _ENGINE_ID.fullmatch(checkpoint_id):
        return bytes.fromhex(checkpoint_id)
    text = checkpoint_id.encode("utf-8", "surrogatepass")
    return text + b"\xff" if len(text) == 12 else text


def encode(cp: Checkpoint, *, full: bool) -> bytes:
    """``cp`` as a row's JSON: its whole state (``full``), or just ``cp.changes``."""
    aliases = aliases_of(type(cp.state)) if isinstance(cp.state, BaseModel) else {}
    return encode_body(cp, None if full else cp.changes, aliases)


def pack(raw: bytes, window: bytes, key: bytes) -> bytes:
    """A row's JSON ``raw`` as stored: compressed against ``window`` (the rows before)
    and ``key``, the row's ``stored_id``."""
    zdict = _dictionary(window, key)
    # memLevel 7, not 9: the same bodies for rows this small, and a compressor that fits
    # under malloc's mmap threshold (memLevel 9 costs ~100 µs a row, 7 costs ~15).
    packer = (
        zlib.compressobj(9, zlib.DEFLATED, -15, 7, zdict=zdict)
        if zdict
        else zlib.compressobj(9, zlib.DEFLATED, -15, 7)
    )
    return bytes((DEFLATE_ID,)) + packer.compress(raw) + packer.flush()


def _dictionary(window: bytes, key: bytes) -> bytes:
    """The preset dictionary of a ``DEFLATE_ID`` body: ``window``, then ``key`` in hex
    (for an engine's id, the very digits its JSON repeats)."""
    return window + key.hex().encode()


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

    def add(self, seq: int, full: bool, key: bytes, body: bytes) -> Checkpoint:
        """Fold one row (``seq``, ``full``, ``checkpoint_id``, ``body``) onto the ones before
        it; return its checkpoint."""
        if full:
            self.window = b""
        raw = self._unpack(seq, key, body)
        self.window = slide(self.window, raw)
        data = self._decode(seq, raw)
        try:
            self.latest, self._state = fold(data, self._state, self.latest)
        except Damaged as exc:
            raise self._corrupt(seq, str(exc)) from None
        return self.latest

    def _unpack(self, seq: int, key: bytes, body: bytes) -> bytes:
        """A stored body's JSON (a plain body is its own JSON)."""
        if not body or body[0] >= 0x20:  # JSON, or damage that _decode names
            return body
        if body[0] not in (DEFLATE, DEFLATE_ID):
            raise self._corrupt(
                seq,
                f"written with row format {body[0]}; this research_fsm reads up to "
                f"format {DEFLATE_ID}: upgrade research_fsm",
            )
        zdict = _dictionary(self.window, key) if body[0] == DEFLATE_ID else self.window
        unpacker = zlib.decompressobj(-15, zdict=zdict) if zdict else zlib.decompressobj(-15)
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
