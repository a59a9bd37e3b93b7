"""Render a compiled graph's plan as a Mermaid flowchart (``CompiledGraph.to_mermaid``)."""

from __future__ import annotations

import re

from ._plan import Fork, Plan
from ._types import END, START

__all__ = ["to_mermaid"]

_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
"""A node name used as its id: no ``__`` in it, which joins a child's ids to its node's."""


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(plan: Plan) -> str:
    """Nodes as boxes, START/END as stadiums, router branches labelled with their keys,
    ``Command`` destinations and ``on_error`` exits dotted; fan-outs and joins as thick arrows labelled
    ``parallel`` and ``join``. A subgraph node is a Mermaid ``subgraph`` block drawing
    its child graph inside (its own START and END; nested children in turn), the
    parent's edges going to and from the block."""
    return "\n".join(["flowchart TD", *_drawn(plan, "", "    ")]) + "\n"


def _drawn(plan: Plan, prefix: str, indent: str) -> list[str]:
    """The lines of ``plan``'s nodes and edges, each id after ``prefix`` (a child's
    ids are its node's id and ``__``, which no node's own id has: they never meet)."""
    ids = {START: f"{prefix}__start__", END: f"{prefix}__end__"}
    for i, name in enumerate(plan.nodes):
        own = name if _SAFE.fullmatch(name) and name not in ("end", "graph") else f"n{i}"
        ids[name] = f"{prefix}{own}"
    lines = [f'{indent}{ids[START]}(["START"])', f'{indent}{ids[END]}(["END"])']
    children = plan.children or {}
    for name in plan.nodes:
        child = children.get(name)
        if child is None:
            lines.append(f'{indent}{ids[name]}["{_label(name)}"]')
            continue
        lines.append(f'{indent}subgraph {ids[name]}["{_label(name)}"]')
        lines.append(f"{indent}    direction TB")
        lines += _drawn(child.plan, f"{ids[name]}__", indent + "    ")
        lines.append(f"{indent}end")
    joins = {source: fork.join for source, fork in plan.edges.items() if isinstance(fork, Fork)}
    # A loop's branches meeting back at their router's node is no join worth drawing.
    joins.update({s: j for s, j in plan.router_joins.items() if j is not None and j != s})
    join_nodes = set(joins.values())
    for source, target in plan.edges.items():
        if isinstance(target, Fork):
            for node, _ in target.starts:
                lines.append(f'{indent}{ids[source]} ==>|"parallel"| {ids[node]}')
        elif target in join_nodes and target != END:
            lines.append(f'{indent}{ids[source]} ==>|"join"| {ids[target]}')
        else:
            lines.append(f"{indent}{ids[source]} --> {ids[target]}")
    for source, router in plan.routers.items():
        for key, target in router.targets.items():
            if router.command:  # a Command's destinations: dashed, as LangGraph draws them
                label = (router.labels or {}).get(target)
                shown = "" if label is None else f'|"{_label(label)}"|'
                lines.append(f"{indent}{ids[source]} -.->{shown} {ids[target]}")
            else:
                lines.append(f'{indent}{ids[source]} -->|"{_label(str(key))}"| {ids[target]}')
        join = plan.router_joins.get(source)
        if join is not None and join != source:
            lines.append(f'{indent}{ids[source]} -.->|"join"| {ids[join]}')
    for name, spec in plan.nodes.items():
        if spec.on_error is not None:
            lines.append(f'{indent}{ids[name]} -.->|"error"| {ids[spec.on_error]}')
    return lines
