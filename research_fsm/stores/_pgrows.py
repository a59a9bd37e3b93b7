"""The rows of ``PostgresCheckpointStore``: a checkpoint as one JSON body, whole or as changes.

Pure functions over checkpoints and bytes (no driver). A *full* row holds the
whole state; a *delta* row holds only what its step changed: the fields set
(``"set"``), which of them got items appended at the end (``"append"``: the set
value is then just the new items), and the parallel-branch records added or
replaced (``"bset"``) and removed (``"bdel"``). A delta row always follows its
parent's row (``seq - 1``), so a thread's newest state is its newest full row
folded with the delta rows after it.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from pydantic import BaseModel

from research_fsm.engine import Checkpoint, CorruptCheckpoint, StateSerializationError
from research_fsm.engine._serialize import find_unserializable

__all__ = ["ROW_VERSION", "Folder", "encode"]

ROW_VERSION = 1
"""Version of the row body format; a newer one is refused when read."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_HEADER_FIELDS = (
    "thread_id", "checkpoint_id", "parent_id", "seq", "run_id", "step", "status",
    "next", "last_node", "created_at", "suspension", "error",
)  # fmt: skip
_ALIASES: dict[type[BaseModel], dict[str, str]] = {}


def encode(cp: Checkpoint, *, delta: bool) -> bytes:
    """``cp`` as a row body: its whole state, or (``delta``) just ``cp.changes``."""
    parts = ['{"v":' + str(ROW_VERSION)]
    for name in _HEADER_FIELDS:
        value = getattr(cp, name)
        try:
            text = _ENCODER.encode(value)
        except (TypeError, ValueError) as exc:
            path, detail = find_unserializable(value, name)
            raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None
        parts.append(f'"{name}":{text}')
    if delta:
        parts.extend(_changes(cp))
    else:
        parts.append('"state":' + _state_json(cp, None))
    if cp.branches:
        parts.extend(_branch_parts(cp, delta))
    return (",".join(parts) + "}").encode("utf-8", "surrogatepass")


def _changes(cp: Checkpoint) -> list[str]:
    assert isinstance(cp.state, BaseModel) and cp.changes is not None
    include: dict[str, Any] = {}
    appended: list[str] = []
    aliases = _alias_map(type(cp.state))
    for name, count in cp.changes.items():
        if count is None:
            include[name] = True
        elif count > 0:
            total = len(getattr(cp.state, name))
            include[name] = set(range(total - count, total))
            appended.append(aliases.get(name, name))
    parts = ['"set":' + _state_json(cp, include)]
    if appended:
        parts.append('"append":' + _ENCODER.encode(appended))
    return parts


def _alias_map(model: type[BaseModel]) -> dict[str, str]:
    aliases = _ALIASES.get(model)
    if aliases is None:
        aliases = {}
        for name, info in model.model_fields.items():
            alias = info.serialization_alias or info.alias
            if isinstance(alias, str):
                aliases[name] = alias
        _ALIASES[model] = aliases
    return aliases


def _branch_parts(cp: Checkpoint, delta: bool) -> list[str]:
    branches = cp.branches or {}
    changed = cp.changed_branches
    if delta and changed is not None:
        parts = ['"bset":' + _records_json(cp, {k: branches[k] for k in changed if k in branches})]
        gone = [k for k in changed if k not in branches]
        if gone:
            parts.append('"bdel":' + _ENCODER.encode(gone))
        return parts
    return ['"branches":' + _records_json(cp, branches)]


def _records_json(cp: Checkpoint, records: dict[str, Any]) -> str:
    try:
        return pydantic_core.to_json(records).decode("utf-8", "surrogatepass")
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(records, "branches")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


def _state_json(cp: Checkpoint, include: dict[str, Any] | None) -> str:
    state: BaseModel | dict[str, Any] = cp.state
    try:
        if isinstance(state, BaseModel):  # by alias: what model_validate reads back
            return state.model_dump_json(by_alias=True, include=include)
        return json.dumps(state, ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(state, "state")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


class Folder:
    """Rebuilds checkpoints from a thread's rows, oldest first (a full row, then deltas)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.latest: Checkpoint | None = None
        self._state: dict[str, Any] = {}

    def add(self, seq: int, body: bytes) -> Checkpoint:
        """Fold one row (``seq``, ``body``) onto the ones before it; return its checkpoint."""
        data = self._decode(seq, body)
        previous = self.latest
        if isinstance(data.get("state"), dict):
            self._state = data["state"]
        elif previous is not None and isinstance(data.get("set"), dict):
            if seq != previous.seq + 1 or data.get("parent_id") != previous.checkpoint_id:
                raise self._corrupt(seq, "a change row does not follow the row before it")
            changes: dict[str, Any] = data["set"]
            before, self._state = self._state, {**self._state, **changes}
            try:
                for key in data.get("append") or ():
                    self._state[key] = [*before.get(key, ()), *changes[key]]
            except (KeyError, TypeError):
                raise self._corrupt(seq, "bad append") from None
        else:
            raise self._corrupt(seq, "a change row without the row it changes")
        try:
            header = {name: data[name] for name in _HEADER_FIELDS}
        except KeyError as exc:
            raise self._corrupt(seq, f"missing field {exc}") from None
        branches = self._branches(seq, data, previous)
        self.latest = Checkpoint(**header, state=self._state, branches=branches)
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

    def _branches(
        self, seq: int, data: dict[str, Any], previous: Checkpoint | None
    ) -> dict[str, dict[str, Any]] | None:
        if "branches" in data:
            branches = data["branches"]
        elif "bset" in data:
            before = previous.branches if previous is not None and previous.branches else {}
            branches = {**before, **data["bset"]}
            for gone in data.get("bdel") or ():
                branches.pop(gone, None)
        else:
            return None
        if not isinstance(branches, dict) or not all(
            isinstance(r, dict) for r in branches.values()
        ):
            raise self._corrupt(seq, "bad branch records")
        return branches or None

    def _corrupt(self, seq: int, detail: str) -> CorruptCheckpoint:
        return CorruptCheckpoint(self.thread_id, f"checkpoint row {seq}: {detail}")
