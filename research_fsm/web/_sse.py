"""Server-sent events: a run's events pumped by one task, sent as ``text/event-stream``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from starlette.responses import StreamingResponse

__all__ = ["Pump", "RunCancelled", "event_stream", "sse"]

T = TypeVar("T")
_LOG = logging.getLogger("research_fsm.web")
_END = object()


class RunCancelled(Exception):
    """The run was cancelled from the page (``Pump.aclose``) before it ended."""


@runtime_checkable
class _Closable(Protocol):
    """Events that can be closed early: an async generator, an ``AssistantStream``."""

    async def aclose(self) -> None: ...


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One event: ``event: NAME`` and its JSON on one ``data:`` line (JSON escapes newlines)."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class Pump(Generic[T]):
    """Iterates ``events`` in a task of its own and hands them over through a queue, so
    the first event (or the error a forged token raises) can be awaited before the
    response starts, and the rest streamed by another task."""

    def __init__(self, events: AsyncIterator[T]) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(events))

    async def _run(self, events: AsyncIterator[T]) -> None:
        try:
            async for event in events:
                await self._queue.put(event)
            await self._queue.put(_END)
        except Exception as exc:  # handed to the reader, which reports it
            await self._queue.put(exc)
        except asyncio.CancelledError:  # the reader, if any, hears it ended
            self._queue.put_nowait(RunCancelled())
            raise
        finally:
            if isinstance(events, _Closable):
                with contextlib.suppress(Exception):
                    await events.aclose()

    async def next(self) -> T | None:
        """The next event; ``None`` at the end; the run's exception re-raised."""
        item = await self._queue.get()
        if item is _END:
            return None
        if isinstance(item, Exception):
            raise item
        return item  # type: ignore[return-value]

    @property
    def done(self) -> bool:
        """Whether the run ended (completed, failed or cancelled)."""
        return self._task.done()

    async def aclose(self) -> None:
        """Stop the run (a closed page cancels its question) and wait for it."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


async def first(pump: Pump[T]) -> T | None:
    """The pump's first event, closing the pump when it raises."""
    try:
        return await pump.next()
    except BaseException:
        await pump.aclose()
        raise


def event_stream(
    pump: Pump[T],
    head: T | None,
    convert: Callable[[T], Iterable[bytes]],
    describe: Callable[[Exception], str],
    headers: dict[str, str] | None = None,
) -> StreamingResponse:
    """Stream ``head`` then the pump's events as SSE; an error after the response has
    started becomes an ``error`` event with ``describe``'s message."""

    async def body() -> AsyncIterator[bytes]:
        try:
            event = head
            while event is not None:
                for chunk in convert(event):
                    yield chunk
                event = await pump.next()
            yield sse("done", {})
        except RunCancelled:
            yield sse("cancelled", {})
        except Exception as exc:
            yield sse("error", {"message": describe(exc)})
        finally:
            await pump.aclose()

    sent = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"} | (headers or {})
    return StreamingResponse(body(), media_type="text/event-stream", headers=sent)
