"""The floor: what a person gets by writing the loop by hand, over the same graphs.

Figure 1's graph (``_graphs``) run without the engine: ``await node(state)``,
``state.model_copy(update=...)`` (the messages' append written out), the same routers
(figure 9's fan-out and ``Send`` map written by hand live in ``fig9_parallel``). Nothing is saved, no node is given a copy of
its own, nothing is validated: the least a step can cost in this process. The
engine's cost per step is reported beside it as a ratio (figures 1, 9 and 17).
"""

from __future__ import annotations

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

__all__ = ["hand_run", "hand_runs_batch"]

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
