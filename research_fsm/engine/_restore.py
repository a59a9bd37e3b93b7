"""Where a call starts: the thread's latest checkpoint restored (or a fresh start),
and what the call brings (input, or a resume token's value).

The run loop (``_runloop.run``) calls ``begin`` first and runs from the ``Start`` it
returns; ``CompiledGraph`` snapshots restore a checkpoint's state with ``restore``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ._branches import find_suspended
from ._command import Command, paused_target
from ._errors import (
    IncompatibleCheckpoint,
    InvalidResumeValue,
    StaleResumeToken,
    ThreadNotFound,
)
from ._logs import engine_logger
from ._plan import Fork, Plan
from ._records import BranchRecord
from ._steps import NO_VALUE
from ._tokens import ThreadSuspended, first_token
from ._types import END, Checkpoint, RunResult, SuspendToken

__all__ = ["Start", "begin", "restore"]


@dataclass(slots=True, kw_only=True)
class Start:
    """Where a call starts (``begin``); built once per call."""

    state: BaseModel
    """The state the run goes on from."""
    node: str | None
    """The node to run next (``None``: from START)."""
    run_id: str
    """The run: a new one from START, else the one the call continues."""
    step: int
    """The step number of the next node."""
    seq: int
    """The thread's latest checkpoint's ``seq`` (0 on a new thread)."""
    parent_id: str | None
    """The thread's latest checkpoint, the next save's parent (``None``: a new thread)."""
    changes: dict[str, int | None] | None
    """The fields the input changed, for stores that save just those (``None``: the
    whole state is saved)."""
    resume_value: object
    """The value a token resumes the suspended node with (``NO_VALUE``: none)."""
    answers: tuple[object, ...] = ()
    """The answers the suspended node's earlier ``interrupt()`` calls were given."""
    fanout: dict[str, BranchRecord] | None
    """An unfinished fan-out's branch records, continued first."""
    resumed_branch: tuple[str, object] | None
    """The branch a token resumes, with its value."""
    resumed_trace: str | None
    """The trace context saved with the suspension resumed (a ``traceparent``)."""
    past_breakpoint: bool = False
    """The call resumes a pause at a breakpoint: ``node`` runs without pausing again."""
    parent_thread: str | None = None
    """The latest checkpoint's ``parent_thread_id`` (a subgraph's child thread)."""
    goto: str | Fork | None = None
    """A pause resumed with ``Command(goto=..., update=...)``: where the run goes on
    (saved first, with the update in ``state`` and ``changes``); ``None``: not so."""


async def begin(
    plan: Plan,
    thread_id: str,
    input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, object] | None,
) -> Start | RunResult[BaseModel]:
    """Where a call starts: from the thread's latest checkpoint and what was given
    (a ``RunResult`` when there is nothing to run: ``run(None)`` on a finished thread)."""
    schema = plan.schema
    latest = await plan.store.load_latest(thread_id)
    # What changed since the latest checkpoint, for stores that save just that.
    changes: dict[str, int | None] | None = {} if plan.tracks else None
    if latest is None:
        return _fresh_start(plan, thread_id, None, None, input, resume)
    restored = restore(plan, latest)
    if isinstance(restored, IncompatibleCheckpoint):
        return _fresh_start(plan, thread_id, latest, restored, input, resume)
    state = restored
    node = latest.next
    run_id = latest.run_id
    step = latest.step
    fanout = latest.branches
    resume_value: object = NO_VALUE
    resumed_branch: tuple[str, object] | None = None
    resumed_trace: str | None = None
    past_breakpoint = False
    goto: str | Fork | None = None
    answers: tuple[object, ...] = ()
    if resume is not None:
        resume_value, resumed_branch, resumed_trace = _resumed(thread_id, latest, resume)
        paused = None if resumed_branch is not None else latest.suspension
        if paused is not None and paused.breakpoint is not None:
            if type(resume_value) is Command:  # go on somewhere else, after its update
                command = resume_value
                origin = f"resume(token, Command(...)) at the pause at `{paused.node}`"
                state = schema.apply(
                    state, schema.as_changes(command.update, origin), origin, changes
                )
                goto = (
                    node or END
                    if command.goto is None
                    else paused_target(plan, paused.node, command.goto)
                )
            elif resume_value is not None:
                raise InvalidResumeValue(thread_id, paused.node, paused.breakpoint, resume_value)
            resume_value = NO_VALUE
            past_breakpoint = True
        elif paused is not None:
            if type(resume_value) is Command:  # would be taken as the answer itself
                raise InvalidResumeValue(thread_id, paused.node, "question", resume_value)
            answers = paused.answers
    elif latest.status == "suspended":
        raise ThreadSuspended(thread_id, await first_token(plan.store, latest))
    elif input is None:
        if latest.status == "completed":
            return RunResult(
                status="completed",
                state=state,
                path=[],
                checkpoint_id=latest.checkpoint_id,
                thread_id=thread_id,
            )
    else:
        if latest.status != "completed":
            engine_logger().warning(
                "new input abandons an unfinished run",
                thread_id=thread_id,
                run_id=latest.run_id,
                next_node=latest.next,
            )
        state = schema.apply(state, schema.as_changes(input, "input"), "input", changes)
        node = None
        run_id = secrets.token_hex(8)
        step = 0
        fanout = None
    return Start(
        state=state,
        node=node,
        run_id=run_id,
        step=step,
        seq=latest.seq,
        parent_id=latest.checkpoint_id,
        changes=changes,
        resume_value=resume_value,
        answers=answers,
        fanout=fanout,
        resumed_branch=resumed_branch,
        resumed_trace=resumed_trace,
        past_breakpoint=past_breakpoint,
        goto=goto,
        parent_thread=latest.parent_thread_id,
    )


