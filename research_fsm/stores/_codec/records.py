"""A checkpoint's records as JSON: its suspension, its parallel branches and its origin.

The engine's typed records (``SuspensionRecord``, ``BranchRecord`` with its
``UpdateEntry``s, ``OriginRecord``, in ``research_fsm.engine.store``) are written as the
JSON objects every version of this package wrote, and read back from them; their short
keys live here and nowhere else:

* a suspension: ``{"node", "payload", "breakpoint"?, "child"?, "trace"?, "answers"?:
  [the answers its node's earlier interrupt() calls were given]}``;
* a branch: ``{"i": index, "p": owner branch id ("" at the top), "node": next node |
  None, "status", "join": node | END, "updates": [update...], "item"?, "k": key of its
  next node execution?, "at": suspension id, "payload", "child"?, "breakpoint": [where,
  node]? and "answers"? (while suspended) | "error": {...}? (else), "trace"?}``;
* an update of a branch's node: ``{"n": node, "u": {field: value}, "r"?: [fields
  replaced]}``;
* an origin: ``{"by", "as_node"?, "thread_id"?, "checkpoint_id"?}``.

The readers raise ``Damaged`` for JSON that is not such a record.
"""

from __future__ import annotations

from typing import Literal, get_args

from research_fsm.engine import BranchStatus
from research_fsm.engine.store import (
    NO_ITEM,
    BranchRecord,
    OriginRecord,
    SuspensionRecord,
    UpdateEntry,
)

__all__ = [
    "Damaged",
    "branch_json",
    "branch_of",
    "origin_json",
    "origin_of",
    "suspension_json",
    "suspension_of",
]

_Where = Literal["before", "after"]
_By = Literal["update", "rewind", "fork"]
# Each allowed value by itself: ``get`` tells a saved one from any other JSON.
_STATUSES: dict[object, BranchStatus] = {s: s for s in get_args(BranchStatus)}
_WHERE: dict[object, _Where] = {"before": "before", "after": "after"}
_ORIGINS: dict[object, _By] = {"update": "update", "rewind": "rewind", "fork": "fork"}


class Damaged(Exception):
    """A line that cannot be trusted."""


# -- writing ----------------------------------------------------------------------


def suspension_json(record: SuspensionRecord) -> dict[str, object]:
    """``record`` as the JSON object a checkpoint's header holds."""
    saved: dict[str, object] = {"node": record.node, "payload": record.payload}
    if record.breakpoint is not None:
        saved["breakpoint"] = record.breakpoint
    if record.child is not None:
        saved["child"] = record.child
    if record.trace is not None:
        saved["trace"] = record.trace
    if record.answers:
        saved["answers"] = list(record.answers)
    return saved


def origin_json(record: OriginRecord) -> dict[str, str]:
    """``record`` as the JSON object a checkpoint's header holds."""
    saved: dict[str, str] = {"by": record.by}
    if record.as_node is not None:
        saved["as_node"] = record.as_node
    if record.thread_id is not None:
        saved["thread_id"] = record.thread_id
    if record.checkpoint_id is not None:
        saved["checkpoint_id"] = record.checkpoint_id
    return saved


def branch_json(record: BranchRecord) -> dict[str, object]:
    """``record`` as the JSON object a line's branch records hold."""
    saved: dict[str, object] = {
        "i": record.position,
        "p": record.owner,
        "node": record.node,
        "status": record.status,
        "join": record.join,
        "updates": [_entry_json(entry) for entry in record.updates],
    }
    if record.item is not NO_ITEM:
        saved["item"] = record.item
    if record.key is not None:
        saved["k"] = record.key
    if record.status == "suspended":
        saved["at"], saved["payload"] = record.at, record.payload
        if record.child is not None:
            saved["child"] = record.child
        if record.breakpoint is not None:
            saved["breakpoint"] = list(record.breakpoint)
        if record.answers:
            saved["answers"] = list(record.answers)
    elif record.error is not None:
        saved["error"] = record.error
    if record.trace is not None:
        saved["trace"] = record.trace
    return saved


