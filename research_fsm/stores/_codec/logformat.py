"""The checkpoint codec: pure functions over bytes, versioned.

A checkpoint's body (``encode_body``, read back by ``fold``) is what the file store's
lines and the Postgres store's rows hold; the rest is the file store's on-disk format.

A segment is lines of JSON, each followed by a tab, a checksum (32 hex digits of
SHA-256 of the JSON) and a newline. A segment's first line holds the whole state
(``"state"``); every later line holds only its step's changes (``"set"``: the
fields set, ``"append"``: which of them got items appended at the end). Lines
carrying parallel-branch records (``"branches"`` whole, or ``"bset"``/``"bdel"``
as changes to the line before) are version 3; the others version 2. A checkpoint
written by hand (``update_state``, ``fork``...) carries its ``"origin"`` in the header,
and one of a subgraph's child thread its parent thread (``"pthread"``); older readers
ignore both.

``<thread>.idx`` lists the live segments: their first seqs, 12 digits each,
newest first, separated by spaces, ending with a newline.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel

from research_fsm.engine import Checkpoint, CorruptCheckpoint, StateSerializationError
from research_fsm.engine.store import BranchRecord

from .jsonplan import json_plan, model_json
from .records import (
    Damaged,
    branch_json,
    branch_of,
    origin_json,
    origin_of,
    suspension_json,
    suspension_of,
)
from .serialize import find_unserializable

__all__ = [
    "SCHEMA_VERSION",
    "TAIL",
    "Damaged",
    "Scan",
    "aliases_of",
    "checksum",
    "encode_body",
    "encode_line",
    "fold",
    "index_bytes",
    "index_seqs",
    "last_header",
    "parent_thread_of",
    "salvage_bytes",
    "scan_bytes",
]

SCHEMA_VERSION = 3  # 3: lines may carry parallel-branch records (others are still 2)
TAIL = 34  # a line ends with a tab, 32 hex digits of checksum and a newline
_ZEROS = re.compile(rb"\0+")
_HEADER_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_HEADER_FIELDS = (
    "thread_id",
    "checkpoint_id",
    "parent_id",
    "seq",
    "run_id",
    "step",
    "status",
    "next",
    "last_node",
    "created_at",
    "suspension",
    "error",
)
_HEADER_SET = frozenset(_HEADER_FIELDS)


def checksum(body: bytes) -> bytes:
    return hashlib.sha256(body).hexdigest()[:32].encode()


def index_bytes(segments: list[int]) -> bytes:
    """The whole ``<thread>.idx`` naming ``segments`` (newest first)."""
    return (" ".join(f"{seq:012d}" for seq in segments) + "\n").encode()


def index_seqs(data: bytes) -> list[int] | None:
    """The segments a whole ``<thread>.idx`` lists (``None`` if it is not one)."""
    text = data.decode("ascii", "replace")
    words = text.split()
    if text.endswith("\n") and words and all(w.isdigit() and len(w) == 12 for w in words):
        return [int(w) for w in words]
    return None


# -- writing ----------------------------------------------------------------------


def aliases_of(model: type[BaseModel]) -> dict[str, str]:
    """The keys ``model``'s fields are written under, where not their names."""
    return json_plan(model).keys


def encode_line(
    cp: Checkpoint, changes: dict[str, int | None] | None, aliases: dict[str, str]
) -> bytes:
    """One log line for ``cp``: its ``encode_body``, a tab, its checksum, a newline."""
    body = encode_body(cp, changes, aliases)
    return body + b"\t" + checksum(body) + b"\n"