def _resumed(
    thread_id: str, latest: Checkpoint, resume: tuple[SuspendToken, object]
) -> tuple[object, tuple[str, object] | None, str | None]:
    """What a token resumes: the suspended node's value (``NO_VALUE`` when the
    token is a branch's), the branch with its value (``None``: not a branch), and
    the trace context saved with the suspension (``None``: none saved)."""
    token, value = resume
    branches = latest.branches
    branch_id = find_suspended(branches, token.checkpoint_id) if branches else None
    if branches and branch_id is not None:
        return NO_VALUE, (branch_id, value), branches[branch_id].trace
    if (
        latest.checkpoint_id != token.checkpoint_id
        or latest.status != "suspended"
        or latest.branches
    ):
        reason = "it was already used, or the thread has moved on since it was issued"
        if latest.status == "suspended":  # e.g. update_state at a pause: a new token
            reason += (
                "; the thread now waits at a newer checkpoint (an update_state at a pause "
                "gives the pause a new token): resume with the snapshot's suspension.token "
                "(the snapshot update_state returned, or await app.get_state(thread_id)), "
                "or edit and go on in one call with resume(token, Command(update=...))"
            )
        raise StaleResumeToken(thread_id, token.checkpoint_id, reason)
    return value, None, None if latest.suspension is None else latest.suspension.trace


def _fresh_start(
    plan: Plan,
    thread_id: str,
    latest: Checkpoint | None,
    misfit: IncompatibleCheckpoint | None,
    input: dict[str, Any] | BaseModel | None,
    resume: tuple[SuspendToken, object] | None,
) -> Start:
    """A run from START on ``input`` alone: on a new thread, or on one whose
    latest checkpoint this graph cannot continue (``misfit``)."""
    if misfit is not None and (input is None or resume is not None):
        raise misfit
    if resume is not None:
        raise StaleResumeToken(thread_id, resume[0].checkpoint_id, "the thread no longer exists")
    if input is None:
        raise ThreadNotFound(thread_id, "; pass input to start it")
    if misfit is not None:
        engine_logger().warning(
            "new input starts a fresh run", thread_id=thread_id, reason=str(misfit)
        )
    return Start(
        state=plan.schema.initial(input),
        node=None,
        run_id=secrets.token_hex(8),
        step=0,
        seq=0 if latest is None else latest.seq,
        parent_id=None if latest is None else latest.checkpoint_id,
        changes=None,  # the first checkpoint of such a run holds the whole state
        resume_value=NO_VALUE,
        fanout=None,
        resumed_branch=None,
        resumed_trace=None,
    )


def restore(
    plan: Plan, latest: Checkpoint, *, nodes: bool = True
) -> BaseModel | IncompatibleCheckpoint:
    """``latest``'s state as a model, or why this graph cannot continue it
    (its state does not validate, or, with ``nodes``, its next node is gone)."""
    thread_id = latest.thread_id
    saved_nodes = [latest.next, None if latest.suspension is None else latest.suspension.node]
    saved_nodes += [record.node for record in (latest.branches or {}).values()]
    for node in saved_nodes if nodes else ():
        if node is not None and node not in plan.nodes:
            return IncompatibleCheckpoint(
                thread_id,
                f"its saved run is at node `{node}`, which this graph has no more",
                node=node,
            )
    try:
        return plan.schema.coerce(latest.state)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "state"
        return IncompatibleCheckpoint(
            thread_id,
            f"its saved state no longer fits `{plan.schema.model.__name__}`: field "
            f"`{field}`: {error['msg']}",
            field=field,
        )
