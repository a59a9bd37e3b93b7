"""The branch records of one run's fan-outs and their saves: records are published
as branches move on, and made durable by coalesced saves (one save for all the
branches that finish while another save is under way)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ._branches import Frame, record, walk
from ._errors import LeaseLost
from ._steps import save

if TYPE_CHECKING:
    from ._branches import Branch
    from ._compiled import CompiledGraph

__all__ = ["BranchSaves"]


class BranchSaves:
    """The records of a run's fan-out and the run's checkpoint chain (``seq``,
    ``parent_id``, ``step``) they are saved on; ``ParallelRun`` builds on it."""

    def __init__(
        self, graph: CompiledGraph[Any], thread_id: str, run_id: str, *, seq: int,
        parent_id: str | None, step: int,
    ) -> None:  # fmt: skip
        self.graph = graph
        self.thread_id = thread_id
        self.run_id = run_id
        self.seq = seq
        self.parent_id = parent_id
        self.step = step
        self._tracks = graph._tracks
        self._records: dict[str, dict[str, Any]] = {}
        self._running = 0  # branch tasks alive (while any is, a save may be left to them)
        self._soon_pending = False
        self._changed: set[str] = set()
        self._version = 0  # records published ...
        self._saved = 0  # ... and saved
        self._saving: asyncio.Future[None] | None = None
        self._lost: LeaseLost | None = None  # a save found the lease gone: no branch goes on
        self._root: Frame | None = None
        self._last_node: str | None = None

    def records(self) -> dict[str, dict[str, Any]]:
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
            self._stop_branches()
        finally:
            self._saving = None

    def _stop_branches(self) -> None:
        """Cancel the branch tasks still running (``ParallelRun``)."""

    async def _save_published(self) -> None:
        root = self._root
        assert root is not None
        while self._saved < self._version:
            version = self._version
            await self._save("running", root.join, root.base, self._no_changes())
            self._saved = version

    def _no_changes(self) -> dict[str, int | None] | None:
        """No state field changed yet (``None``: the store does not save changes alone)."""
        return {} if self._tracks else None

    async def _settle(self) -> None:
        """Wait for a save under way (its error, if any, is raised by the next save)."""
        saving = self._saving
        if saving is not None:
            await asyncio.wait({saving})
            if not saving.cancelled():
                saving.exception()  # retrieved: the next _commit saves again and raises

    async def _save(
        self, status: Any, next_node: str, state: BaseModel,
        changes: dict[str, int | None] | None, *, full: bool = False,
        error: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Save a checkpoint with the records as they are (``full``: all of them,
        else the store may write just the ones changed since the last save)."""
        changed = None if full else tuple(self._changed)
        self._changed = set()
        branches = dict(self._records) if self._records else None
        try:
            self.parent_id = await save(
                self.graph.store, self.thread_id, self.run_id, self.step, self.seq + 1,
                self.parent_id, status, next_node, state, last_node=self._last_node, error=error,
                changes=changes, branches=branches, changed_branches=changed,
            )  # fmt: skip
        except BaseException:
            if changed is not None:
                self._changed.update(changed)
            raise
        self.seq += 1
