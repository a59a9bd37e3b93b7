"""Events yielded by ``CompiledGraph.stream`` and ``stream_resume``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._types import RunResult, Suspension

__all__ = [
    "Completed",
    "Emitted",
    "Event",
    "NodeFinished",
    "NodeStarted",
    "Sink",
    "StepState",
    "Suspended",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStarted:
    """A node is about to run."""

    node: str
    """The node."""
    step: int
    """Its step number in the run."""
    branch: str | None = None
    """The parallel branch it runs in (``None`` outside fan-outs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFinished:
    """A node finished and its update was applied and checkpointed."""

    node: str
    """The node."""
    step: int
    """Its step number in the run."""
    update: dict[str, Any]
    """The field changes it returned (before reducers); for a list of updates, each
    field with the last value the list gave it (``updates`` has the list)."""
    duration: float
    """Seconds the node took, retries included."""
    branch: str | None = None
    """The parallel branch it ran in (``None`` outside fan-outs)."""
    updates: tuple[dict[str, Any], ...] | None = None
    """The updates a node returned as a list, in order (``None``: it returned one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Emitted:
    """Something a node sent with ``ctx.emit`` while running (e.g. an LLM token)."""

    node: str
    """The node that emitted."""
    kind: str
    """A label chosen by the node, e.g. ``"token"``."""
    data: Any
    """The payload."""
    branch: str | None = None
    """The parallel branch of the node (``None`` outside fan-outs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspended:
    """The run paused for human input; the stream ends after this event."""

    suspension: Suspension
    """What was asked, and the token to resume with."""
    result: RunResult[Any]
    """The same result ``run`` would have returned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed:
    """The run reached END; the stream ends after this event."""

    result: RunResult[Any]
    """The same result ``run`` would have returned."""


Event = NodeStarted | NodeFinished | Emitted | Suspended | Completed
"""Any event a stream yields."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepState:
    """The whole state after a step outside parallel branches (or after a fan-out's
    merge): what the ``"values"`` stream mode yields; other modes skip it."""

    state: Any
    """The run's state after the step."""


Sink = Callable[[Event | StepState], None] | None
"""Where a run sends its events: a stream's queue, or ``None`` (a run that is not streamed)."""
