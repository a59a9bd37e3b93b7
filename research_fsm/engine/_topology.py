"""Where parallel branches meet: the fan-outs of a graph, their joins, and checks.

Worked out once by ``StateGraph.compile()``. A branch runs node after node until
the next node is its fan-out's join (or END); this module finds each static
fan-out's join, a router's join when it has none declared, and reports graphs
whose branches cannot meet.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from ._plan import NO_ITEM, Fork, NodeSpec, RouterSpec
from ._types import END

__all__ = ["Topology"]


class Topology:
    """The graph's exits with fan-outs resolved, and the problems found on the way."""

    def __init__(
        self,
        nodes: Mapping[str, NodeSpec],
        edges: Mapping[str, str],
        fanouts: Mapping[str, tuple[str, ...]],
        joins: Sequence[tuple[tuple[str, ...], str]],
        routers: Mapping[str, RouterSpec],
    ) -> None:
        self._nodes = nodes
        self._edges = edges
        self._fanouts = fanouts
        self._joins = joins
        self._join_of = {source: target for sources, target in joins for source in sources}
        self._routers = routers
        self._fork_joins: dict[str, str] = {}
        self._router_joins: dict[str, str | None] = {}
        self._busy: set[str] = set()
        self.problems: list[str] = []
        self._branch_nodes: set[str] = set()

    # -- results ---------------------------------------------------------------

    def exits(self) -> dict[str, str | Fork]:
        """Each node's unconditional exit: a node name, END, or a static ``Fork``."""
        exits: dict[str, str | Fork] = dict(self._edges)
        exits.update(self._join_of)
        for source, targets in self._fanouts.items():
            exits[source] = Fork(tuple((t, NO_ITEM) for t in targets), self.fork_join(source))
        return exits

    def router_join(self, source: str) -> str | None:
        """Where the branches a router starts meet: declared, else inferred, else None."""
        if source in self._router_joins:
            return self._router_joins[source]
        router = self._routers[source]
        if router.join is not None:
            join = None if router.join == END else router.join  # END: per-branch chains
            self._router_joins[source] = join
            return join
        if source in self._busy:
            return None
        self._busy.add(source)
        found: set[str] = set()
        for target in router.targets.values():
            if target != END:
                found |= self._walk(target, None)[0] - {END}
        self._busy.discard(source)
        join = found.pop() if len(found) == 1 else None
        if join is None and not found:  # where every branch goes, run once (LangGraph's)
            join = self._meet(router.targets.values())
        self._router_joins[source] = join
        return join

    def fork_join(self, source: str) -> str:
        """The join of the static fan-out out of ``source`` (END when none is reached)."""
        if source in self._fork_joins:
            return self._fork_joins[source]
        if source in self._busy:
            return END
        self._busy.add(source)
        found: set[str] = set()
        for target in self._fanouts[source]:
            found |= self._walk(target, None)[0] - {END}
        self._busy.discard(source)
        if len(found) > 1:
            shown = ", ".join(f"`{j}`" for j in sorted(found))
            self.problems.append(
                f"the branches of the fan-out from `{source}` meet at several joins ({shown}); "
                "make them meet at one"
            )
        join = sorted(found)[0] if found else self._meet(self._fanouts[source]) or END
        self._fork_joins[source] = join
        return join

    def _meet(self, starts: Iterable[str]) -> str | None:
        """The first node every branch from ``starts`` reaches (``None``: none, or
        only END): there LangGraph's super-steps run a node once for all of them, so
        the branches join there. Nearest by the longest of the branches' shortest
        paths to it, then the nearest in total, then by name."""
        firsts = [s for s in dict.fromkeys(starts) if s in self._nodes]
        if not firsts:
            return None
        reached = [self._distances(s) for s in firsts]
        common = set(reached[0]).intersection(*reached[1:]) - set(firsts) - {END}
        if not common:
            return None
        return min(
            common,
            key=lambda n: (max(d[n] for d in reached), sum(d[n] for d in reached), n),
        )

    def _distances(self, start: str) -> dict[str, int]:
        """Every node reachable from ``start`` by any exit, with its fewest steps."""
        seen = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            if node not in self._nodes:
                continue
            for nxt in self._successors(node):
                if nxt not in seen:
                    seen[nxt] = seen[node] + 1
                    queue.append(nxt)
        return seen

    def _successors(self, node: str) -> list[str]:
        out: list[str] = []
        if node in self._join_of:
            out.append(self._join_of[node])
        if node in self._edges:
            out.append(self._edges[node])
        out.extend(self._fanouts.get(node, ()))
        router = self._routers.get(node)
        if router is not None:
            out.extend(router.targets.values())
            if router.join is not None:
                out.append(router.join)
        on_error = self._nodes[node].on_error
        if on_error is not None:
            out.append(on_error)
        return out

    # -- checks ----------------------------------------------------------------

    def check(self) -> list[str]:
        """Every problem with fan-outs and joins, one sentence each."""
        for source, targets in self._fanouts.items():
            join = self.fork_join(source)
            for target in targets:
                self._check_branch(target, join, f"the fan-out from `{source}`")
        for source, router in self._routers.items():
            if router.join is not None and router.join not in self._nodes and router.join != END:
                self.problems.append(
                    f"router of `{source}` has join=`{router.join}`, which is not a declared node"
                )
                continue
            inferred = self.router_join(source)
            for target in dict.fromkeys(router.targets.values()):
                if target == END:
                    continue
                if router.join is not None and router.join != END:
                    self._check_branch(target, router.join, f"the router of `{source}`")
                elif inferred is not None:
                    self._branch_nodes |= self._walk(target, inferred)[1]
        for sources, target in self._joins:
            for source in sources:
                if source in self._nodes and source not in self._branch_nodes:
                    self.problems.append(
                        f"join `{target}` lists `{source}`, which no fan-out can start "
                        "(no list edge or router leads to it)"
                    )
        return self.problems

    def _check_branch(self, start: str, join: str, owner: str) -> None:
        ends, visited = self._walk(start, join)
        self._branch_nodes |= visited
        if join not in ends:
            where = "END" if join == END else f"its join `{join}`"
            self.problems.append(f"branch `{start}` of {owner} can never reach {where}")

    # -- walking ---------------------------------------------------------------

    def _walk(self, start: str, stop: str | None) -> tuple[set[str], set[str]]:
        """Follow every exit from ``start``; return where the walk ends, and the
        nodes passed. ``stop=None``: list-edge joins end the walk (inference)."""
        ends: set[str] = set()
        seen: set[str] = set()
        stack = [start]
        while stack:
            node = stack.pop()
            if node in (END, stop):
                ends.add(node)
                continue
            if node in seen or node not in self._nodes:
                continue
            seen.add(node)
            join = self._join_of.get(node)
            if join is not None:
                if stop is None:
                    ends.add(join)
                else:
                    stack.append(join)
            elif node in self._edges:
                stack.append(self._edges[node])
            elif node in self._fanouts:
                stack.append(self.fork_join(node))
            elif node in self._routers:
                stack.extend(self._routers[node].targets.values())
                router_join = self.router_join(node)
                if router_join is not None:
                    stack.append(router_join)
            on_error = self._nodes[node].on_error
            if on_error is not None:
                stack.append(on_error)
        return ends, seen
