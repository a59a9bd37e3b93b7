"""Parallel branches at run time: run a fan-out's branches as tasks, checkpoint
each branch node as it finishes, merge the branches at the join in declared order.

The run loop (``_runloop``) hands a fan-out to a ``ParallelRun`` and goes on where
it ends. A branch step calls the node, routes and saves with ``_steps``; the data
(branches, frames, saved records, the merge) is in ``_branches``. The branch records
are saved coalesced: one save for all the branches that finish while another save
is under way.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from pydantic import BaseModel

from ._branches import (
    Branch,
    BranchFailure,
    Continue,
    Frame,
    Limiter,
    entry,
    first_failure_or_all,
    merge,
    record,
    replay,
    walk,
)
from ._command import Applied, Command
from ._errors import (
    EngineError,
    InvalidResumeValue,
    InvalidUpdate,
    LeaseLost,
    NodeFailed,
    StepLimitExceeded,
)
from ._events import NodeFinished, NodeStarted
from ._interrupt import Interruption
from ._plan import Fork
from ._records import BranchRecord, OriginRecord, UpdateEntry, Where
from ._run import RouteFailed, Run, Suspending
from ._steps import ChildSuspend, NodeError
from ._types import END, CheckpointStatus, ErrorInfo

__all__ = ["ParallelRun"]


class ParallelRun:
    """One run's fan-outs: the branch tasks, their saves, and the merge at joins.

    Moves the ``Run`` it shares with the run loop (its step, path and saves) while a
    fan-out is in flight.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        plan = self.plan = run.plan
        limit = plan.max_concurrency
        self._limiter = None if limit is None else Limiter(limit)
        self._started = 0  # node executions begun in this call, in every branch
        self._fresh: set[int] = set()  # ids of update entries validated in this process
        self._tasks: set[asyncio.Task[None]] = set()  # the branch tasks running
        self._root: Frame | None = None
        self._last_node: str | None = None
        # The branch records and their saves.
        self._records: dict[str, BranchRecord] = {}
        self._running = 0  # branch tasks alive (while any is, a save may be left to them)
        self._soon_pending = False
        self._changed: set[str] = set()
        self._version = 0  # records published ...
        self._saved = 0  # ... and saved
        self._saving: asyncio.Future[None] | None = None
        self._lost: LeaseLost | None = None  # a save found the lease gone: no branch goes on

    # -- entry points ----------------------------------------------------------

    async def begin(
        self,
        fork: Fork,
        state: BaseModel,
        changes: dict[str, int | None] | None,
        last_node: str | None,
        origin: OriginRecord | None = None,
        past_breakpoint: bool = False,
    ) -> None:
        """Checkpoint the start of ``fork`` after ``last_node`` produced ``state``
        (``origin``: written by hand, see ``Checkpoint.origin``; ``past_breakpoint``:
        a pause resumed into these branches, whose first nodes do not pause before)."""
        self._root = self._frame(fork, state, "")
        if past_breakpoint:
            for branch in self._root.branches:
                branch.past_breakpoint = True
        self._last_node = last_node
        await self._save("running", self._root.join, state, changes, full=True, origin=origin)

    async def finish(self) -> Continue | None:
        """Run the fan-out to its end: where the run goes on, or ``None`` when branches
        are suspended (``records()`` holds them)."""
        return await self._run_root()

    async def restart(
        self,
        records: dict[str, BranchRecord],
        state: BaseModel,
        resume: tuple[str, object] | None,
    ) -> Continue | None:
        """Continue the saved fan-out ``records`` (after a crash, failure or suspension)."""
        self._records = dict(records)
        self._root = self._rebuild(state, "")
        if resume is not None:
            branch = next(b for b in walk(self._root) if b.id == resume[0])
            if branch.breakpoint is None and type(resume[1]) is Command:  # not an answer
                node = branch.node or branch.id  # the node it is suspended at
                raise InvalidResumeValue(self.run.thread_id, node, "question", resume[1])
            branch.status = "pending"
            branch.resumed_from = branch.at
            branch.at = None
            branch.past_breakpoint = True  # its next node runs without pausing
            if branch.breakpoint is None:
                branch.resume_value = resume[1]
            else:  # a pause at a breakpoint: the branch goes on with its next node
                self._resumed_pause(branch, resume[1])
                branch.breakpoint = None
                if branch.node is None:  # paused after its last node: it is done
                    branch.status = "done"
                    self._publish(branch)  # saved by the fan-out's next save
        return await self._run_root()

    def _resumed_pause(self, branch: Branch, value: object) -> None:
        """A branch paused at a breakpoint resumed with ``value``: ``None``, or a
        ``Command`` without ``goto`` whose update the branch takes first (as the node
        it paused at, before or after, had made it); anything else is an
        ``InvalidResumeValue`` naming what it takes."""
        assert branch.breakpoint is not None
        where, paused = branch.breakpoint
        if value is None:
            return
        if type(value) is not Command or value.goto is not None:
            raise InvalidResumeValue(
                self.run.thread_id,
                paused,
                where,
                value,
                f"None, or Command(update=...) (a parallel branch `{branch.id}` goes on "
                "where it paused: its pause takes no goto)",
            )
        schema = self.plan.schema
        origin = f"resume(token, Command(update=...)) at the pause of branch `{branch.id}`"
        update = schema.as_changes(value.update, origin)
        state = schema.apply(branch.state, update, origin)
        if update:
            branch.updates.append(
                entry(paused, schema.validated_changes(update, branch.state, state))
            )
        branch.state = state

    # -- frames ----------------------------------------------------------------

    def _frame(self, fork: Fork, base: BaseModel, owner: str) -> Frame:
        prefix = f"{owner}/" if owner else ""
        branches = []
        for index, (node, item) in enumerate(fork.starts):
            branch = Branch(
                id=f"{prefix}{node}[{index}]",
                parent=owner,
                index=index,
                node=node,
                join=fork.join,
                state=base,
                item=item,
                key=os.urandom(8).hex() if self.plan.subgraphs else None,
            )
            branches.append(branch)
            self._publish(branch)
        return Frame(fork.join, base, branches)

    def _rebuild(self, base: BaseModel, owner: str) -> Frame:
        mine = [pair for pair in self._records.items() if pair[1].owner == owner]
        mine.sort(key=lambda pair: pair[1].position)
        branches = []
        for branch_id, saved in mine:
            origin = f"saved branch `{branch_id}`"
            branch = Branch(
                id=branch_id,
                parent=owner,
                index=saved.position,
                node=saved.node,
                join=saved.join,
                state=replay(self.plan.schema, base, saved.updates, origin),
                item=saved.item,
                status=saved.status,
                updates=list(saved.updates),
                at=saved.at,
                payload=saved.payload,
                error=saved.error,
                key=saved.key,
                child=saved.child,
                breakpoint=saved.breakpoint,
                answers=saved.answers,
            )
            if branch.status == "forked":
                branch.frame = self._rebuild(branch.state, branch.id)
            branches.append(branch)
        join = branches[0].join if branches else END
        return Frame(join, base, branches)

    # -- the outermost fan-out -------------------------------------------------

    async def _run_root(self) -> Continue | None:
        root = self._root
        assert root is not None
        try:
            finished = await self._run_frame(root)
        except BranchFailure as failure:
            return await self._root_failure(root, failure)
        if not finished:
            await self._save("suspended", root.join, root.base, self._no_changes())
            return None
        track = self._no_changes()
        state, _ = await self._merged(root, root.base, track, inline=True)
        self._clear(root)
        status: CheckpointStatus = "completed" if root.join == END else "running"
        await self._save(status, root.join, state, track)
        return Continue(root.join, state)

    async def _root_failure(self, root: Frame, failure: BranchFailure) -> Continue:
        if failure.on_error is not None:
            track = self._no_changes()
            state = self._kept(root, root.base, failure, None, track)
            self._clear(root)
            await self._save("running", failure.on_error, state, track)
            return Continue(failure.on_error, state, self._error_info(failure))
        error = {
            "node": failure.node,
            "exc_type": type(failure.cause).__name__,
            "message": str(failure.cause),
            "branch": failure.branch.id,
        }
        await self._save("failed", root.join, root.base, self._no_changes(), error=error)
        if failure.routing and isinstance(failure.cause, EngineError):
            raise failure.cause
        raise NodeFailed(failure.node, failure.step, failure.cause) from failure.cause

    def _error_info(self, failure: BranchFailure) -> ErrorInfo:
        cause = failure.cause
        return ErrorInfo(failure.node, type(cause).__name__, str(cause), branch=failure.branch.id)

    # -- running a frame -------------------------------------------------------

    async def _run_frame(self, frame: Frame) -> bool:
        """Run the frame's unfinished branches together; True when all are done.

        Raises ``BranchFailure`` (siblings cancelled, finished ones kept)."""
        runnable = [b for b in frame.branches if b.status in ("pending", "failed", "forked")]
        for branch in runnable:
            if branch.status == "failed":
                branch.status, branch.error = "pending", None
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._branch(frame, b)) for b in runnable]
        self._running += len(tasks)
        self._tasks.update(tasks)
        try:
            if tasks:
                await first_failure_or_all(tasks)
        finally:
            for task in tasks:
                task.cancel()
            if not all(task.done() for task in tasks):
                await asyncio.wait(tasks)
            await self._settle()
            self._tasks.difference_update(tasks)
        if self._lost is not None:
            raise self._lost
        errors = [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]
        for error in errors:  # the first in declared order decides
            if not isinstance(error, BranchFailure):
                raise error
        if errors:
            failure = errors[0]
            assert isinstance(failure, BranchFailure)
            self._mark_failed(failure)
            raise failure
        # Done branches that no save took yet are saved by the join's merge.
        return all(b.status == "done" for b in frame.branches)

    def _mark_failed(self, failure: BranchFailure) -> None:
        branch = failure.branch
        if branch.status == "suspended" or failure.on_error is not None or failure.routing:
            return
        cause = failure.cause
        branch.status = "failed"
        branch.error = {
            "node": failure.node,
            "exc_type": type(cause).__name__,
            "message": str(cause),
        }
        self._publish(branch)

    async def _branch(self, frame: Frame, branch: Branch) -> None:
        """Run one branch node after node until it is done, suspended or forked
        into a fan-out of its own that is not finished."""
        try:
            if branch.frame is not None and not await self._join_children(branch):
                return
            while branch.status == "pending":
                if not await self._step(frame, branch):
                    return
                if branch.frame is not None and not await self._join_children(branch):
                    return
        finally:
            self._running -= 1

    async def _step(self, frame: Frame, branch: Branch) -> bool:
        """Run the branch's next node and save its update; False when it suspended."""
        run = self.run
        plan = self.plan
        sink = run.sink
        node = branch.node
        assert node is not None
        stops = run.stops
        if stops is not None:
            if node in stops.before and not branch.past_breakpoint:
                self._pause(branch, "before", node)
                return False
            branch.past_breakpoint = False
        spec = plan.nodes[node]
        started = self._started
        if len(run.path) + started >= plan.step_limit:
            raise StepLimitExceeded(plan.step_limit, run.path)
        self._started = started + 1
        ctx = run.branch_context(node, run.step + started, branch)
        if sink is not None:
            sink(NodeStarted(node=node, step=ctx.step, branch=branch.id))
        began = time.perf_counter() if sink is not None else 0.0
        try:
            if self._limiter is None:
                update, state, target = await run.take_step(spec, branch.state, ctx, None)
            else:
                async with self._limiter.slot():
                    update, state, target = await run.take_step(spec, branch.state, ctx, None)
        except Suspending as suspending:
            self._suspend(branch, node, suspending)
            return False
        except (NodeError, InvalidUpdate) as failure:
            cause = failure.cause if isinstance(failure, NodeError) else failure
            self._started -= 1
            if ctx.resuming and spec.on_error is None:  # keeps the suspension and its token
                branch.status = "suspended"
                branch.at = branch.resumed_from
                self._publish(branch)
            raise BranchFailure(branch, node, ctx.step, cause, spec.on_error) from cause
        except RouteFailed as failed:
            self._started -= 1
            exc = failed.cause
            raise BranchFailure(branch, node, ctx.step, exc, None, routing=True) from exc
        self._advance(frame, branch, node, state, update, target)
        self._last_node = node
        if (
            stops is not None
            and node in stops.after
            and (branch.status == "pending" or (target == frame.join and target != END))
        ):  # a branch's last node (routed to its join) pauses too
            self._pause(branch, "after", node)
            if sink is not None:
                sink(_finished(node, ctx.step, update, began, branch.id))
            return False
        if branch.status == "done":
            self._soon()  # saved at once; the join waits for it, the branch need not
        else:
            await self._commit()
        if sink is not None:
            sink(_finished(node, ctx.step, update, began, branch.id))
        return True

    def _advance(
        self,
        frame: Frame,
        branch: Branch,
        node: str,
        state: BaseModel,
        update: dict[str, Any] | Applied,
        target: str | Fork,
    ) -> None:
        """Record a finished branch node: its update, and where the branch goes next."""
        if update:
            if type(update) is dict:
                saved = entry(node, self.plan.schema.validated_changes(update, branch.state, state))
                self._fresh.add(id(saved))  # merged without validating again
                branch.updates.append(saved)
            else:  # a list of updates (``Applied``): an entry each
                self._several(branch, node, update)
        branch.state = state
        if branch.key is not None:  # the branch's next node execution is a new one
            branch.key = os.urandom(8).hex()
        self._started -= 1
        run = self.run
        run.step += 1
        run.path.append(node)
        if isinstance(target, Fork):
            branch.frame = self._frame(target, state, branch.id)
            branch.status = "forked"
            branch.node = None
        elif target == frame.join or target == END:
            branch.status = "done"
            branch.node = None
        else:
            branch.node = target
        self._publish(branch)

    def _several(self, branch: Branch, node: str, applied: object) -> None:
        """A branch node's list of updates, each recorded as an entry of its own."""
        assert isinstance(applied, Applied)
        schema = self.plan.schema
        states = applied.states
        for each, before, after in zip(applied.updates, states, states[1:], strict=False):
            if each:
                saved = entry(node, schema.validated_changes(each, before, after))
                self._fresh.add(id(saved))
                branch.updates.append(saved)

    def _suspend(self, branch: Branch, node: str, suspending: Suspending) -> None:
        """The branch's ``node`` suspended (its update applied): saved soon."""
        out = suspending.out
        branch.state = suspending.state
        if suspending.update:
            branch.updates.append(entry(node, suspending.update))
        branch.status = "suspended"
        branch.payload = out.payload
        branch.at = os.urandom(12).hex()
        # A subgraph's: which child suspension it passed on (``None``: not a subgraph).
        branch.child = out.child if isinstance(out, ChildSuspend) else None
        # interrupt()'s: the answers its node was given (replayed on resume).
        branch.answers = out.answers if type(out) is Interruption else ()
        self._started -= 1
        self.run.path.append(node)
        self._publish(branch)
        self._traced(branch)
        self._last_node = node
        self._soon()

    def _pause(self, branch: Branch, where: Where, node: str) -> None:
        """Pause the branch at a breakpoint ``where`` ``node`` (saved soon, as a
        suspension is)."""
        branch.status = "suspended"
        branch.payload = None
        branch.answers = ()  # a pause asks nothing
        branch.breakpoint = (where, node)
        branch.at = os.urandom(12).hex()
        self._publish(branch)
        self._traced(branch)
        self._soon()

    def _traced(self, branch: Branch) -> None:
        """In a traced run, the suspended branch's record links its resume to (and
        continues) the run's trace."""
        tracing = self.run.tracing
        if tracing is not None:
            saved = self._records[branch.id]
            self._records[branch.id] = saved.traced(tracing.traceparent())

    async def _join_children(self, branch: Branch) -> bool:
        """Run the branch's own fan-out; False when some of it is suspended."""
        frame = branch.frame
        assert frame is not None
        try:
            if not await self._run_frame(frame):
                return False
        except BranchFailure as failure:
            if failure.on_error is None:
                raise
            state = self._kept(frame, branch.state, failure, branch.updates, None)
            branch.node = failure.on_error
            branch.pending_error = self._error_info(failure)
        else:
            state, entries = await self._merged(frame, branch.state, None, inline=False)
            branch.updates.extend(entries)
            branch.node = frame.join
        self._clear(frame)
        branch.frame = None
        branch.state = state
        if branch.node == branch.join or branch.node == END:
            branch.status = "done"
            branch.node = None
        else:
            branch.status = "pending"
        self._publish(branch)
        await self._commit()
        return True

    # -- merging ---------------------------------------------------------------

    async def _merged(
        self, frame: Frame, base: BaseModel, track: dict[str, int | None] | None, *, inline: bool
    ) -> tuple[BaseModel, list[UpdateEntry]]:
        """The frame's branches merged; when they cannot be (``InvalidUpdate``),
        their records are saved first, so fixing the graph redoes none of them.
        (When they can, the merged checkpoint saves what they did.)"""
        try:
            return merge(self.plan.schema, frame.branches, base, track, self._fresh)
        except InvalidUpdate:
            await self._commit(inline=inline)
            raise

    def _kept(
        self,
        frame: Frame,
        base: BaseModel,
        failure: BranchFailure,
        into: list[UpdateEntry] | None,
        track: dict[str, int | None] | None,
    ) -> BaseModel:
        """What an ``on_error`` node sees: the finished branches' updates and the
        failed branch's before its failing node, in declared order."""
        kept = [b for b in frame.branches if b.status == "done" or b is failure.branch]
        state, entries = merge(self.plan.schema, kept, base, track, self._fresh)
        if into is not None:
            into.extend(entries)
        return state

    # -- saving the branch records ---------------------------------------------

    def records(self) -> dict[str, BranchRecord]:
        """The branch records as saved last."""
        return self._records

    def _publish(self, branch: Branch) -> None:
        """Take ``branch``'s record as it is now (saved by the next save)."""
        self._records[branch.id] = record(branch)
        self._changed.add(branch.id)
        self._version += 1

    def _clear(self, frame: Frame) -> None:
        """Drop the records of a fan-out that ended (and of the fan-outs within it)."""
        for branch in walk(frame):
            if self._records.pop(branch.id, None) is not None:
                self._changed.add(branch.id)
                self._version += 1

    async def _commit(self, *, inline: bool = False) -> None:
        """Make the branch records published so far durable (one save for all
        the branches that finish while another save is under way). ``inline``:
        save in this task (the run's own, which no sibling cancels)."""
        wanted = self._version
        while self._saved < wanted:
            if self._lost is not None:
                raise self._lost
            if inline and self._saving is None:
                await self._save_published()
            else:
                await asyncio.shield(self._kick())

    def _soon(self) -> None:
        """Save what was published once this turn of the event loop is over: the
        branches finishing together share one save, and when no branch is left
        running the join's commit saves them, without a task of its own."""
        if not self._soon_pending:
            self._soon_pending = True
            asyncio.get_running_loop().call_soon(self._soon_kick)

    def _soon_kick(self) -> None:
        self._soon_pending = False
        if self._running > 0 and self._saved < self._version:
            self._kick()

    def _kick(self) -> asyncio.Future[None]:
        """Start saving what was published, unless a save is under way (it goes on
        until nothing is left)."""
        if self._saving is None:
            self._saving = asyncio.ensure_future(self._flush())
        return self._saving

    async def _flush(self) -> None:
        try:
            await self._save_published()
        except LeaseLost as exc:  # raised by the branches' next commit; stop them now
            self._lost = exc
            for task in self._tasks:
                task.cancel()
        finally:
            self._saving = None

    async def _save_published(self) -> None:
        root = self._root
        assert root is not None
        while self._saved < self._version:
            version = self._version
            await self._save("running", root.join, root.base, self._no_changes())
            self._saved = version

    def _no_changes(self) -> dict[str, int | None] | None:
        """No state field changed yet (``None``: the store does not save changes alone)."""
        return {} if self.plan.tracks else None

    async def _settle(self) -> None:
        """Wait for a save under way (its error, if any, is raised by the next save)."""
        saving = self._saving
        if saving is not None:
            await asyncio.wait({saving})
            if not saving.cancelled():
                saving.exception()  # retrieved: the next _commit saves again and raises

    async def _save(
        self,
        status: CheckpointStatus,
        next_node: str,
        state: BaseModel,
        changes: dict[str, int | None] | None,
        *,
        full: bool = False,
        error: dict[str, str] | None = None,
        origin: OriginRecord | None = None,
    ) -> None:
        """Save a checkpoint with the records as they are (``full``: all of them,
        else the store may write just the ones changed since the last save)."""
        changed = None if full else tuple(self._changed)
        self._changed = set()
        branches = dict(self._records) if self._records else None
        last_node = self._last_node
        try:
            await self.run.save(
                status,
                None if next_node == END else next_node,
                state,
                last_node,
                changes,
                error=error,
                branches=branches,
                changed_branches=changed,
                origin=origin,
            )
        except BaseException:
            if changed is not None:
                self._changed.update(changed)
            raise


def _finished(
    node: str, step: int, update: dict[str, Any] | Applied, began: float, branch: str
) -> NodeFinished:
    """A branch node's ``NodeFinished`` (``updates``: a list of updates, as returned)."""
    duration = time.perf_counter() - began
    if isinstance(update, Applied):
        return NodeFinished(
            node=node,
            step=step,
            update=update.summary,
            duration=duration,
            branch=branch,
            updates=update.updates,
        )
    return NodeFinished(node=node, step=step, update=update, duration=duration, branch=branch)
