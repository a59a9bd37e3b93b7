"""Checking a declared graph: every problem found (unknown nodes, missing or
double exits, unreachable nodes, bad fan-outs and joins), or its topology.

``StateGraph.compile()`` (``_graph``) calls ``validate``; the walk over fan-outs and
joins is ``_topology``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import GraphValidationError
from ._plan import NodeSpec, RouterSpec
from ._topology import Topology
from ._types import END, START

__all__ = ["validate"]


def validate(
    *,
    nodes: Mapping[str, NodeSpec],
    edges: Sequence[tuple[str, str]],
    fanouts: Sequence[tuple[str, tuple[str, ...]]],
    joins: Sequence[tuple[tuple[str, ...], str]],
    routers: Mapping[str, RouterSpec],
    problems: Sequence[str],
) -> Topology:
    """Raise ``GraphValidationError`` listing every problem of the graph declared
    (``problems``: those found while it was built), if any; else return its fan-outs
    and joins worked out."""
    edges, fanouts = _plain_fanouts(edges, fanouts)
    check = _Exits(nodes, problems)
    for source, target in edges:
        check.add(source, target)
    fanned = check.add_fanouts(fanouts)
    check.add_joins(joins)
    check.add_routers(routers)
    check.check_nodes()
    found = check.problems
    found.extend(check.unreachable())
    known = check.known
    topology = Topology(
        nodes,
        {s: t for s, t in edges if s not in fanned},
        fanned,
        joins,
        {s: r for s, r in routers.items() if s in known or s == START},
    )
    if not found:  # the walk assumes every name is a node
        found.extend(topology.check())
    if found:
        raise GraphValidationError(found)
    return topology


def _plain_fanouts(
    edges: Sequence[tuple[str, str]], fanouts: Sequence[tuple[str, tuple[str, ...]]]
) -> tuple[list[tuple[str, str]], list[tuple[str, tuple[str, ...]]]]:
    """Two or more plain edges out of one node to nodes are a fan-out, as in LangGraph:
    ``add_edge("a", "b"); add_edge("a", "c")`` is ``add_edge("a", ["b", "c"])``. Kept as
    edges (an error) when one of them leads to START or END or the node has a list edge too."""
    targets: dict[str, list[str]] = {}
    for source, target in edges:
        if target not in targets.setdefault(source, []):
            targets[source].append(target)
    listed = {source for source, _ in fanouts}
    fanned = {
        source
        for source, names in targets.items()
        if len(names) > 1
        and source not in listed
        and source != END
        and not {START, END} & set(names)
    }
    if not fanned:
        return list(edges), list(fanouts)
    plain = [(s, t) for s, t in edges if s not in fanned]
    return plain, [*fanouts, *((s, tuple(targets[s])) for s in fanned)]


def _list_problems(names: Sequence[str], owner: str) -> list[str]:
    if not names:
        return [f"{owner} lists no nodes"]
    twice = sorted({n for n in names if list(names).count(n) > 1})
    return [f"{owner} lists `{n}` twice" for n in twice]


class _Exits:
    """Each node's exits as declared (edges, fan-outs, joins, routers, on_error),
    and the problems found on the way."""

    def __init__(self, nodes: Mapping[str, NodeSpec], problems: Sequence[str]) -> None:
        self.nodes = nodes
        self.problems = list(problems)
        self.known = set(nodes)
        self.exits: dict[str, list[str]] = {}

    def add(self, source: str, target: str) -> None:
        """An unconditional edge ``source`` -> ``target``."""
        problems, known, exits = self.problems, self.known, self.exits
        if source == END:
            problems.append(f"edge out of END: `{source}` -> `{target}`")
            return
        if source != START and source not in known:
            problems.append(f"edge from unknown node `{source}` (to `{target}`)")
        if target == START:
            problems.append(f"edge into START from `{source}`")
        elif target != END and target not in known:
            problems.append(f"edge from `{source}` to unknown node `{target}`")
        if source in exits:
            first = exits[source][0]
            shown = "START" if source == START else f"node `{source}`"
            names = [t for t in (first, target) if t not in (START, END)]
            both = " and ".join(t if t in (START, END) else f"`{t}`" for t in (first, target))
            both = both.replace(START, "START").replace(END, "END")
            problems.append(
                f"{shown} has two unconditional edges (to {both}): keep one, or for "
                f"parallel branches write one list edge of nodes, add_edge({source!r}, "
                f"{names!r})".replace(repr(START), "START")
            )
        exits.setdefault(source, []).append(target)

    def add_fanouts(
        self, declared: Sequence[tuple[str, tuple[str, ...]]]
    ) -> dict[str, tuple[str, ...]]:
        """The fan-outs' exits; returns the fan-outs by source."""
        problems = self.problems
        fanouts: dict[str, tuple[str, ...]] = {}
        for source, targets in declared:
            problems.extend(_list_problems(targets, f"fan-out from `{source}`"))
            nodes_only = [t for t in dict.fromkeys(targets) if t not in (START, END)]
            for target in dict.fromkeys(targets):
                if target in (START, END):
                    problems.append(f"fan-out from `{source}` names `{target}`; list nodes only")
            if nodes_only:
                self.add(source, nodes_only[0])
                for target in nodes_only[1:]:
                    if target not in self.known:
                        problems.append(f"edge from `{source}` to unknown node `{target}`")
                self.exits[source] = nodes_only
            fanouts[source] = targets
        return fanouts

    def add_joins(self, joins: Sequence[tuple[tuple[str, ...], str]]) -> None:
        """Each joined branch's exit into its join."""
        for sources, target in joins:
            self.problems.extend(_list_problems(sources, f"join into `{target}`"))
            for source in dict.fromkeys(sources):
                if source in (START, END):
                    self.problems.append(f"join into `{target}` lists `{source}`; list nodes only")
                else:
                    self.add(source, target)

    def add_routers(self, routers: Mapping[str, RouterSpec]) -> None:
        """Every target (and join) of each router."""
        problems, exits = self.problems, self.exits
        for source, spec in routers.items():
            if source == END:
                problems.append("router out of END")
            elif source != START and source not in self.known:
                problems.append(f"router on unknown node `{source}`")
            if source in exits:
                problems.append(
                    f"node `{source}` has both an edge and destinations: a node with "
                    "destinations routes by the Command it returns"
                    if spec.command
                    else f"node `{source}` has both an edge and a router"
                )
            for key, target in spec.targets.items():
                if target != END and target not in self.known:
                    problems.append(
                        f"node `{source}` lists unknown node `{target}` in its destinations"
                        if spec.command
                        else f"router of `{source}` maps key {key!r} to unknown node `{target}`"
                    )
            exits.setdefault(source, []).extend(spec.targets.values())
            if spec.join is not None:
                exits[source].append(spec.join)

    def check_nodes(self) -> None:
        """START and every node have an exit; ``on_error`` names a node (and is one)."""
        problems, exits = self.problems, self.exits
        if START not in exits:
            problems.append("START has no edge: add_edge(START, first_node)")
        for name, node in self.nodes.items():
            if name not in exits:
                problems.append(
                    f"node `{name}` has no outgoing edge or router (if it returns "
                    f"Command(goto=...), list where it may go: add_node({name!r}, ..., "
                    'destinations=[...]), or annotate it `-> Command[Literal["a", "b"]]`)'
                )
            if node.on_error is not None:
                if node.on_error in self.known:
                    exits[name] = [*exits.get(name, ()), node.on_error]
                else:
                    problems.append(
                        f"node `{name}` has on_error=`{node.on_error}`, which is not a node"
                    )

    def unreachable(self) -> list[str]:
        """A problem for each node no path of exits leads to from START."""
        reachable: set[str] = set()
        frontier = [START]
        while frontier:
            for target in self.exits.get(frontier.pop(), ()):
                if target not in reachable and target in self.known:
                    reachable.add(target)
                    frontier.append(target)
        return [
            f"node `{name}` is unreachable from START (no edge, router or destinations= "
            "leads to it)"
            for name in self.nodes
            if name not in reachable
        ]
