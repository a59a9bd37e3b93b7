"""LangGraph's names that this engine spells otherwise: each points to its equivalent
in the ``AttributeError`` a migrating user meets (``StateGraph``, ``CompiledGraph``
and ``StateSnapshot`` look them up when an attribute is missing). The names that cost
nothing are aliases on ``StateGraph`` instead (``add_conditional_edges``,
``set_entry_point``, ``set_finish_point``); see docs/langgraph.md."""

from __future__ import annotations

__all__ = ["missing"]

_GRAPH = {
    "add_sequence": "add the edges one by one: add_edge(START, 'a').add_edge('a', 'b')",
    "set_conditional_entry_point": "add_router(START, fn, targets)",
    "compile_with": "compile(store=..., interrupt_before=..., interrupt_after=...)",
}

_HISTORY = (
    "async for snapshot in app.history(thread_id) (newest first), at other positions: there "
    "is no input checkpoint (LangGraph's oldest), and a pause or a question is a checkpoint "
    "of its own after its step's. Drop each snapshot that a suspended one at the same .next "
    "follows, and LangGraph's all_states[i] is states[i] (all_states[-k] is "
    "states[-k + 1]); or keep the checkpoint_id a result carries"
)

_COMPILED = {
    "invoke": "await app.run(input, thread_id=...) (a RunResult: .state, .status, "
    ".suspension); Command(resume=v) is await app.resume(token, v)",
    "ainvoke": "await app.run(input, thread_id=...) (a RunResult: .state, .status, "
    ".suspension); Command(resume=v) is await app.resume(token, v)",
    "astream": "async with app.stream(input, thread_id=..., mode='values') as events: "
    "async for chunk in events",
    "astream_events": "async with app.stream(input, thread_id=..., mode='events')",
    "batch": "asyncio.gather(*(app.run(x, thread_id=t) for x, t in ...))",
    "abatch": "asyncio.gather(*(app.run(x, thread_id=t) for x, t in ...))",
    "get_state_history": _HISTORY,
    "aget_state_history": _HISTORY,
    "aget_state": "await app.get_state(thread_id)",
    "aupdate_state": "await app.update_state(thread_id, values, as_node=...)",
    "get_graph": "app.to_mermaid()",
    "get_subgraphs": "app.subgraph(node)",
    "checkpointer": "app.store",
}


_SNAPSHOT = {
    "values": ".state (a model: .state.model_dump() for LangGraph's dict)",
    "config": "(snapshot.checkpoint_id; the thread is the one you asked about): pass "
    "checkpoint_id=... to run, get_state or fork",
    "metadata": '.origin for metadata["source"] ("run", "update", "rewind", "fork")',
    "tasks": ".suspensions (tasks[..].interrupts) and .branches (a fan-out's branches)",
    "interrupts": ".suspensions (each .payload is an Interrupt's .value)",
    "parent_config": ".parent_id",
}

_TABLES = {"StateGraph": _GRAPH, "StateSnapshot": _SNAPSHOT}


def missing(owner: str, name: str) -> AttributeError:
    """The ``AttributeError`` for ``owner.name``, naming this engine's equivalent when
    ``name`` is LangGraph's."""
    table = _TABLES.get(owner, _COMPILED)
    hint = table.get(name)
    if hint is None:
        return AttributeError(f"'{owner}' object has no attribute '{name}'")
    return AttributeError(
        f"'{owner}' object has no attribute '{name}' (LangGraph's); here it is {hint} "
        "(see docs/langgraph.md)"
    )
