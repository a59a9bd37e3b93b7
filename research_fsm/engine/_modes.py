"""Stream modes: what ``stream(..., mode=...)`` yields of a run's events.

``"events"`` (the default): the events themselves; ``"updates"``: ``{node: update}``
per node finished, and ``{"__interrupt__": suspensions}`` when the run suspends (as
LangGraph's, each ``Suspension.payload`` its ``Interrupt.value``); ``"values"``: the whole state after each step outside parallel
branches (and after each fan-out's merge); ``"custom"``: what nodes sent with
``ctx.emit`` (the ``Emitted`` events). A list of modes yields ``(mode, chunk)``
pairs. ``RunStream`` (``_stream``) asks ``chunks`` what an event becomes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from ._errors import InvalidStreamMode
from ._events import Emitted, NodeFinished, StepState, Suspended

__all__ = ["MODES", "StreamMode", "chunks", "parse_modes"]

StreamMode = Literal["events", "updates", "values", "custom"]
"""A stream mode's name."""

MODES: tuple[StreamMode, ...] = ("events", "updates", "values", "custom")


def parse_modes(mode: object) -> tuple[tuple[str, ...], bool] | None:
    """The modes asked for and whether chunks are tagged ``(mode, chunk)`` (a list
    was given); ``None`` for the plain ``"events"`` stream. ``InvalidStreamMode``
    naming a mode that does not exist."""
    if mode == "events":
        return None
    if isinstance(mode, str):
        if mode not in MODES:
            raise InvalidStreamMode(mode, MODES)
        return (mode,), False
    if not isinstance(mode, Sequence) or not mode:
        raise InvalidStreamMode(mode, MODES)
    for each in mode:
        if each not in MODES:
            raise InvalidStreamMode(each, MODES)
    return tuple(dict.fromkeys(mode)), True


def _chunk(mode: str, item: object) -> object:
    """What ``item`` (an event or a ``StepState``) is in ``mode``; ``_SKIP``: nothing."""
    if mode == "events":
        return _SKIP if type(item) is StepState else item
    if mode == "updates":
        if type(item) is not NodeFinished:
            if type(item) is Suspended:  # LangGraph's {"__interrupt__": (Interrupt, ...)}
                return {"__interrupt__": item.result.suspensions}
            return _SKIP
        return {item.node: item.update if item.updates is None else list(item.updates)}
    if mode == "values":
        return item.state.model_copy(deep=True) if type(item) is StepState else _SKIP
    return item if type(item) is Emitted else _SKIP


_SKIP: Final[object] = object()


def chunks(modes: tuple[str, ...], tagged: bool, item: object) -> list[object]:
    """What the stream yields for ``item`` in ``modes`` (maybe nothing)."""
    out: list[object] = []
    for mode in modes:
        chunk = _chunk(mode, item)
        if chunk is not _SKIP:
            out.append((mode, chunk) if tagged else chunk)
    return out
