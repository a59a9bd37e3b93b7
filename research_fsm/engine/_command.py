"""``Command``: a node's update and where the run goes next, returned together.

A node that returns ``Command(goto=...)`` declares where it may go with
``add_node(..., destinations=[...])``. ``StateGraph`` turns the destinations into
a router spec marked ``command`` (so validation, join inference and the Mermaid
drawing treat them as a router's targets); the run loop (``_runloop``, and
``_parallel`` in branches) routes by the ``goto`` with ``command_target`` instead of
calling a router.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ._errors import InvalidCommand, InvalidUpdate
from ._plan import NO_ITEM, Fork, Plan
from ._state import StateSchema
from ._types import END, Send, Suspend

__all__ = [
    "Applied",
    "Command",
    "apply_several",
    "command_router",
    "command_target",
    "paused_target",
    "several",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """Returned by a node: apply ``update``, then go to ``goto``.

    ``goto`` is a node name (or ``END``), a list of names (they run as parallel
    branches), or ``Send(node, item)``s (one branch per item); every node named
    must be one of the node's ``destinations``. A ``Command`` without ``goto``
    is an update alone: the node's edges or router decide, as for a dict.
    """

    update: Any = None
    """The node's field changes: a dict, a partial model or ``None`` (as a node returns)."""
    goto: str | Send | Sequence[str | Send] | None = None
    """Where the run goes next (``None``: the node's edges or router decide)."""


def _names(allowed: Sequence[str]) -> str:
    return ", ".join("END" if name == END else f"`{name}`" for name in allowed) or "(none)"


def command_router(node: str, destinations: Sequence[str]) -> Callable[[Any], Any]:
    """The router function of a node with ``destinations``: called only when the
    node returned no ``goto``, which is an error."""

    def no_goto(state: Any) -> Any:
        raise InvalidCommand(
            node,
            None,
            destinations,
            "declares destinations, so it must return Command(goto=...) naming one of "
            f"them: {_names(destinations)}",
        )

    return no_goto


def command_target(plan: Plan, node: str, goto: object) -> str | Fork:
    """Where ``node``'s ``Command(goto=goto)`` leads: a node, END, or a ``Fork`` of
    branches; ``InvalidCommand`` unless every place named is a declared destination."""
    router = plan.routers.get(node)
    if router is None or not router.command:
        raise InvalidCommand(
            node,
            goto,
            [],
            f"returned Command(goto={goto!r}) but declares no destinations: "
            f"add_node({node!r}, ..., destinations=[...])",
        )
    allowed = router.targets
    if isinstance(goto, str):
        if goto in allowed:
            return goto
        raise InvalidCommand(
            node,
            goto,
            list(allowed.values()),
            f"returned Command(goto={goto!r}), which is not one of its destinations: "
            f"{_names(list(allowed.values()))}",
        )
    items = [goto] if isinstance(goto, Send) else goto
    if not isinstance(items, (list, tuple)):
        raise InvalidCommand(
            node,
            goto,
            list(allowed.values()),
            f"returned Command(goto={goto!r}); goto takes a node name, a list of names, "
            "or Send(node, item)s",
        )
    branches = [name for name in allowed.values() if name != END]
    starts: list[tuple[str, object]] = []
    for each in items:
        if isinstance(each, Send):
            name, item = each.node, each.item
        else:
            name, item = each, NO_ITEM
        if not isinstance(name, str) or name not in allowed or name == END:
            raise InvalidCommand(
                node,
                name,
                branches,
                f"returned Command(goto=[..., {each!r}, ...]); a branch starts at one of "
                f"its destinations: {_names(branches)}",
            )
        starts.append((name, item))
    join = plan.router_joins[node] or END
    return Fork(tuple(starts), join) if starts else join


def several(node: str, items: list[object]) -> tuple[list[object], object]:
    """A node's list of updates and ``Command``s: the updates in order, and the one
    ``goto`` among them (``None``: none); ``InvalidCommand`` naming the node when two
    of them have a ``goto``."""
    updates: list[object] = []
    goto: object = None
    for item in items:
        if type(item) is Command:
            if item.goto is not None:
                if goto is not None:
                    raise InvalidCommand(
                        node,
                        item.goto,
                        [],
                        f"returned a list with two gotos ({goto!r} and {item.goto!r}); "
                        "a list of updates may route once",
                    )
                goto = item.goto
            updates.append(item.update)
        else:
            updates.append(item)
    return updates, goto


def paused_target(plan: Plan, paused: str, goto: object) -> str | Fork:
    """Where ``resume(token, Command(goto=goto))`` of a pause at node ``paused`` goes:
    a node or END, or a ``Fork`` of branches (a list of names or ``Send``s) that meet
    at END; ``InvalidCommand`` naming a place that is not a node of the graph."""
    nodes = [name for name in plan.nodes]
    items = [goto] if isinstance(goto, (str, Send)) else goto
    if not isinstance(items, (list, tuple)) or not items:
        raise InvalidCommand(
            paused,
            goto,
            nodes,
            f"was resumed with Command(goto={goto!r}); goto takes a node name, END, a "
            "list of names, or Send(node, item)s",
        )
    starts: list[tuple[str, object]] = []
    for each in items:
        name, item = (each.node, each.item) if isinstance(each, Send) else (each, NO_ITEM)
        if isinstance(goto, str) and name == END:
            return END
        if not isinstance(name, str) or name not in plan.nodes:
            raise InvalidCommand(
                paused,
                name,
                nodes,
                f"was resumed with Command(goto={goto!r}), but {name!r} is not a node of "
                f"the graph: {_names(nodes)}",
            )
        starts.append((name, item))
    if isinstance(goto, str):
        return goto
    return Fork(tuple(starts), END)


@dataclass(frozen=True, slots=True)
class Applied:
    """A node's list of updates applied (``apply_several``)."""

    updates: tuple[dict[str, Any], ...]
    """Each update as a dict of field changes, in order."""
    states: tuple[BaseModel, ...]
    """The state before the first update, then after each."""
    goto: object
    """The list's one ``goto`` (``None``: the node's edges or router decide)."""

    @property
    def summary(self) -> dict[str, Any]:
        """Each field the list changed, with the last value given to it."""
        return {name: value for update in self.updates for name, value in update.items()}


def apply_several(
    schema: StateSchema,
    state: BaseModel,
    node: str,
    items: list[object],
    origin: str,
    track: dict[str, int | None] | None,
) -> Applied:
    """A node's list of updates and ``Command``s applied to ``state`` in order, each
    through the reducers (``track``: the fields changed, as ``apply`` fills it)."""
    updates, goto = several(node, items)
    applied: list[dict[str, Any]] = []
    states = [state]
    for update in updates:
        if isinstance(update, Suspend):
            raise InvalidUpdate(
                f"{origin} returned a Suspend inside a list of updates; return it alone"
            )
        changes = schema.as_changes(update, origin)
        state = schema.apply(state, changes, origin, track)
        applied.append(changes)
        states.append(state)
    return Applied(tuple(applied), tuple(states), goto)