def _entry_json(entry: UpdateEntry) -> dict[str, object]:
    if entry.replaced:
        return {"n": entry.node, "u": entry.values, "r": list(entry.replaced)}
    return {"n": entry.node, "u": entry.values}


# -- reading ----------------------------------------------------------------------


def suspension_of(saved: object) -> SuspensionRecord | None:
    """The suspension a header's ``"suspension"`` holds (``None``: none)."""
    if saved is None:
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get("node"), str):
        raise Damaged("bad suspension")
    paused = saved.get("breakpoint")
    where = _WHERE.get(_key(paused))
    if paused is not None and where is None:
        raise Damaged("bad suspension breakpoint")
    return SuspensionRecord(
        saved["node"],
        saved.get("payload"),
        where,
        _text(saved, "child", "suspension"),
        _text(saved, "trace", "suspension"),
        _answers(saved, "suspension"),
    )


def origin_of(saved: object) -> OriginRecord | None:
    """The origin a header's ``"origin"`` holds (lines of older versions have none)."""
    if saved is None:
        return None
    if not isinstance(saved, dict) or not all(isinstance(v, str) for v in saved.values()):
        raise Damaged("bad origin")
    by = _ORIGINS.get(_key(saved.get("by")))
    if by is None:
        raise Damaged("bad origin")
    return OriginRecord(
        by, saved.get("as_node"), saved.get("thread_id"), saved.get("checkpoint_id")
    )


def branch_of(saved: object) -> BranchRecord:
    """The branch record a line's JSON object holds."""
    if not isinstance(saved, dict):
        raise Damaged("bad branch records")
    position, owner, node = saved.get("i"), saved.get("p"), saved.get("node")
    status = _STATUSES.get(_key(saved.get("status")))
    join, updates = saved.get("join"), saved.get("updates")
    if (
        not isinstance(position, int)
        or not isinstance(owner, str)
        or not (node is None or isinstance(node, str))
        or status is None
        or not isinstance(join, str)
        or not isinstance(updates, list)
    ):
        raise Damaged("bad branch records")
    paused = saved.get("breakpoint")
    breakpoint: tuple[_Where, str] | None = None
    if paused is not None:
        where = (
            _WHERE.get(_key(paused[0])) if isinstance(paused, list) and len(paused) == 2 else None
        )
        if where is None or not isinstance(paused[1], str):
            raise Damaged("bad branch breakpoint")
        breakpoint = (where, paused[1])
    error = saved.get("error")
    if error is not None and not (
        isinstance(error, dict) and all(isinstance(v, str) for v in error.values())
    ):
        raise Damaged("bad branch error")
    return BranchRecord(
        position,
        owner,
        node,
        status,
        join,
        tuple(map(_entry_of, updates)),
        saved.get("item", NO_ITEM),
        _text(saved, "k", "branch key"),
        _text(saved, "at", "branch suspension"),
        saved.get("payload"),
        _text(saved, "child", "branch child"),
        breakpoint,
        error,
        _text(saved, "trace", "branch trace"),
        _answers(saved, "branch"),
    )


def _entry_of(saved: object) -> UpdateEntry:
    if not isinstance(saved, dict):
        raise Damaged("bad branch update")
    node, values, replaced = saved.get("n"), saved.get("u"), saved.get("r") or ()
    if not isinstance(node, str) or not isinstance(values, dict):
        raise Damaged("bad branch update")
    if not isinstance(replaced, (list, tuple)) or not all(isinstance(r, str) for r in replaced):
        raise Damaged("bad branch update")
    return UpdateEntry(node, values, tuple(replaced))


def _text(saved: dict[str, object], key: str, what: str) -> str | None:
    value = saved.get(key)
    if value is None or isinstance(value, str):
        return value
    raise Damaged(f"bad {what}")


def _answers(saved: dict[str, object], what: str) -> tuple[object, ...]:
    """The answers a suspension saved (lines written before interrupt() have none)."""
    value = saved.get("answers")
    if value is None:
        return ()
    if isinstance(value, list):
        return tuple(value)
    raise Damaged(f"bad {what} answers")


def _key(value: object) -> str | None:
    """``value`` if it is a str (a table's key), else ``None``."""
    return value if isinstance(value, str) else None
