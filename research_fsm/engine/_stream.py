"""``RunStream``: the async iterator behind ``stream`` and ``stream_resume``.

``CompiledGraph`` hands it the call to start; the run sends its events into the
stream's queue (the run's ``Sink``) and the consumer reads them off it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from ._errors import InvalidCall
from ._events import Event, StepState
from ._modes import chunks
from ._types import RunResult

__all__ = ["RunStream"]

StateT = TypeVar("StateT", bound=BaseModel)


class _Done:
    """The end of a run's events, on its queue."""


_DONE = _Done()
_Item = Event | StepState | _Done


async def _drive(
    start: Callable[[Callable[[Event | StepState], None]], Awaitable[RunResult[StateT]]],
    queue: asyncio.Queue[_Item],
) -> RunResult[StateT]:
    # Deliberately holds no reference to the RunStream: a stream its consumer
    # drops (``break`` out of ``async for``) is garbage-collected at once and
    # ``__del__`` cancels the run, which releases the thread.
    try:
        return await start(queue.put_nowait)
    finally:
        queue.put_nowait(_DONE)


class RunStream(Generic[StateT]):
    """Events of one run, delivered while it runs.

    Use it as ``async with graph.stream(...) as events: async for ev in events``;
    leaving the block early cancels the run and releases the thread at once.
    ``result`` holds the ``RunResult`` once the stream is exhausted.

    With ``modes`` (see ``stream(..., mode=...)``) it yields each mode's chunks
    instead of the events, tagged ``(mode, chunk)`` when ``tagged``.
    """

    def __init__(
        self,
        start: Callable[[Callable[[Event | StepState], None]], Awaitable[RunResult[StateT]]],
        modes: tuple[tuple[str, ...], bool] | None = None,
    ) -> None:
        self._start = start
        self._modes = modes
        self._ready: list[object] = []  # chunks of the last event not yet yielded
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._task: asyncio.Task[RunResult[StateT]] | None = None
        self._finished = False
        self.result: RunResult[StateT] | None = None
        """The run's result, once the last event was read."""

    def __aiter__(self) -> RunStream[StateT]:
        return self

    if not TYPE_CHECKING:  # to the type checker not iterable, as it is not

        def __iter__(self):
            raise InvalidCall(
                "a RunStream is read with `async for`, not `for` (LangGraph's sync "
                "app.stream(...))",
                "async for chunk in app.stream(input, thread_id=..., mode=...), inside "
                "an async function (asyncio.run(main()) from sync code)",
            )

    async def __anext__(self) -> Any:
        """The next event (``"events"`` mode) or chunk of the modes asked for."""
        if self._ready:
            return self._ready.pop(0)
        if self._finished:
            raise StopAsyncIteration
        if self._task is None:
            self._task = asyncio.ensure_future(_drive(self._start, self._queue))
        while True:
            item = await self._queue.get()
            if type(item) is _Done:
                self._finished = True
                self.result = await self._task  # raises the run's error, if any
                raise StopAsyncIteration
            modes = self._modes
            if modes is None:
                if type(item) is StepState:  # for the "values" mode only
                    continue
                return item
            ready = chunks(modes[0], modes[1], item)
            if ready:
                self._ready = ready[1:]
                return ready[0]

    async def aclose(self) -> None:
        """Stop the run (if still going) and wait until the thread is released."""
        self._finished = True
        task = self._task
        if task is not None:
            task.cancel()  # no-op when it already finished
            await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # mark an unread error as retrieved

    async def __aenter__(self) -> RunStream[StateT]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # the event loop is already closed
                task.cancel()
