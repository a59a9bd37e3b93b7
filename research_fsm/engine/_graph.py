"""``StateGraph``: declare nodes, edges and routers; ``compile()`` validates them
(``_validate``, ``_topology``) and builds the ``Plan`` (``_plan``) that the
``CompiledGraph`` (``_compiled``) runs."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from copy import copy as shallow_copy
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel

from ._breakpoints import breakpoints
from ._command import annotated_destinations, command_router
from ._compiled import CompiledGraph
from ._errors import GraphValidationError
from ._langgraph import langgraph_call, missing
from ._memory import MemoryCheckpointStore
from ._plan import NodeCall, NodeSpec, Plan, ResumeCall, RouterSpec
from ._state import StateSchema
from ._subgraph import InputFn, OutputFn, Subgraph
from ._topology import Topology
from ._types import END, START, RetryPolicy
from ._validate import validate
from .store import CheckpointStore

__all__ = ["StateGraph"]

StateT = TypeVar("StateT", bound=BaseModel)
NodeSpecCalls = tuple[NodeCall, ResumeCall | None, bool]
_RESERVED = (START, END)


def _binds(fn: Callable[..., Any], count: int) -> bool | None:
    """Whether ``fn`` can be called with ``count`` positional arguments (``None``: its
    signature cannot be read, as for some builtins)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _parameters(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(?)"


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    return call is not None and inspect.iscoroutinefunction(call)


def _adapt_method_node(name: str, node: object, run: Callable[..., Any]) -> NodeSpecCalls:
    """A node object with ``async def run(self, state, ctx)`` (and maybe ``resume``)."""
    kind = type(node).__name__
    if not inspect.iscoroutinefunction(run) or _binds(run, 2) is False:
        raise GraphValidationError(
            [
                f"node `{name}`: `{kind}.run` must be `async def run(self, state, ctx)`, "
                f"got `run{_parameters(run)}`"
            ]
        )
    resume = getattr(node, "resume", None)
    if resume is not None and (
        not inspect.iscoroutinefunction(resume) or _binds(resume, 3) is False
    ):
        raise GraphValidationError(
            [
                f"node `{name}`: `{kind}.resume` must be `async def resume(self, state, value, "
                f"ctx)`, got `resume{_parameters(resume)}`"
            ]
        )
    return run, resume, True


def _adapt_node(name: str, node: object) -> NodeSpecCalls:
    """The node's code as ``call(state, ctx)``, its ``resume``, and whether it takes ctx;
    ``GraphValidationError`` naming the node when it cannot be called so."""
    if isinstance(node, type):
        raise GraphValidationError(
            [f"node `{name}`: pass an instance of `{node.__name__}`, not the class"]
        )
    run = getattr(node, "run", None)
    if run is not None and not inspect.isfunction(node) and callable(run):
        return _adapt_method_node(name, node, run)
    if not callable(node):
        raise GraphValidationError(
            [
                f"node `{name}` must be an async function or an object with "
                f"`async def run(self, state, ctx)`, got {type(node).__name__}"
            ]
        )
    shown = getattr(node, "__name__", type(node).__name__)
    if not _is_async(node):
        raise GraphValidationError(
            [
                f"node `{name}` must be an async function (`async def`); got a plain callable {shown!r}"
            ]
        )
    takes_ctx = _binds(node, 2)
    if takes_ctx is None or takes_ctx:
        return node, None, True
    if not _binds(node, 1):
        raise GraphValidationError(
            [
                f"node `{name}`: `{shown}{_parameters(node)}` cannot be called as "
                "`(state)` or `(state, ctx)`: give it those parameters (others need defaults)"
            ]
        )
    fn1: Callable[[Any], Awaitable[Any]] = node

    async def call_state_only(state: Any, ctx: Any) -> Any:
        return await fn1(state)

    return call_state_only, None, False


def _code_of(node: object) -> object:
    """What a node's return annotation is read from: the function, or an object's ``run``."""
    run = getattr(node, "run", None)
    if run is not None and not inspect.isfunction(node) and callable(run):
        return run
    call = getattr(node, "__call__", None)  # noqa: B004 - callable objects
    return node if inspect.isfunction(node) or call is None else call


def _literal_targets(fn: object) -> list[str] | None:
    """The node names a router's ``-> Literal["a", "b"]`` return annotation lists."""
    try:
        hint = get_type_hints(fn).get("return")
    except Exception:
        return None
    found: list[str] = []
    pending = [hint]
    while pending:
        each = pending.pop()
        if get_origin(each) is Literal:
            found += [a for a in get_args(each) if isinstance(a, str)]
        elif get_origin(each) is not None:
            pending += list(get_args(each))
    return list(dict.fromkeys(found)) or None


def _is_names(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _named(node: object) -> str:
    """The name ``add_node(node)`` gives a node passed alone: a function's
    ``__name__``; else ``GraphValidationError`` naming ``add_node(name, node)``."""
    if isinstance(node, str):
        raise GraphValidationError(
            [f"node `{node}`: no node given; add it as add_node({node!r}, fn)"]
        )
    name = getattr(node, "__name__", None)
    if not inspect.isfunction(node) or not isinstance(name, str) or name == "<lambda>":
        shown = getattr(node, "__name__", type(node).__name__)
        raise GraphValidationError(
            [
                f"add_node({shown}) without a name: only a named function (def name(...)) "
                f"names its node; give the name, add_node('name', node)"
            ]
        )
    return name


class StateGraph(Generic[StateT]):
    """A graph of async nodes over a pydantic state model.

    Example::

        graph = StateGraph(MyState)
        graph.add_node("greet", greet)
        graph.add_edge(START, "greet")
        graph.add_edge("greet", END)
        app = graph.compile()
    """

    @langgraph_call
    def __init__(self, state_model: type[StateT]) -> None:
        if not (isinstance(state_model, type) and issubclass(state_model, BaseModel)):
            raise GraphValidationError(
                [f"StateGraph needs a pydantic BaseModel subclass, got `{state_model!r}`"]
            )
        self.state_model = state_model
        self.schema = StateSchema(state_model)
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.fanouts: list[tuple[str, tuple[str, ...]]] = []
        self.joins: list[tuple[tuple[str, ...], str]] = []
        self.routers: dict[str, RouterSpec] = {}
        self.subgraphs: dict[str, Subgraph] = {}
        self.commands: dict[str, RouterSpec] = {}
        self._problems: list[str] = []

    def add_node(
        self,
        name: str | Callable[..., Any],
        node: object = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        on_error: str | None = None,
        input: InputFn | None = None,
        output: OutputFn | None = None,
        destinations: Sequence[str] | Mapping[str, str] | None = None,
    ) -> StateGraph[StateT]:
        """Add a node: an async ``(state)`` / ``(state, ctx)`` callable, an
        object with ``async def run(self, state, ctx)`` and optionally
        ``async def resume(self, state, value, ctx)``, or a ``CompiledGraph``
        (a subgraph: it runs as this one node, on a child thread of its own).

        A subgraph gets the fields its state shares with this graph's by name and
        gives back the ones it changed; ``input(parent_state)`` (the child's input)
        and ``output(child_state)`` (this graph's update) map states that differ.

        A node that returns ``Suspend`` and has no ``resume`` method is called
        again from the top on resume (with ``ctx.resume_value`` set), so it must
        be safe to re-run; give it a ``resume`` method to run its pre-suspend
        code exactly once. A ``(state)``-only node cannot suspend.

        ``destinations``: the nodes (or END) the node may go to by returning
        ``Command(goto=...)`` (a list, or a mapping of each to a label drawn on its
        edge); such a node routes by its ``Command`` only (no edge or router out of
        it), and its branches meet where a router's would.

        ``add_node(fn)``: the node is named ``fn.__name__``, as in LangGraph."""
        if node is None:
            name, node = _named(name), name
        if not isinstance(name, str) or not name:
            raise GraphValidationError([f"node name must be a non-empty str, got {name!r}"])
        if name in _RESERVED:
            raise GraphValidationError([f"node name `{name}` is reserved (START/END)"])
        if name in self.nodes:  # reported by compile() with every other problem
            self._problems.append(f"duplicate node name `{name}`")
            return self
        if timeout is not None and not timeout > 0:
            raise GraphValidationError(
                [f"node `{name}`: timeout must be > 0 seconds, got {timeout!r}"]
            )
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise GraphValidationError(
                [f"node `{name}`: retry must be a RetryPolicy, got {retry!r}"]
            )
        if destinations is None and not isinstance(node, CompiledGraph):
            code = _code_of(node)
            destinations = annotated_destinations(code)  # -> Command[Literal["a", "b"]]
        if destinations is not None:
            self._add_destinations(name, destinations)
        call: NodeCall
        resume: ResumeCall | None
        if isinstance(node, CompiledGraph):
            sub = Subgraph(name, node, self.state_model, input, output)
            self.subgraphs[name] = sub
            call, resume, takes_ctx = sub.run, sub.resume, True
        elif input is not None or output is not None:
            raise GraphValidationError(
                [
                    f"node `{name}`: `input=` and `output=` map a subgraph's state; "
                    f"`{getattr(node, '__name__', type(node).__name__)}` is not a compiled graph"
                ]
            )
        else:
            call, resume, takes_ctx = _adapt_node(name, node)
        self.nodes[name] = NodeSpec(
            name=name,
            call=call,
            resume=resume,
            takes_ctx=takes_ctx,
            retry=retry,
            timeout=timeout,
            on_error=on_error,
            schema=self.schema,
        )
        return self

    def _add_destinations(self, name: str, destinations: object) -> None:
        labels: dict[str, str] | None = None
        if isinstance(destinations, Mapping):  # node -> label, drawn on its edge
            labels = dict(destinations)
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
                raise GraphValidationError(
                    [
                        f"node `{name}`: destinations as a mapping must map node names (or "
                        f"END) to str labels, got {destinations!r:.80}"
                    ]
                )
            destinations = list(labels)
        if isinstance(destinations, str) or not _is_names(destinations):
            raise GraphValidationError(
                [
                    f"node `{name}`: destinations must be a list of node names (or END), "
                    f"or a mapping of them to labels, got {destinations!r:.80}"
                ]
            )
        assert isinstance(destinations, (list, tuple))
        if not destinations:
            raise GraphValidationError([f"node `{name}`: destinations lists no nodes"])
        if START in destinations:
            self._problems.append(f"node `{name}`: destinations name START; list nodes or END")
        targets = [d for d in dict.fromkeys(destinations) if d != START]
        self.commands[name] = RouterSpec(
            source=name,
            fn=command_router(name, targets),
            is_async=False,
            targets={d: d for d in targets},
            command=True,
            labels=labels,
        )

    def add_edge(
        self, source: str | Sequence[str], target: str | Sequence[str]
    ) -> StateGraph[StateT]:
        """Always go from ``source`` to ``target`` (``START``/``END`` allowed).

        A list as ``target`` is a fan-out: those branches start together and run
        in parallel. A list as ``source`` is a join: ``target`` runs once, after
        every listed branch has finished, with their updates merged.
        """
        if isinstance(source, str) and isinstance(target, str):
            self.edges.append((source, target))
        elif isinstance(source, str) and _is_names(target):
            self.fanouts.append((source, tuple(target)))
        elif isinstance(target, str) and _is_names(source):
            self.joins.append((tuple(source), target))
        elif _is_names(source) and _is_names(target):
            self._problems.append(
                f"edge from a list to a list ({list(source)!r} -> {list(target)!r}): "
                "join the branches into one node first"
            )
        else:
            raise GraphValidationError(
                [f"add_edge takes node names or lists of node names, got {source!r} -> {target!r}"]
            )
        return self

    def add_router(
        self,
        source: str,
        router: Callable[[Any], Any],
        targets: Sequence[str] | Mapping[Any, str],
        *,
        join: str | None = None,
    ) -> StateGraph[StateT]:
        """After ``source``, call ``router(state)`` (sync or async) and go to the
        node its key names: ``targets`` is a list of node names (the key is the
        name) or a mapping key -> node name.

        The router may also return a list: of keys (those targets run as parallel
        branches) or of ``Send(node, item)`` (``node`` runs once per item, reading
        it as ``ctx.item``). The branches meet at ``join``, which runs once after
        all of them; an empty list goes straight to ``join`` (or END)."""
        if not callable(router):
            raise GraphValidationError([f"router of `{source}` must be callable, got {router!r}"])
        if isinstance(targets, Mapping):
            mapping = dict(targets)
        elif isinstance(targets, (list, tuple)):
            mapping = {t: t for t in targets}
        else:
            raise GraphValidationError(
                [
                    f"router of `{source}`: targets must be a list of node names or a mapping, got {targets!r}"
                ]
            )
        if not mapping:
            raise GraphValidationError([f"router of `{source}` declares no targets"])
        if source in self.routers:
            self._problems.append(f"node `{source}` has two routers")
        if join is not None and not isinstance(join, str):
            raise GraphValidationError(
                [f"router of `{source}`: join must be a node name, got {join!r}"]
            )
        self.routers[source] = RouterSpec(
            source=source, fn=router, is_async=_is_async(router), targets=mapping, join=join
        )
        return self

    # -- LangGraph's names ------------------------------------------------------

    if not TYPE_CHECKING:  # LangGraph's other names, each pointing to its equivalent

        def __getattr__(self, name: str) -> Any:
            raise missing("StateGraph", name)

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[[Any], Any],
        path_map: Sequence[str] | Mapping[Any, str] | None = None,
    ) -> StateGraph[StateT]:
        """LangGraph's name for ``add_router(source, path, path_map)``. Without
        ``path_map`` the targets are read from ``path``'s return annotation
        (``-> Literal["a", "b"]``), as LangGraph does; else ``GraphValidationError``
        naming ``path_map``. Branches a list return (or ``Send``s) starts meet where
        they converge, as in LangGraph; ``add_router(..., join=...)`` says where."""
        if path_map is None:
            path_map = _literal_targets(path)
            if path_map is None:
                raise GraphValidationError(
                    [
                        f"add_conditional_edges({source!r}, ...) needs the places the router "
                        "may go, to validate and draw the graph: pass path_map=[...] (or "
                        '{key: node}), or annotate the router `-> Literal["a", "b"]`; '
                        "here it is add_router(source, fn, targets)"
                    ]
                )
        return self.add_router(source, path, path_map)

    def set_entry_point(self, node: str) -> StateGraph[StateT]:
        """LangGraph's name for ``add_edge(START, node)``."""
        return self.add_edge(START, node)

    def set_finish_point(self, node: str) -> StateGraph[StateT]:
        """LangGraph's name for ``add_edge(node, END)``."""
        return self.add_edge(node, END)

    def validate(
        self,
        *,
        store: CheckpointStore | None = None,
        subgraphs: Mapping[str, Subgraph] | None = None,
    ) -> Topology:
        """Raise ``GraphValidationError`` listing every problem, if any; else return
        the graph's fan-outs and joins worked out. ``store``: the one the graph is
        compiled with, which its subgraphs must share (``subgraphs``: them, as bound
        to it)."""
        problems = list(self._problems)
        for sub in (self.subgraphs if subgraphs is None else subgraphs).values():
            problems += sub.problems(store, self.state_model)
        problems += [
            f"node `{name}` has both destinations and a router: a node with destinations "
            "routes by the Command it returns"
            for name in self.commands
            if name in self.routers
        ]
        return validate(
            nodes=self.nodes,
            edges=self.edges,
            fanouts=self.fanouts,
            joins=self.joins,
            routers=self._all_routers(),
            problems=problems,
        )

    def _all_routers(self) -> dict[str, RouterSpec]:
        """The routers, and the destinations of nodes that return ``Command``."""
        if not self.commands:
            return self.routers
        return {**self.routers, **self.commands}

    def compile(
        self,
        *,
        store: CheckpointStore | None = None,
        step_limit: int = 50,
        max_concurrency: int | None = None,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
        checkpointer: None = None,
    ) -> CompiledGraph[StateT]:
        """Validate the graph and return a runnable ``CompiledGraph``.

        Without ``store`` a private ``MemoryCheckpointStore`` is used; added to another
        graph as a subgraph node, the graph then runs on that graph's store.
        ``step_limit`` bounds the node executions of one ``run``/``resume`` call,
        in every branch. ``max_concurrency`` caps the branch nodes of one run that
        execute at once (the rest wait their turn, in order); ``None``: no cap.
        ``interrupt_before``/``interrupt_after``: nodes every run pauses before/after
        (a breakpoint: a suspension resumed with ``None``); a call may name its own.
        """
        if checkpointer is not None:
            raise GraphValidationError(
                [
                    "compile(checkpointer=...) is LangGraph's; here it is compile(store=...): "
                    "InMemorySaver is MemoryCheckpointStore(), SqliteSaver a "
                    "JsonFileCheckpointStore(dir), PostgresSaver a PostgresCheckpointStore; "
                    f"got {type(checkpointer).__name__}"
                ]
            )
        if store is not None and not isinstance(store, CheckpointStore):
            members = (
                "saves_changes",
                "acquire",
                "load_latest",
                "save",
                "history",
                "load",
                "delete",
                "secret",
            )
            missing = [m for m in members if not hasattr(store, m)]
            raise GraphValidationError(
                [
                    f"compile(store=...) must be a CheckpointStore (MemoryCheckpointStore, "
                    f"JsonFileCheckpointStore, PostgresCheckpointStore or your own), got "
                    f"{type(store).__name__} {store!r:.60}, which lacks {', '.join(missing)}"
                ]
            )
        if isinstance(step_limit, bool) or not isinstance(step_limit, int) or step_limit < 1:
            raise GraphValidationError([f"step_limit must be an int >= 1, got {step_limit!r}"])
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise GraphValidationError(
                [f"max_concurrency must be None or an int >= 1, got {max_concurrency!r}"]
            )
        stops = breakpoints(self.nodes, interrupt_before, interrupt_after)
        routers = self._all_routers()
        given = store
        store = store or MemoryCheckpointStore()
        # A child compiled without a store runs on this graph's (as LangGraph's
        # subgraphs use the parent's checkpointer); an explicit other one is an error.
        subgraphs = {name: sub.on(store) for name, sub in self.subgraphs.items()}
        nodes = dict(self.nodes)
        for name, sub in subgraphs.items():
            if sub is not self.subgraphs[name]:
                nodes[name] = dataclasses.replace(nodes[name], call=sub.run, resume=sub.resume)
        topology = self.validate(store=store, subgraphs=subgraphs)
        plan = Plan(
            schema=self.schema,
            nodes=nodes,
            edges=topology.exits(),
            routers=dict(routers),
            router_joins={source: topology.router_join(source) for source in routers},
            origins={name: f"node `{name}`" for name in self.nodes},
            # Only stores that save a step's changes alone need them worked out.
            tracks=store.saves_changes,
            step_limit=step_limit,
            store=store,
            max_concurrency=max_concurrency,
            subgraphs=bool(subgraphs),
            children={name: sub.child for name, sub in subgraphs.items()} or None,
            breakpoints=stops,
        )
        rebind = None
        if given is None:  # as built now: a parent may compile it again on its store
            frozen = self._copy()

            def rebind(other: CheckpointStore) -> CompiledGraph[StateT]:
                return frozen.compile(
                    store=other,
                    step_limit=step_limit,
                    max_concurrency=max_concurrency,
                    interrupt_before=interrupt_before,
                    interrupt_after=interrupt_after,
                )

        return CompiledGraph(plan, self.state_model, rebind)

    def _copy(self) -> StateGraph[StateT]:
        """This builder as it is now (nodes, edges and routers added later are not in it)."""
        copy = shallow_copy(self)
        copy.nodes = dict(self.nodes)
        copy.edges = list(self.edges)
        copy.fanouts = list(self.fanouts)
        copy.joins = list(self.joins)
        copy.routers = dict(self.routers)
        copy.subgraphs = dict(self.subgraphs)
        copy.commands = dict(self.commands)
        return copy
