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
from typing import Any, Generic, Literal, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypeVar

from ._errors import InvalidCommand, InvalidUpdate
from ._plan import NO_ITEM, Fork, Plan
from ._state import StateSchema
from ._types import END, Send, Suspend

__all__ = [
    "Applied",
    "Command",
    "annotated_destinations",
    "apply_several",
    "command_router",
    "command_target",
    "paused_target",
    "several",
]


_LANGGRAPH_ARGUMENTS = {
    "resume": "a pause is resumed with await app.resume(token, value), where the value "
    "may itself be Command(update=..., goto=...)",
    "graph": "a subgraph cannot route its parent (Command.PARENT): return the update "
    "from the child, which reaches the parent through the parent's reducers, and "
    "route in the parent with add_router or destinations=",
}


def _langgraph_argument(name: str) -> TypeError:
    """The ``TypeError`` for ``Command(name=...)``, naming this engine's way when the
    argument is LangGraph's."""
    hint = _LANGGRAPH_ARGUMENTS.get(name)
    if hint is None:
        return TypeError(
            f"Command() got an unexpected keyword argument {name!r}; it takes update= and goto="
        )
    return TypeError(f"Command({name}=...) is LangGraph's; here {hint} (see docs/langgraph.md)")


class _LangGraphOnly:
    """A class attribute LangGraph has and this engine does not: reading it raises an
    ``AttributeError`` that names this engine's way."""

    def __init__(self, hint: str) -> None:
        self._hint = hint

    def __get__(self, instance: object, owner: type[object] | None = None) -> Any:
        raise AttributeError(self._hint)


GotoT = TypeVar("GotoT", default=str)
"""The places a ``Command`` may go (``Command[Literal["a", "b"]]``); bare, any node."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command(Generic[GotoT]):
    """Returned by a node: apply ``update``, then go to ``goto``.

    A node annotated ``-> Command[Literal["a", "b"]]`` declares its destinations
    by that annotation, as in LangGraph (``destinations=`` is then not needed).

    ``goto`` is a node name (or ``END``), a list of names (they run as parallel
    branches), or ``Send(node, item)``s (one branch per item); every node named
    must be one of the node's ``destinations``. A ``Command`` without ``goto``
    is an update alone: the node's edges or router decide, as for a dict.
    """

    update: Any = None
    """The node's field changes: a dict, a partial model or ``None`` (as a node returns)."""
    goto: str | Send | Sequence[str | Send] | None = None
    """Where the run goes next (``None``: the node's edges or router decide)."""

    def __init__(
        self,
        *,
        update: Any = None,
        goto: str | Send | Sequence[str | Send] | None = None,
        **langgraph: object,
    ) -> None:
        if langgraph:  # Command(resume=...), Command(graph=Command.PARENT): LangGraph's
            raise _langgraph_argument(next(iter(langgraph)))
        object.__setattr__(self, "update", update)
        object.__setattr__(self, "goto", goto)

    PARENT = _LangGraphOnly(
        "Command.PARENT (LangGraph's) has no counterpart: a subgraph cannot route its "
        "parent; return the update from the child (it reaches the parent through the "
        "parent's reducers) and route in the parent with add_router or destinations= "
        "(see docs/langgraph.md)"
    )


def annotated_destinations(fn: object) -> list[str] | None:
    """The destinations a node's return annotation ``Command[Literal["a", "b"]]``
    names (``None``: it has no such annotation, or it cannot be read)."""
    try:
        hints = get_type_hints(fn)
    except Exception:
        return None
    found: list[str] = []
    pending = [hints.get("return")]
    while pending:
        hint = pending.pop(0)
        origin = get_origin(hint)
        if origin is Command:
            for arg in get_args(hint):
                pending.append(arg)
        elif origin is Literal:
            found += [a for a in get_args(hint) if isinstance(a, str)]
        elif origin is not None:  # a Union: its Command[...] members
            pending += [a for a in get_args(hint) if get_origin(a) is Command]
    return list(dict.fromkeys(found)) or None


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
