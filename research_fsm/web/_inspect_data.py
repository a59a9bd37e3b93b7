"""What the inspector shows, as JSON: timeline rows, a state's diff, the drawn graph.

Pure functions over the engine's public values (``Checkpoint``, ``StateSnapshot``,
``CompiledGraph.to_mermaid``); no request, no store call.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from ..engine import Checkpoint, StateSnapshot

__all__ = [
    "MAX_SHOWN",
    "diff_states",
    "drawn_graph",
    "json_state",
    "logical_parent",
    "row",
    "snapshot_extras",
]

MAX_SHOWN: Final = 2_000
"""Characters of one value shown in a diff before it is cut (the tree shows all)."""
_CONTEXT: Final = 40
"""Characters of unchanged text kept either side of a change in a long string's diff."""
_LONG: Final = 80
_NODE_LINE: Final = re.compile(r'^    (?:subgraph )?([A-Za-z0-9_]+)\["(.*)"\]$')


def json_state(state: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's state as JSON values (a store returns a dict, the memory store
    the model itself)."""
    if isinstance(state, BaseModel):
        dumped: dict[str, Any] = state.model_dump(mode="json")
        return dumped
    return json.loads(json.dumps(dict(state), default=str))  # type: ignore[no-any-return]


def logical_parent(cp: Checkpoint) -> str | None:
    """The checkpoint ``cp`` follows in its line of history: for the first checkpoint
    of a re-run, the past checkpoint it copies; for a fork's first, none in this
    thread; else the one saved before it."""
    origin = cp.origin
    if origin is not None and origin.by == "rewind":
        return origin.checkpoint_id
    if origin is not None and origin.by == "fork":
        return None
    return cp.parent_id


def row(cp: Checkpoint) -> dict[str, Any]:
    """One checkpoint of a timeline: what ran, when, what wrote it, where it stands."""
    origin = cp.origin
    by = "run" if origin is None else origin.by
    branches = cp.changed_branches or ()
    return {
        "id": cp.checkpoint_id,
        "seq": cp.seq,
        "step": cp.step,
        "run": cp.run_id,
        "node": cp.last_node,
        "next": cp.next,
        "status": cp.status,
        "time": cp.created_at,
        "by": by,
        "as_node": None if origin is None else origin.as_node,
        "parent": logical_parent(cp),
        "forked_from": (
            {"thread": origin.thread_id, "checkpoint": origin.checkpoint_id}
            if origin is not None and origin.by == "fork"
            else None
        ),
        "branch": branches[0] if len(branches) == 1 and cp.last_node else None,
        "error": dict(cp.error) if cp.error else None,
        "children": [],
        "branches": [],
    }


def snapshot_extras(snapshot: StateSnapshot[Any]) -> dict[str, Any]:
    """What only the graph knows of a checkpoint: its child threads, suspensions,
    unfinished branches."""
    return {
        "children": [
            {
                "node": child.node,
                "thread": child.thread_id,
                "status": child.status,
                "branch": child.branch,
            }
            for child in snapshot.children
        ],
        "suspensions": [
            {
                "node": s.node,
                "payload": s.payload,
                "answers": list(s.answers),
                "token": str(s.token),
                "branch": s.branch,
                "breakpoint": s.breakpoint,
                "child_thread": s.child_thread_id,
            }
            for s in snapshot.suspensions
        ],
        "branches": [
            {"id": b.id, "node": b.node, "status": b.status, "join": b.join}
            for b in snapshot.branches
        ],
    }


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}… ({len(text) - MAX_SHOWN:,} more characters)"


def _text_diff(old: str, new: str) -> list[dict[str, str]]:
    """A long string's changes as segments (``equal`` ones cut to their ends)."""
    split = re.compile(r"\s+|\w+|[^\w\s]")
    a, b = split.findall(old), split.findall(new)
    segments: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            text = "".join(a[i1:i2])
            if len(text) > 2 * _CONTEXT:
                text = f"{text[:_CONTEXT]} … {text[-_CONTEXT:]}"
            segments.append({"op": "equal", "text": text})
            continue
        if i2 > i1:
            segments.append({"op": "delete", "text": _shown("".join(a[i1:i2]))})
        if j2 > j1:
            segments.append({"op": "insert", "text": _shown("".join(b[j1:j2]))})
    return segments


def _list_diff(old: list[Any], new: list[Any]) -> dict[str, Any]:
    """A list's changes: items appended, or each inserted/removed run with its index."""
    if len(new) >= len(old) and new[: len(old)] == old:
        return {"appended": [_shown(v) for v in new[len(old) :]], "at": len(old)}
    a = [json.dumps(v, sort_keys=True) for v in old]
    b = [json.dumps(v, sort_keys=True) for v in new]
    ops = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        ops.append(
            {
                "at": i1,
                "removed": [_shown(v) for v in old[i1:i2]],
                "added": [_shown(v) for v in new[j1:j2]],
            }
        )
    return {"ops": ops}


def _value_diff(path: str, old: Any, new: Any, out: list[dict[str, Any]]) -> None:
    if old == new and type(old) is type(new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            sub = f"{path}.{key}"
            if key not in new:
                out.append({"path": sub, "kind": "removed", "old": _shown(old[key])})
            elif key not in old:
                out.append({"path": sub, "kind": "added", "new": _shown(new[key])})
            else:
                _value_diff(sub, old[key], new[key], out)
        return
    entry: dict[str, Any] = {"path": path, "kind": "changed"}
    if isinstance(old, list) and isinstance(new, list):
        entry["list"] = _list_diff(old, new)
    elif isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > _LONG:
        entry["text"] = _text_diff(old, new)
    else:
        entry["old"], entry["new"] = _shown(old), _shown(new)
    out.append(entry)


def diff_states(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per field (and per key of nested objects): ``added``, ``removed`` or ``changed``;
    a changed list says which items were appended or inserted and removed, a long
    string which words changed. ``old`` ``None`` (a thread's first checkpoint): every
    field is added."""
    out: list[dict[str, Any]] = []
    if old is None:
        return [{"path": k, "kind": "added", "new": _shown(v)} for k, v in new.items()]
    for key in [*old, *(k for k in new if k not in old)]:
        if key not in new:
            out.append({"path": key, "kind": "removed", "old": _shown(old[key])})
        elif key not in old:
            out.append({"path": key, "kind": "added", "new": _shown(new[key])})
        else:
            _value_diff(key, old[key], new[key], out)
    return out


def drawn_graph(mermaid: str, highlight: Sequence[str | None] = ()) -> dict[str, Any]:
    """The graph's Mermaid text with the ``highlight`` nodes (the current one first)
    styled, and its top-level nodes by name (the ``as_node`` choices)."""
    ids: dict[str, str] = {}
    for line in mermaid.splitlines():
        found = _NODE_LINE.match(line)
        if found is not None and not found.group(1).endswith(("__start__", "__end__")):
            ids[found.group(2).replace("#quot;", '"')] = found.group(1)
    styles = []
    for rank, name in enumerate(n for n in highlight if n is not None and n in ids):
        colour = "fill:#ffe08a,stroke:#b8860b,stroke-width:3px" if rank == 0 else "stroke:#b8860b"
        styles.append(f"    style {ids[name]} {colour}")
    text = mermaid.rstrip("\n") + ("\n" + "\n".join(styles) if styles else "") + "\n"
    return {"mermaid": text, "nodes": list(ids)}
