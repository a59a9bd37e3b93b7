"""``AppRunner``: what the three apps' runners share. It compiles an app's graph once
(on first use) and turns the engine's events of a run into the app's own progress
events, labelled from the app's agent table."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from ..engine import (
    CheckpointStore,
    CompiledGraph,
    Completed,
    Emitted,
    NodeFinished,
    NodeStarted,
    RunResult,
    RunStream,
    StateGraph,
    Suspended,
)
from .agents import AgentTable

__all__ = ["AppRunner"]

S = TypeVar("S", bound=BaseModel)
E = TypeVar("E")


class AppRunner(Generic[S, E]):
    """An app's runner: its graph compiled over ``store`` on first use, and its runs'
    engine events turned into the app's events ``E``.

    A subclass names its ``agents`` (the app's agent table) and ``step_limit``,
    builds its graph (``build``) and says what each event becomes: ``started``,
    ``finished`` and ``emitted`` return an event or ``None`` (nothing to tell), ``ended``
    the run's last event (the app's result). Each hook sees ``run``: what the run has
    written so far (its input, or the state it resumes from, then every node's update),
    so a label can name the company being researched.
    """

    agents: ClassVar[AgentTable]
    """The app's agents, by node name."""
    step_limit: ClassVar[int] = 30
    """The most steps one run may take."""

    def __init__(self, *, store: CheckpointStore) -> None:
        self.store = store
        """Where the app's runs are checkpointed."""
        self._app: CompiledGraph[S] | None = None
        self._building = asyncio.Lock()

    async def build(self) -> StateGraph[S]:
        """The app's graph, not yet compiled."""
        raise NotImplementedError

    async def graph(self) -> CompiledGraph[S]:
        """The compiled graph (built on first use)."""
        if self._app is None:
            async with self._building:
                if self._app is None:
                    graph = await self.build()
                    self._app = graph.compile(store=self.store, step_limit=self.step_limit)
        return self._app

    @property
    def app(self) -> CompiledGraph[S]:
        """The compiled graph once built (``await graph()`` builds it on first use)."""
        if self._app is None:
            raise RuntimeError(
                f"{type(self).__name__}'s graph is built on first use: await its graph() first"
            )
        return self._app

    def label(self, node: str, run: Mapping[str, Any]) -> str:
        """``node``'s progress line in the run's language, its placeholders filled from
        what the run wrote (a node the table lacks reads as its name's words)."""
        return self.agents.label(node, str(run.get("language") or "en"), run)

    def translate(self, event: object, run: dict[str, Any]) -> E | None:
        """The app's event for one engine event, or ``None`` (nothing to tell); ``run``
        (what the run has written so far) takes in a finished node's update."""
        if isinstance(event, NodeStarted):
            return self.started(event, run)
        if isinstance(event, NodeFinished):
            run.update(event.update)
            return self.finished(event, run)
        if isinstance(event, Emitted):
            return self.emitted(event, run)
        if isinstance(event, (Completed, Suspended)):
            return self.ended(event.result)
        return None

    async def progress(
        self, stream: RunStream[S], run: Mapping[str, Any] | None = None
    ) -> AsyncGenerator[E, None]:
        """The app's events of one run, ending with ``ended``'s; leaving early cancels
        the run and frees its thread. ``run``: what it starts from (input or state)."""
        seen: dict[str, Any] = dict(run or {})
        async with stream as events:
            async for event in events:
                item = self.translate(event, seen)
                if item is not None:
                    yield item

    def started(self, event: NodeStarted, run: Mapping[str, Any]) -> E | None:
        """What an agent starting becomes (default: nothing)."""
        return None

    def finished(self, event: NodeFinished, run: Mapping[str, Any]) -> E | None:
        """What an agent finishing becomes (default: nothing)."""
        return None

    def emitted(self, event: Emitted, run: Mapping[str, Any]) -> E | None:
        """What a node's emitted item (a token of text...) becomes (default: nothing)."""
        return None

    def ended(self, result: RunResult[S]) -> E:
        """The run's last event, from its result (completed or suspended)."""
        raise NotImplementedError