def encode_body(
    cp: Checkpoint, changes: dict[str, int | None] | None, aliases: dict[str, str]
) -> bytes:
    """``cp`` as one JSON object: just its ``changes`` (fields set, or the count of
    items appended to each), or its whole state when ``changes`` is ``None``.
    ``aliases`` maps field names to the keys they are written under. (The file
    store's lines and the Postgres store's rows hold this.)"""
    members = _step_header(cp)
    if members is None:
        members = _header_json(cp)
    parts = ['{"v":' + ("3" if cp.branches else "2") + "," + members]  # ``v`` first
    if changes is not None:
        assert isinstance(cp.state, BaseModel)
        include: dict[str, Any] = {}
        appended: list[str] = []
        for name, count in changes.items():
            if count is None:
                include[name] = True
            elif count > 0:
                total = len(getattr(cp.state, name))
                include[name] = set(range(total - count, total))
                appended.append(aliases.get(name, name))
        parts.append('"set":' + _state_json(cp, include))
        if appended:
            parts.append('"append":' + _HEADER_ENCODER.encode(appended))
    else:
        parts.append('"state":' + _state_json(cp, None))
    if cp.branches:
        parts.extend(_branch_parts(cp, changes is not None))
    return (",".join(parts) + "}").encode("utf-8", "surrogatepass")


def _header_json(cp: Checkpoint) -> str:
    """The header's JSON members (without braces), in one encoder call."""
    header: dict[str, object] = {name: getattr(cp, name) for name in _HEADER_FIELDS}
    if cp.suspension is not None:
        header["suspension"] = suspension_json(cp.suspension)
    if cp.origin is not None:  # a checkpoint written by hand (update_state, fork...)
        header["origin"] = origin_json(cp.origin)
    if cp.parent_thread_id is not None:  # a subgraph's child thread
        header["pthread"] = cp.parent_thread_id
    try:
        return _HEADER_ENCODER.encode(header)[1:-1]
    except (TypeError, ValueError) as exc:
        name = next(n for n in header if not _encodable(header[n]))
        path, detail = find_unserializable(header[name], name)
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


def _step_header(cp: Checkpoint) -> str | None:
    """``_header_json`` of a run's step (no suspension, error nor origin; ints and strings
    where the engine puts them), written out directly: the same text, without the
    dict and the encoder's walk. ``None``: any other checkpoint."""
    if cp.suspension is not None or cp.error is not None or cp.origin is not None:
        return None
    seq, step, pthread = cp.seq, cp.step, cp.parent_thread_id
    if type(seq) is not int or type(step) is not int:
        return None
    q = _quote
    try:
        text = (
            f'"thread_id":{q(cp.thread_id)},"checkpoint_id":{q(cp.checkpoint_id)},'
            f'"parent_id":{_null_or(cp.parent_id)},"seq":{seq},"run_id":{q(cp.run_id)},'
            f'"step":{step},"status":{q(cp.status)},"next":{_null_or(cp.next)},'
            f'"last_node":{_null_or(cp.last_node)},"created_at":{q(cp.created_at)},'
            '"suspension":null,"error":null'
        )
        return text if pthread is None else f'{text},"pthread":{q(pthread)}'
    except TypeError:  # a value that is no str: the encoder's path names it
        return None


_quote: Callable[[str], str] = json.encoder.encode_basestring  # the encoder's, for a str


