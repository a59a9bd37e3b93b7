"""The floor: what a person gets by writing the loop by hand, over the same graphs.

Figure 1's graph (``_graphs``) and figure 9's fan-out and ``Send`` map, run without
the engine: ``await node(state)``, ``state.model_copy(update=...)`` (the messages'
append written out), the same routers. Nothing is saved, no node is given a copy of
its own, nothing is validated: the least a step can cost in this process. The
engine's cost per step is reported beside it as a ratio (figures 1, 9 and 17).
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

from ._common import Sample, timed
from ._graphs import (
    ANSWER,
    CLARITY_TARGETS,
    RESEARCH_TARGETS,
    VALIDATION_TARGETS,
    BenchState,
    _Agent,
    clarity_route,
    clarity_update,
    error_recovery_update,
    research_route,
    research_update,
    synthesis_update,
    validation_route,
    validator_update,
)

__all__ = ["hand_fanout_batch", "hand_map_batch", "hand_run", "hand_runs_batch"]

_END = "__end__"


def _agents() -> dict[str, _Agent]:
    return {
        "clarity": _Agent(clarity_update, 0.0),
        "research": _Agent(research_update, 0.0),
        "validator": _Agent(validator_update, 0.0),
        "synthesis": _Agent(lambda s: synthesis_update(s, ANSWER), 0.0),
        "error_recovery": _Agent(error_recovery_update, 0.0),
    }


_ROUTES: dict[str, tuple[Any, dict[Any, str]]] = {
    "clarity": (clarity_route, CLARITY_TARGETS),
    "research": (research_route, RESEARCH_TARGETS),
    "validator": (validation_route, VALIDATION_TARGETS),
}
_EDGES = {"synthesis": _END, "error_recovery": _END}


async def hand_run(agents: dict[str, _Agent], data: dict[str, Any]) -> tuple[BenchState, int]:
    """Figure 1's graph written by hand: the final state and the steps taken."""
    state = BenchState.model_validate(data)
    node, steps = "clarity", 0
    while node != _END:
        update = await agents[node].run(state, None)  # type: ignore[arg-type]
        steps += 1
        if "messages" in update:
            update["messages"] = [*state.messages, *update["messages"]]
        state = state.model_copy(update=update)
        routed = _ROUTES.get(node)
        if routed is None:
            node = _EDGES[node]
        else:
            pick, targets = routed
            node = targets[pick(state.__dict__)]
    return state, steps


async def hand_runs_batch(inputs: list[dict[str, Any]]) -> tuple[Sample, int]:
    """Every input run by hand, one after the other: the time and the steps taken."""
    agents = _agents()
    steps = 0
    with timed() as sample:
        for data in inputs:
            _, taken = await hand_run(agents, data)
            steps += taken
    return sample, steps


# -- figure 9's graphs ----------------------------------------------------------------


async def hand_fanout_batch(n: int, branches: tuple[str, ...]) -> Sample:
    """Figure 9's static fan-out written by hand ``n`` times: researcher, the branches
    gathered, their results appended in order, synthesizer."""
    from .fig9_parallel import ParState, _researcher, _rfsm_branch, _synthesizer

    nodes = [_rfsm_branch(name, 0.0, None) for name in branches]
    with timed() as sample:
        for _ in range(n):
            state = ParState(question="What's happening with Apple?")
            state = state.model_copy(update=await _researcher(state, None))  # type: ignore[arg-type]
            outs = await asyncio.gather(*(node(state, None) for node in nodes))
            results = [*state.results, *(r for out in outs for r in out["results"])]
            state = state.model_copy(update={"results": results})
            state = state.model_copy(update=await _synthesizer(state, None))  # type: ignore[arg-type]
    assert state.summary == f"{len(branches)} results", state.summary
    return sample


async def hand_map_batch(n: int, items: list[str]) -> Sample:
    """Figure 9's ``Send`` map written by hand ``n`` times: plan, one ``analyse`` per
    item gathered (the item as ``ctx.item``), synth."""
    from .fig9_parallel import ParState, _analyse, _researcher, _synthesizer

    contexts = [types.SimpleNamespace(item=item) for item in items]
    with timed() as sample:
        for _ in range(n):
            state = ParState(question="What's happening with Apple?")
            state = state.model_copy(update=await _researcher(state, None))  # type: ignore[arg-type]
            outs = await asyncio.gather(*(_analyse(state, ctx) for ctx in contexts))  # type: ignore[arg-type]
            results = [*state.results, *(r for out in outs for r in out["results"])]
            state = state.model_copy(update={"results": results})
            state = state.model_copy(update=await _synthesizer(state, None))  # type: ignore[arg-type]
    assert state.results == items
    return sample
