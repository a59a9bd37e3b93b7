"""Render a compiled graph's plan as a Mermaid flowchart (``CompiledGraph.to_mermaid``)."""

from __future__ import annotations

import re

from ._plan import Fork, Plan
from ._types import END, START

__all__ = ["to_mermaid"]

_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(plan: Plan) -> str:
    """Nodes as boxes, START/END as stadiums, router branches labelled with their keys,
    ``Command`` destinations and ``on_error`` exits dotted; fan-outs and joins as thick arrows labelled
    ``parallel`` and ``join``."""
    ids = {START: "__start__", END: "__end__"}
    for i, name in enumerate(plan.nodes):
        ids[name] = name if _SAFE.fullmatch(name) and name not in ("end", "graph") else f"n{i}"
    lines = ["flowchart TD", '    __start__(["START"])', '    __end__(["END"])']
    lines += [f'    {ids[name]}["{_label(name)}"]' for name in plan.nodes]
    joins = {source: fork.join for source, fork in plan.edges.items() if isinstance(fork, Fork)}
    joins.update({s: j for s, j in plan.router_joins.items() if j is not None})
    join_nodes = set(joins.values())
    for source, target in plan.edges.items():
        if isinstance(target, Fork):
            for node, _ in target.starts:
                lines.append(f'    {ids[source]} ==>|"parallel"| {ids[node]}')
        elif target in join_nodes and target != END:
            lines.append(f'    {ids[source]} ==>|"join"| {ids[target]}')
        else:
            lines.append(f"    {ids[source]} --> {ids[target]}")
    for source, router in plan.routers.items():
        for key, target in router.targets.items():
            if router.command:  # a Command's destinations: dashed, as LangGraph draws them
                lines.append(f"    {ids[source]} -.-> {ids[target]}")
            else:
                lines.append(f'    {ids[source]} -->|"{_label(str(key))}"| {ids[target]}')
        join = plan.router_joins.get(source)
        if join is not None:
            lines.append(f'    {ids[source]} -.->|"join"| {ids[join]}')
    for name, spec in plan.nodes.items():
        if spec.on_error is not None:
            lines.append(f'    {ids[name]} -.->|"error"| {ids[spec.on_error]}')
    return "\n".join(lines) + "\n"
