"""Static breakpoints: a run pauses before or after the nodes named in
``compile(interrupt_before=..., interrupt_after=...)`` or in one call's options.

A pause is an ordinary suspension (a ``suspended`` checkpoint, a signed token) whose
saved suspension says ``breakpoint``: ``"before"`` (the checkpoint's next node is
the one paused before) or ``"after"`` (its next node is where the node routed).
``resume(token, None)`` goes on with the next node, which does not pause again.
The run loop (``_runloop``) checks ``Breakpoints`` only when a call has some, and
its ``Run`` (``_run``) saves the pause.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ._errors import GraphValidationError
from ._plan import Breakpoints

__all__ = ["breakpoints"]


def _names(value: object, option: str, nodes: Collection[str]) -> frozenset[str]:
    if value is None:
        return frozenset()
    if value == "*":  # every node, as LangGraph's "*"
        return frozenset(nodes)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise GraphValidationError(
            [f'{option} must be a list of node names or "*" (every node), got {value!r:.80}']
        )
    names = list(value)
    unknown = [name for name in names if not isinstance(name, str) or name not in nodes]
    if unknown:
        shown = ", ".join(repr(name) for name in unknown)
        raise GraphValidationError(
            [
                f"{option} names {shown}, which {'is not a node' if len(unknown) == 1 else 'are not nodes'}"
                f" of the graph; its nodes are {', '.join(f'`{n}`' for n in nodes)}"
            ]
        )
    return frozenset(names)


def breakpoints(nodes: Collection[str], before: object, after: object) -> Breakpoints | None:
    """The breakpoints named (``"*"``: every node; ``None`` when there are none);
    ``GraphValidationError`` naming each name that is not one of ``nodes``."""
    stops = Breakpoints(
        before=_names(before, "interrupt_before", nodes),
        after=_names(after, "interrupt_after", nodes),
    )
    return stops if stops.before or stops.after else None
