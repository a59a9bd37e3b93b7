"""Benchmarks: research_fsm side by side with LangGraph.

``python -m benchmarks`` runs every figure of the benchmark issue (1-8), prints
one Markdown table plus per-figure detail and writes JSON
(``benchmarks/results/latest.json`` by default). ``--quick`` uses tiny sizes
(a CI smoke run), ``--only 1,4`` picks figures, ``--out`` sets the JSON path.

The peer (``pip install -e '.[bench]'``: langgraph, langgraph-checkpoint-sqlite)
is optional: without it the LangGraph columns say "n/a".

Modules: ``_common`` (sizes, timing, rows, formatting), ``_graphs`` (the same
no-op graph in both engines), ``fig1_overhead`` ... ``fig8_directory`` (one per
figure), ``profile`` (cProfile of our hot paths: ``python -m benchmarks.profile``).
"""

from __future__ import annotations

__all__: list[str] = []
