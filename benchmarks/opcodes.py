"""Python bytecodes the engine executes per run, whatever the machine's load.

``python -m benchmarks.opcodes [--against CHECKOUT] [--runs N]`` counts, with
``sys.settrace`` opcode events, the bytecodes one run of figure 1's happy and retry
paths and figure 9's static fan-out and ``Send`` map (8 items) executes on a
``MemoryCheckpointStore``, after three warm-up runs. With ``--against`` the same count
is made for another checkout of the project (its own ``benchmarks`` and
``research_fsm``), side by side: what a change costs graphs that do not use it, without
the noise of timing a shared machine. Each count runs in a fresh interpreter; two counts of
the same code differ by a few bytecodes at most (random ids, caches).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

SHAPES = ("happy", "retry", "fanout", "map")
"""Figure 1's two paths, figure 9's fan-out and its ``Send`` map."""
ROOT = Path(__file__).resolve().parent.parent


def _build(shape: str) -> tuple[Any, Any]:
    from benchmarks._graphs import build_rfsm, question_input  # the checkout's own
    from benchmarks.fig9_parallel import build_rfsm_fanout, build_rfsm_map, items_of, rfsm_input

    if shape in ("happy", "retry"):
        return build_rfsm(), lambda: question_input(shape)
    if shape == "fanout":
        return build_rfsm_fanout(), rfsm_input
    return build_rfsm_map(items_of(8)), rfsm_input


async def _count(shape: str, runs: int) -> float:
    app, new_input = _build(shape)
    for i in range(3):
        await app.run(new_input(), thread_id=f"warm{i}")
    inputs = [new_input() for _ in range(runs)]
    executed = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal executed
        frame.f_trace_opcodes = True
        if event == "opcode":
            executed += 1
        return tracer

    sys.settrace(tracer)
    try:
        for i in range(runs):
            await app.run(inputs[i], thread_id=f"t{i}")
    finally:
        sys.settrace(None)
    return executed / runs


def _in_checkout(checkout: Path, shape: str, runs: int) -> float:
    """The count for ``shape`` in a fresh interpreter importing ``checkout``'s code (this
    file runs as a script there, so the other checkout needs no copy of it)."""
    done = subprocess.run(
        [sys.executable, __file__, "--one", shape, "--runs", str(runs)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return float(done.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.opcodes", description=__doc__)
    parser.add_argument("--against", type=Path, help="another checkout to count side by side")
    parser.add_argument("--runs", type=int, default=20, help="runs counted per shape (20)")
    parser.add_argument("--json", type=Path, help="also write the counts to this file")
    parser.add_argument("--one", choices=SHAPES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if args.one is not None:
        print(asyncio.run(_count(args.one, args.runs)))
        return 0
    if args.against is not None and not (args.against / "benchmarks" / "_graphs.py").is_file():
        parser.error(f"--against {args.against}: not a checkout of this project")
    rows = []
    for shape in SHAPES:
        here = _in_checkout(ROOT, shape, args.runs)
        there = None if args.against is None else _in_checkout(args.against, shape, args.runs)
        rows.append({"shape": shape, "this": here, "against": there})
    print("| shape | bytecodes per run | against | ratio |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        there = row["against"]
        ratio = "-" if there is None else f"{row['this'] / there:.3f}"
        shown = "-" if there is None else f"{there:,.0f}"
        print(f"| {row['shape']} | {row['this']:,.0f} | {shown} | {ratio} |")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
