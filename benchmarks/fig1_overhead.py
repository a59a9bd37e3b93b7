"""Figure 1: engine overhead per step without persistence.

research_fsm always checkpoints; its cheapest form, ``MemoryCheckpointStore``
(the default of ``compile()``), stands for "no persistence" against LangGraph
compiled without a checkpointer. Each batch runs ``fig1_runs`` new threads one
after the other; per step = batch wall time / (runs x node executions).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._common import (
    FigureResult,
    Row,
    Sample,
    Sizes,
    alternate,
    at_least,
    at_most,
    both,
    fmt,
    md_table,
    median,
    timed,
)
from ._floor import hand_runs_batch
from ._graphs import STEPS, build_langgraph, build_rfsm, check_final, lg_input, question_input
from ._subgraphs import subgraph_rows

TITLE = "Engine overhead per step, no persistence"
GOAL_US = 30.0
GOAL_FACTOR = 25.0  # issue 23: with each node given its own copy of the state
GOAL_FLOOR = 3.0  # issue 40: a step within 3x of the hand-written loop
SCENARIOS = ("happy", "retry")


async def _rfsm_batch(scenario: str, n: int, guarded: bool = False) -> Sample:
    app = build_rfsm(guarded=guarded)
    inputs = [question_input(scenario) for _ in range(n)]
    ids = [f"t{i}" for i in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.run(inputs[i], thread_id=ids[i])
    return sample


async def _hand_batch(scenario: str, n: int) -> Sample:
    sample, steps = await hand_runs_batch([question_input(scenario) for _ in range(n)])
    assert steps == n * STEPS[scenario], steps
    return sample


async def _lg_async_batch(app: Any, scenario: str, n: int) -> Sample:
    inputs = [lg_input(scenario) for _ in range(n)]
    with timed() as sample:
        for i in range(n):
            await app.ainvoke(inputs[i])
    return sample


def _lg_sync_batch(app: Any, scenario: str, n: int) -> Sample:
    inputs = [lg_input(scenario) for _ in range(n)]
    with timed() as sample:
        for i in range(n):
            app.invoke(inputs[i])
    return sample


async def _verify(lg: Any, lg_sync: Any) -> None:
    for scenario in SCENARIOS:
        result = await build_rfsm().run(question_input(scenario), thread_id="check")
        check_final("research_fsm", scenario, result.state.__dict__)
        if lg is not None:
            check_final("LangGraph", scenario, await lg.ainvoke(lg_input(scenario)))
            check_final("LangGraph (invoke)", scenario, lg_sync.invoke(lg_input(scenario)))


def run(sizes: Sizes, peer: bool) -> FigureResult:
    fig = FigureResult(1, TITLE)
    lg = build_langgraph() if peer else None
    lg_sync = build_langgraph(async_nodes=False) if peer else None
    asyncio.run(_verify(lg, lg_sync))
    n = sizes.fig1_runs
    variants = ["rfsm", "rfsm_guarded", "hand"] + (["lg", "lg_sync"] if peer else [])
    samples: dict[str, dict[str, list[Sample]]] = {s: {v: [] for v in variants} for s in SCENARIOS}

    def measure(variant: str, scenario: str) -> Sample:
        if variant == "rfsm":
            return asyncio.run(_rfsm_batch(scenario, n))
        if variant == "rfsm_guarded":
            return asyncio.run(_rfsm_batch(scenario, n, guarded=True))
        if variant == "hand":
            return asyncio.run(_hand_batch(scenario, n))
        if variant == "lg":
            return asyncio.run(_lg_async_batch(lg, scenario, n))
        return _lg_sync_batch(lg_sync, scenario, n)

    for scenario in SCENARIOS:  # warm-up: imports, caches, pydantic adapters
        for variant in variants:
            measure(variant, scenario)
    for rep in range(sizes.reps):
        for scenario in SCENARIOS:
            for variant in alternate(rep, *variants):
                samples[scenario][variant].append(measure(variant, scenario))

    def per_step(scenario: str, variant: str, attr: str = "wall") -> float | None:
        if variant not in samples[scenario]:
            return None
        values = [getattr(s, attr) for s in samples[scenario][variant]]
        return median(values) / (n * STEPS[scenario]) * 1e6

    labels = {
        "rfsm": "research_fsm, MemoryCheckpointStore (run)",
        "rfsm_guarded": "research_fsm + the assistant's timeout/on_error per node",
        "hand": "the loop written by hand (the floor: no copies, saves or checks)",
        "lg": "LangGraph, no checkpointer (ainvoke)",
        "lg_sync": "LangGraph, no checkpointer (invoke, sync nodes)",
    }
    table = []
    detail: dict[str, Any] = {"runs_per_batch": n, "reps": sizes.reps, "steps": {}}
    for scenario in SCENARIOS:
        ours = per_step(scenario, "rfsm")
        peer_us = per_step(scenario, "lg")
        speedup = peer_us / ours if (peer_us and ours) else None
        holds, margin = both(at_most(ours, GOAL_US), at_least(speedup, GOAL_FACTOR))
        fig.rows.append(
            Row(
                metric=f"per step, {scenario} path ({STEPS[scenario]} steps)",
                unit="µs",
                research_fsm=ours,
                langgraph=peer_us,
                goal=f"≤ {GOAL_US:.0f} µs and ≥ {GOAL_FACTOR:.0f}x faster",
                holds=holds,
                margin=margin,
            )
        )
        floor = per_step(scenario, "hand")
        ratio = ours / floor if (ours and floor) else None
        holds, margin = at_most(ratio, GOAL_FLOOR)
        fig.rows.append(
            Row(
                metric=f"per step, {scenario} path, vs the hand-written loop "
                f"({fmt(ours)} / {fmt(floor)} µs)",
                unit="x",
                research_fsm=ratio,
                goal=f"≤ {GOAL_FLOOR:.0f}x",
                holds=holds,
                margin=margin,
            )
        )
        detail["steps"][scenario] = {"vs_hand_loop": ratio}
        for variant in variants:
            wall = per_step(scenario, variant)
            cpu = per_step(scenario, variant, "cpu")
            walls = [s.wall / (n * STEPS[scenario]) * 1e6 for s in samples[scenario][variant]]
            detail["steps"][scenario][variant] = {
                "us_per_step": wall,
                "cpu_us_per_step": cpu,
                "us_per_run": None if wall is None else wall * STEPS[scenario],
                "us_per_step_all_reps": walls,
            }
            table.append(
                [
                    scenario,
                    labels[variant],
                    fmt(wall),
                    fmt(min(walls)),
                    fmt(cpu),
                    fmt(None if wall is None else wall * STEPS[scenario]),
                ]
            )
    sub_rows, detail["subgraph"], sub_table = subgraph_rows(sizes, peer)
    fig.rows.extend(sub_rows)
    fig.detail = detail
    fig.detail_md = [
        f"{n} runs per batch, {sizes.reps} repetitions, engines alternating; medians.",
        "",
        *md_table(
            ["path", "engine", "µs/step (median)", "µs/step (best)", "CPU µs/step", "µs/run"], table
        ),
        "",
        "A 3-node subgraph inside a parent (before -> child a -> b -> c -> after):",
        "",
        *sub_table,
    ]
    return fig