def _null_or(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def _encodable(value: Any) -> bool:
    try:
        _HEADER_ENCODER.encode(value)
    except (TypeError, ValueError):
        return False
    return True


def _state_json(cp: Checkpoint, include: dict[str, Any] | None) -> str:
    state: BaseModel | dict[str, Any] = cp.state
    if isinstance(state, BaseModel):
        return model_json(state, include, cp.last_node)
    try:
        return json.dumps(state, ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(state, "state")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


def _branch_parts(cp: Checkpoint, only_changes: bool) -> list[str]:
    """The JSON members holding ``cp``'s branch records (on a line of a step's
    changes, just the records that step changed)."""
    branches = cp.branches or {}
    changed = cp.changed_branches
    if only_changes and changed is not None:
        parts = ['"bset":' + _records_json(cp, {k: branches[k] for k in changed if k in branches})]
        gone = [k for k in changed if k not in branches]
        if gone:
            parts.append('"bdel":' + _HEADER_ENCODER.encode(gone))
        return parts
    return ['"branches":' + _records_json(cp, branches)]


def _records_json(cp: Checkpoint, branches: dict[str, BranchRecord]) -> str:
    records = {branch_id: branch_json(record) for branch_id, record in branches.items()}
    try:
        return pydantic_core.to_json(records).decode("utf-8", "surrogatepass")
    except Exception as exc:  # pydantic raises several types here
        path, detail = find_unserializable(records, "branches")
        raise StateSerializationError(cp.last_node, path, detail or str(exc)) from None


# -- reading ----------------------------------------------------------------------


@dataclass(slots=True)
class Scan:
    """A segment as read: its checkpoints up to the first torn or damaged line."""

    thread_id: str
    records: list[Checkpoint] = field(default_factory=list)
    good_size: int = 0  # bytes up to the end of the last good line
    base: int = 0  # bytes of the first line
    tail: bytes = b""  # the last bytes of the last good line
    problem: Literal["", "torn", "damaged"] = ""
    reason: str = ""
    intact_after: int = 0  # whole, checksummed lines after a damaged one
    lines: int = 0  # good lines read (``records`` leaves out those before ``keep_from``)
    padding: int = 0  # zero bytes after the last good line, to the end of the file
    ino: int = 0  # the file's inode, set by whoever read it


def scan_bytes(
    raw: bytes,
    thread_id: str,
    until: int | None = None,
    keep_from: int | None = None,
    after: Checkpoint | None = None,
) -> Scan:
    """A segment's checkpoints oldest first (each with its whole state), up to the
    first unfinished (torn) or damaged line (``until``: or up to the checkpoint at
    that seq: a partial scan, for reads of older checkpoints). Runs of zero bytes
    where a line would start are padding, not data (a line holds no zero byte: it is
    JSON). ``keep_from``: the lines before that seq are checked and folded into the
    state but not kept (a page of older checkpoints needs only the last few:
    ``records`` then starts at ``keep_from``). ``after``: ``raw`` is what follows the
    line of checkpoint ``after`` (whose state is whole) in its segment: a segment read
    before, read on from where it ended."""
    scan = Scan(thread_id)
    state: dict[str, Any] = {}
    previous: Checkpoint | None = after
    if after is not None:
        assert isinstance(after.state, dict)
        state = after.state
    skimmed: _Skimmed | None = None  # the last line folded but not kept
    offset = 0
    while offset < len(raw):
        if raw[offset] == 0:  # zeros a writer padded its last disk block with
            start, offset = offset, _after_zeros(raw, offset)
            scan.padding = offset - start if offset == len(raw) else 0
            continue
        end = raw.find(b"\n", offset)
        if end < 0:
            scan.problem, scan.reason = "torn", "unfinished last line"
            break
        line = raw[offset : end + 1]
        try:
            data = _decode(line, thread_id)
            seq = data.get("seq")
            if keep_from is not None and isinstance(seq, int) and seq < keep_from:
                state, skimmed = _skim(data, state, previous or skimmed)
                previous = None
            else:
                checkpoint, state = fold(data, state, previous or skimmed)
                scan.records.append(checkpoint)
                previous, skimmed = checkpoint, None
        except Damaged as exc:
            lines = scan.lines + 1
            scan.problem, scan.reason = "damaged", f"line {lines}: {exc}"
            scan.intact_after = _intact_lines(raw[end + 1 :])
            break
        scan.lines += 1
        offset = end + 1
        if scan.lines == 1:
            scan.base = offset
        scan.good_size, scan.tail = offset, line[-TAIL:]
        if until is not None and isinstance(seq, int) and seq >= until:
            break
    if not scan.lines and not scan.problem:  # made, then its writer was killed
        scan.problem, scan.reason = "torn", "empty segment"
    return scan


def salvage_bytes(raw: bytes, thread_id: str) -> list[Checkpoint]:
    """Every line of ``raw`` whose checksum matches, damaged lines before it or not,
    as a checkpoint with its header and the branch records the line carries (whole,
    or just those it changed) but no state (``{}``): what a line says of where its run
    was, for ``delete_thread`` to find the child threads of a damaged thread."""
    found = []
    for line in raw.split(b"\n"):
        body, tab, rest = line.lstrip(b"\0").rpartition(b"\t")
        if not tab or rest != checksum(body):
            continue
        try:
            data = json.loads(body.decode("utf-8", "surrogatepass"))
            if not isinstance(data, dict) or data.get("thread_id") != thread_id:
                continue
            branches = data.get("branches", data.get("bset"))
            found.append(
                Checkpoint(
                    **_header(data),
                    state={},
                    branches=_records_of(branches) if isinstance(branches, dict) else None,
                    parent_thread_id=parent_thread_of(data),
                )
            )
        except (ValueError, KeyError, TypeError, Damaged):
            continue
    return found


def last_header(raw: bytes, thread_id: str, whole: bool) -> Checkpoint | Literal[False] | None:
    """The header of the last whole line of ``raw`` (the end of a segment, zeros of
    padding and an unfinished last line left out; ``whole``: ``raw`` is the whole
    segment) as a checkpoint without state (``{}``): what a thread listing shows of a
    thread. ``None`` when ``raw`` holds no whole line (read further back, or an empty
    segment); ``False`` when that line is damaged."""
    end = len(raw.rstrip(b"\0"))
    end = raw.rfind(b"\n", 0, end)
    if end < 0:
        return None
    start = raw.rfind(b"\n", 0, end) + 1
    if start == 0 and not whole:
        return None
    line = raw[start : end + 1].lstrip(b"\0")
    try:
        data = _decode(line, thread_id)
        branches = data.get("branches", data.get("bset"))
        return Checkpoint(
            **_header(data),
            state={},
            branches=_records_of(branches) if isinstance(branches, dict) else None,
            parent_thread_id=parent_thread_of(data),
        )
    except (Damaged, KeyError, TypeError):
        return False


def _after_zeros(raw: bytes, offset: int) -> int:
    match = _ZEROS.match(raw, offset)
    return offset if match is None else match.end()


def _intact_lines(raw: bytes) -> int:
    """How many whole lines of ``raw`` carry a matching checksum (zeros before a
    line are padding, as for ``scan_bytes``)."""
    count = 0
    for line in raw.split(b"\n")[:-1]:
        body, tab, rest = line.lstrip(b"\0").rpartition(b"\t")
        count += bool(tab) and rest == checksum(body)
    return count


def _loads(body: bytes) -> Any:
    """A line's JSON: pydantic-core's parser (about twice as fast), else ``json``'s,
    which also reads what the first refuses (a lone surrogate, as a state may hold)."""
    try:
        return pydantic_core.from_json(body)
    except ValueError:
        return json.loads(body.decode("utf-8", "surrogatepass"))


def _decode(line: bytes, thread_id: str) -> dict[str, Any]:
    """A line's checked JSON object (``Damaged`` if it is not one of this thread's)."""
    body, tab, rest = line[:-1].rpartition(b"\t")
    if not tab or rest != checksum(body):
        raise Damaged("checksum mismatch")
    try:
        data = _loads(body)
    except ValueError as exc:
        raise Damaged(f"not JSON: {exc}") from None
    version = data.get("v") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise Damaged("no schema version")
    if version > SCHEMA_VERSION:
        raise CorruptCheckpoint(
            thread_id,
            f"a checkpoint was written with checkpoint schema version {version}; this "
            f"research_fsm reads up to version {SCHEMA_VERSION}: upgrade research_fsm",
        )
    if data.get("thread_id") != thread_id:
        raise Damaged(f"belongs to thread {data.get('thread_id')!r}")
    return data  # type: ignore[no-any-return]


@dataclass(slots=True)
class _Skimmed:
    """What the line after a folded-but-not-kept line needs of it (as ``fold`` reads
    a ``Checkpoint``)."""

    seq: int
    checkpoint_id: str
    branches: dict[str, BranchRecord] | None


def _skim(
    data: dict[str, Any], state: dict[str, Any], previous: Checkpoint | _Skimmed | None
) -> tuple[dict[str, Any], _Skimmed]:
    """``fold`` without the checkpoint: the same checks, and the whole state after
    the line, its appends made in place (no state before it is kept)."""
    if "state" not in data or not isinstance(data["state"], dict):
        if previous is None or not isinstance(data.get("set"), dict):
            raise Damaged("no state")
        if data.get("seq") != previous.seq + 1 or data.get("parent_id") != previous.checkpoint_id:
            raise Damaged("does not follow the line before it")
        changes: dict[str, Any] = data["set"]
        appended = data.get("append") or ()
        try:
            for key in appended:
                items = state.get(key)
                if isinstance(items, list) and isinstance(changes[key], list):
                    items += changes[key]
                else:
                    state[key] = [*(items or ()), *changes[key]]
        except (KeyError, TypeError):
            raise Damaged("bad append") from None
        for key, value in changes.items():
            if key not in appended:
                state[key] = value
    else:
        state = data["state"]
    branches = _branches_of(data, previous)
    origin_of(data.get("origin"))
    suspension_of(data.get("suspension"))
    if not data.keys() >= _HEADER_SET or not isinstance(data["checkpoint_id"], str):
        raise Damaged("missing field")
    return state, _Skimmed(data["seq"], data["checkpoint_id"], branches)


def fold(
    data: dict[str, Any], state: dict[str, Any], previous: Checkpoint | _Skimmed | None
) -> tuple[Checkpoint, dict[str, Any]]:
    """The checkpoint a decoded body holds, with its whole state (``state`` is the
    whole state of ``previous``, the checkpoint before it); ``Damaged`` if it does
    not fit there."""
    state = _state_of(data, state, previous)
    branches = _branches_of(data, previous)
    try:
        checkpoint = Checkpoint(
            **_header(data),
            state=state,
            branches=branches,
            origin=origin_of(data.get("origin")),
            parent_thread_id=parent_thread_of(data),
        )
        return checkpoint, state
    except (KeyError, TypeError) as exc:
        raise Damaged(f"missing field {exc}") from None


def _header(data: dict[str, Any]) -> dict[str, Any]:
    """A line's header fields as ``Checkpoint`` takes them (``KeyError``: one is missing)."""
    header = {name: data[name] for name in _HEADER_FIELDS}
    header["suspension"] = suspension_of(header["suspension"])
    return header


def parent_thread_of(data: dict[str, Any]) -> str | None:
    """A line's ``Checkpoint.parent_thread_id`` (``Damaged`` if it is not a str)."""
    parent = data.get("pthread")
    if parent is None or isinstance(parent, str):
        return parent
    raise Damaged("bad parent thread")


def _state_of(
    data: dict[str, Any], state: dict[str, Any], previous: Checkpoint | _Skimmed | None
) -> dict[str, Any]:
    """A line's whole state: given whole, or as changes to the line before."""
    if "state" in data and isinstance(data["state"], dict):
        whole: dict[str, Any] = data["state"]
        return whole
    if previous is None or not isinstance(data.get("set"), dict):
        raise Damaged("no state")
    if data.get("seq") != previous.seq + 1 or data.get("parent_id") != previous.checkpoint_id:
        raise Damaged("does not follow the line before it")
    changes: dict[str, Any] = data["set"]
    merged = {**state, **changes}
    try:
        for key in data.get("append") or ():
            merged[key] = [*state.get(key, ()), *changes[key]]
    except (KeyError, TypeError):
        raise Damaged("bad append") from None
    return merged


def _branches_of(
    data: dict[str, Any], previous: Checkpoint | _Skimmed | None
) -> dict[str, BranchRecord] | None:
    """A line's branch records: given whole, or as changes to the line before."""
    if "branches" in data:
        return _records_of(data["branches"]) or None
    if "bset" not in data:
        return None
    before = previous.branches if previous is not None and previous.branches else {}
    branches = {**before, **_records_of(data["bset"])}
    gone = data.get("bdel") or []
    if not isinstance(gone, list):
        raise Damaged("bad branch records")
    for branch_id in gone:
        branches.pop(branch_id, None)
    return branches or None


def _records_of(saved: object) -> dict[str, BranchRecord]:
    """The branch records a line's JSON object holds, by branch id."""
    if not isinstance(saved, dict):
        raise Damaged("bad branch records")
    return {branch_id: branch_of(record) for branch_id, record in saved.items()}
