"""LangGraph's names that this engine spells otherwise: each points to its equivalent
in the ``AttributeError`` a migrating user meets (``StateGraph``, ``CompiledGraph``
and ``StateSnapshot`` look them up when an attribute is missing). The names that cost
nothing are aliases on ``StateGraph`` instead (``add_conditional_edges``,
``set_entry_point``, ``set_finish_point``); see docs/langgraph.md."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from ._errors import InvalidCall

__all__ = ["langgraph_call", "missing"]

P = ParamSpec("P")
R = TypeVar("R")

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

_THREAD = "every run has a thread, even with no store: give any new id for a one-off run"

_KEYWORDS = {
    "stream_mode": "stream(input, thread_id=..., mode='updates') (`async for chunk in ...`); "
    "run(...) returns the RunResult and takes no mode",
    "config": "thread_id=... (and checkpoint_id=...) keywords, not a config dict: "
    "run(input, thread_id=config['configurable']['thread_id'])",
    "output_schema": "no output_schema: a subgraph hands back only the shared fields it "
    "changed; to keep some out, add it with add_node(name, child, output=lambda s: {...})",
    "input_schema": "no input_schema: a subgraph takes the fields it shares with its "
    "parent; to map them, add it with add_node(name, child, input=lambda s: {...})",
    "context_schema": "no runtime context: close over what nodes need (a client, a setting) "
    "when you build the graph; a node's ctx has thread_id, node, step, item",
    "config_schema": "no runtime config: close over what nodes need (a client, a setting) "
    "when you build the graph; a node's ctx has thread_id, node, step, item",
    "state_schema": "StateGraph(State), the pydantic model as the first argument",
    "subgraphs": "events of a subgraph's nodes come in the same stream (mode='events'); "
    "get_state(thread_id, subgraphs=True) shows the child threads",
    "durability": "every step is saved before the next starts; a file store's durability "
    "is JsonFileCheckpointStore(durability='fsync' | 'none')",
}
"""LangGraph's keywords this engine does not take, each with its equivalent."""


def _called(fn: Callable[..., Any]) -> str:
    owner = fn.__qualname__.split(".")[0]
    return f"{owner}(...)" if fn.__name__ == "__init__" else f"{fn.__name__}(...)"


def _misfit(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The ``InvalidCall`` for arguments that do not bind to ``fn``, naming this
    engine's spelling; ``None`` when they bind (the ``TypeError`` came from inside)."""
    signature = inspect.signature(fn)
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        problem = str(exc)
    else:
        return None
    called, params = _called(fn), signature.parameters
    for name in kwargs:
        if name not in params:
            fix = _KEYWORDS.get(name)
            if fix is not None:
                return InvalidCall(f"{called} got {name}= (LangGraph's)", fix)
            return InvalidCall(
                f"{called} got an unexpected keyword argument {name!r}",
                f"it takes {fn.__name__}{_shown(signature)}",
            )
    positional = [
        p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(args) > len(positional):
        extra = args[len(positional)]
        if isinstance(extra, Mapping) and "thread_id" in params:
            thread = (extra.get("configurable") or {}).get("thread_id", "...")
            return InvalidCall(
                f"{called} got a config dict as an argument (LangGraph's invoke(input, config))",
                f"the thread is a keyword: {fn.__name__}(input, thread_id={thread!r})",
            )
        return InvalidCall(
            f"{called} takes {len(positional) - 1} positional argument(s), got {len(args) - 1}",
            f"it takes {fn.__name__}{_shown(signature)}",
        )
    if "thread_id" in params and "thread_id" not in kwargs:
        return InvalidCall(
            f"{called} without thread_id (LangGraph's config={{'configurable': "
            "{'thread_id': ...}}, or none at all without a checkpointer)",
            f"{fn.__name__}(input, thread_id='any-new-id'): {_THREAD}",
        )
    return InvalidCall(problem, f"it takes {fn.__name__}{_shown(signature)}")


def _shown(signature: inspect.Signature) -> str:
    params = [p for name, p in signature.parameters.items() if name != "self"]
    shown = signature.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return str(shown).replace("'", "")


def langgraph_call(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` raising ``InvalidCall`` naming this engine's spelling when its arguments
    do not fit (a config dict, ``stream_mode=``, no ``thread_id``): checked only
    when the call fails to bind, so a call that fits costs one frame."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except TypeError:
            problem = _misfit(fn, args, kwargs)
            if problem is None:
                raise
            raise problem from None

    return call


_RESULT = {
    "get": "result.state.<field>, or result.state.model_dump().get(key) (LangGraph's "
    "returned dict); result.suspension.payload for '__interrupt__'",
    "values": "result.state (a model; result.state.model_dump() for LangGraph's dict)",
    "keys": "result.state.model_dump().keys()",
    "items": "result.state.model_dump().items()",
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

_TABLES = {"StateGraph": _GRAPH, "StateSnapshot": _SNAPSHOT, "RunResult": _RESULT}


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
