"""Where a call starts: the thread's latest checkpoint restored (or a fresh start),
and what the call brings (input, or a resume token's value)."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, ValidationError

from ._branches import NO_VALUE, find_suspended
from ._errors import IncompatibleCheckpoint, StaleResumeToken, ThreadNotFound, ThreadSuspended
from ._tokens import first_token
from ._types import Checkpoint, RunResult, SuspendToken

if TYPE_CHECKING:
    from ._compiled import CompiledGraph

__all__ = ["Start", "begin", "restore"]

_log = structlog.get_logger("research_fsm.engine")

Start = tuple[
    BaseModel, str | None, str, int, int, str | None, dict[str, int | None] | None, Any,
    dict[str, dict[str, Any]] | None, tuple[str, Any] | None, str | None,
]  # fmt: skip
"""Where a call starts (``begin``): state, node (None: from START), run_id, step,
seq, parent_id, changes so far, resume value, an unfinished fan-out's records, the
branch a token resumes and the trace context saved with the suspension resumed (a
``traceparent``). A tuple: built once per call, on the hot path."""


async def begin(
    graph: CompiledGraph[Any],
    thread_id: str,
    input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, Any] | None,
) -> Start | RunResult[Any]:
    """Where a call starts: from the thread's latest checkpoint and what was given
    (a ``RunResult`` when there is nothing to run: ``run(None)`` on a finished thread)."""
    schema = graph._schema
    latest = await graph.store.load_latest(thread_id)
    # What changed since the latest checkpoint, for stores that save just that.
    changes: dict[str, int | None] | None = {} if graph._tracks else None
    if latest is None:
        return _fresh_start(graph, thread_id, None, None, input, resume)
    restored = restore(graph, latest)
    if isinstance(restored, IncompatibleCheckpoint):
        return _fresh_start(graph, thread_id, latest, restored, input, resume)
    state = restored
    node, run_id, step, fanout = latest.next, latest.run_id, latest.step, latest.branches
    resume_value: Any = NO_VALUE
    resumed_branch: tuple[str, Any] | None = None
    resumed_trace: str | None = None
    if resume is not None:
        resume_value, resumed_branch, resumed_trace = _resumed(thread_id, latest, resume)
    elif latest.status == "suspended":
        raise ThreadSuspended(thread_id, await first_token(graph.store, latest))
    elif input is None:
        if latest.status == "completed":
            return RunResult(
                status="completed", state=state, path=[],
                checkpoint_id=latest.checkpoint_id, thread_id=thread_id,
            )  # fmt: skip
    else:
        if latest.status != "completed":
            _log.warning(
                "new input abandons an unfinished run", thread_id=thread_id,
                run_id=latest.run_id, next_node=latest.next,
            )  # fmt: skip
        state = schema.apply(state, schema.as_changes(input, "input"), "input", changes)
        node, run_id, step, fanout = None, secrets.token_hex(8), 0, None
    return (
        state, node, run_id, step, latest.seq, latest.checkpoint_id, changes, resume_value,
        fanout, resumed_branch, resumed_trace,
    )  # fmt: skip


def _resumed(
    thread_id: str, latest: Checkpoint, resume: tuple[SuspendToken, Any]
) -> tuple[Any, tuple[str, Any] | None, str | None]:
    """What a token resumes: the suspended node's value (``NO_VALUE`` when the
    token is a branch's), the branch with its value (``None``: not a branch), and
    the trace context saved with the suspension (``None``: none saved)."""
    token, value = resume
    branches = latest.branches
    branch_id = find_suspended(branches, token.checkpoint_id) if branches else None
    if branches and branch_id is not None:
        return NO_VALUE, (branch_id, value), branches[branch_id].get("trace")
    if (
        latest.checkpoint_id != token.checkpoint_id
        or latest.status != "suspended"
        or latest.branches
    ):
        raise StaleResumeToken(
            thread_id,
            token.checkpoint_id,
            "it was already used, or the thread has moved on since it was issued",
        )
    return value, None, (latest.suspension or {}).get("trace")


def _fresh_start(
    graph: CompiledGraph[Any], thread_id: str, latest: Checkpoint | None,
    misfit: IncompatibleCheckpoint | None, input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, Any] | None,
) -> Start:  # fmt: skip
    """A run from START on ``input`` alone: on a new thread, or on one whose
    latest checkpoint this graph cannot continue (``misfit``)."""
    if misfit is not None and (input is None or resume is not None):
        raise misfit
    if resume is not None:
        raise StaleResumeToken(thread_id, resume[0].checkpoint_id, "the thread no longer exists")
    if input is None:
        raise ThreadNotFound(thread_id, "; pass input to start it")
    if misfit is not None:
        _log.warning("new input starts a fresh run", thread_id=thread_id, reason=str(misfit))
    # the first checkpoint of such a run holds the whole state
    seq, parent = (0, None) if latest is None else (latest.seq, latest.checkpoint_id)
    state = graph._schema.initial(input)
    return (state, None, secrets.token_hex(8), 0, seq, parent, None, NO_VALUE, None, None, None)


def restore(
    graph: CompiledGraph[Any], latest: Checkpoint, *, nodes: bool = True
) -> BaseModel | IncompatibleCheckpoint:
    """``latest``'s state as a model, or why this graph cannot continue it
    (its state does not validate, or, with ``nodes``, its next node is gone)."""
    thread_id = latest.thread_id
    saved_nodes = [latest.next, (latest.suspension or {}).get("node")]
    saved_nodes += [record.get("node") for record in (latest.branches or {}).values()]
    for node in saved_nodes if nodes else ():
        if isinstance(node, str) and node not in graph._nodes:
            return IncompatibleCheckpoint(
                thread_id, f"its saved run is at node `{node}`, which this graph has no more",
                node=node,
            )  # fmt: skip
    try:
        return graph._schema.coerce(latest.state)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "state"
        return IncompatibleCheckpoint(
            thread_id,
            f"its saved state no longer fits `{graph.state_model.__name__}`: field "
            f"`{field}`: {error['msg']}",
            field=field,
        )
