"""What a compiled graph runs: its nodes and routers as specs, and the ``Plan``.

``StateGraph`` (``_graph``) builds the specs as nodes and routers are added, and
the ``Plan`` when it compiles; the run loop (``_runloop`` and the modules under it)
reads the plan and nothing else of the graph. A ``Fork`` is where a route leads when
it starts parallel branches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ._records import NO_ITEM
from ._state import StateSchema
from ._types import RetryPolicy
from .store import CheckpointStore

__all__ = [
    "NO_ITEM",
    "Breakpoints",
    "Fork",
    "NodeCall",
    "NodeSpec",
    "Plan",
    "ResumeCall",
    "RouterSpec",
]

NodeCall = Callable[[Any, Any], Awaitable[Any]]
"""``call(state, ctx)``: a node's code."""
ResumeCall = Callable[[Any, Any, Any], Awaitable[Any]]
"""``resume(state, value, ctx)``: a node object's ``resume``."""


@dataclass(slots=True, kw_only=True)
class NodeSpec:
    """A node as the run loop sees it: normalised callables and policies."""

    name: str
    """The node's name in the graph."""
    call: NodeCall
    """``call(state, ctx)``: the node's code (a ``(state)`` node adapted)."""
    resume: ResumeCall | None
    """``resume(state, value, ctx)`` of a node object that has one."""
    takes_ctx: bool
    """Whether the node's code takes ``ctx`` (only such nodes may suspend)."""
    retry: RetryPolicy | None
    """When to call the node again after it raised."""
    timeout: float | None
    """Seconds each attempt may take."""
    on_error: str | None
    """The node the run goes to when this one fails for good."""
    schema: StateSchema
    """The graph's state fields: the node gets its own copy of the state."""


@dataclass(slots=True, kw_only=True)
class RouterSpec:
    """A conditional exit: ``fn(state)`` picks a key, ``targets`` maps it to a node."""

    source: str
    """The node (or START) the router decides after."""
    fn: Callable[[Any], Any]
    """``fn(state)``: the key (or a list of keys or ``Send``) of where to go."""
    is_async: bool
    """Whether ``fn`` returns an awaitable."""
    targets: dict[Hashable, str]
    """Each key the router may return, and the node (or END) it leads to."""
    join: str | None = None
    """Where the branches it starts meet, when declared."""
    command: bool = False
    """Whether this is a node's declared ``destinations``: it routes by the ``Command``
    the node returns, and ``fn`` only reports a node that returned none."""
    labels: dict[str, str] | None = None
    """A node's ``destinations`` given as a mapping: each destination's label, drawn
    on its edge."""


@dataclass(frozen=True, slots=True)
class Fork:
    """A fan-out about to start: its branches in order, and where they meet."""

    starts: tuple[tuple[str, object], ...]
    """``(node, item)`` per branch, in declared (or sent) order; ``item`` is
    ``NO_ITEM`` unless the branch was sent."""
    join: str
    """The node that runs after every branch is done, or END."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A compiled graph as the run loop reads it; built once by ``compile()``."""

    schema: StateSchema
    """The state's fields and reducers: how updates merge into the state."""
    nodes: dict[str, NodeSpec]
    """Every node by name."""
    edges: dict[str, str | Fork]
    """Each node's unconditional exit: a node, END, or a static fan-out."""
    routers: dict[str, RouterSpec]
    """The routers by the node (or START) they decide after."""
    router_joins: dict[str, str | None]
    """Where the branches each router starts meet (declared or inferred; ``None``: END)."""
    origins: dict[str, str]
    """How error messages name each node (``node `name```)."""
    tracks: bool
    """Whether steps work out their changes: only for stores that save them alone."""
    step_limit: int
    """The node executions one ``run``/``resume`` call may make, in every branch."""
    store: CheckpointStore
    """Where the checkpoints go."""
    max_concurrency: int | None
    """How many branch nodes of one run may execute at once (``None``: no cap)."""
    subgraphs: bool = False
    """Whether a node runs a child graph (``_subgraph``): parallel branches then key
    each node execution (``NodeContext.scope``), saved with the branch."""
    children: dict[str, Any] | None = None
    """The subgraph nodes' child graphs (``CompiledGraph``) by node name (``None``: no
    subgraph): ``delete_thread`` deletes the child threads with the parent's."""
    breakpoints: Breakpoints | None = None
    """Where runs pause by default (``compile(interrupt_before=..., interrupt_after=...)``;
    ``None``: nowhere)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakpoints:
    """The nodes a run pauses before or after (static breakpoints)."""

    before: frozenset[str]
    """Pause before each of these nodes runs."""
    after: frozenset[str]
    """Pause after each of these nodes ran (its step saved)."""
