"""Reducers and updates: how node output and input merge into the state."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    InvalidUpdate,
    NodeFailed,
    Replace,
    StateGraph,
    add,
    append,
    replace,
)


def longest(old: str, new: str) -> str:
    """A custom reducer: keep the longer string."""
    return new if len(new) > len(old) else old


class R(BaseModel):
    items: Annotated[list[str], append] = []
    last: str = ""
    explicit: Annotated[str, replace] = ""
    total: Annotated[int, add] = 0
    tally: Annotated[dict[str, int], add] = {}
    best: Annotated[str, longest] = ""


def one_node(update: Any, store: CheckpointStore) -> CompiledGraph[R]:
    async def node(state: R) -> Any:
        return update

    graph = StateGraph(R)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    return graph.compile(store=store)


async def run_update(update: Any, store: CheckpointStore, start: dict[str, Any]) -> R:
    return (await one_node(update, store).run(start, thread_id="t")).state


async def test_append_concatenates_lists(store: CheckpointStore) -> None:
    """``append`` adds a returned list to the end of the existing list."""
    state = await run_update({"items": ["b", "c"]}, store, {"items": ["a"]})
    assert state.items == ["a", "b", "c"]


async def test_append_single_item(store: CheckpointStore) -> None:
    """``append`` given one non-list item appends that item."""
    state = await run_update({"items": "b"}, store, {"items": ["a"]})
    assert state.items == ["a", "b"]


async def test_replace_is_the_default(store: CheckpointStore) -> None:
    """A field without a reducer (or with ``replace``) takes the new value."""
    state = await run_update(
        {"last": "new", "explicit": "x"}, store, {"last": "old", "explicit": "y"}
    )
    assert (state.last, state.explicit) == ("new", "x")


async def test_add_sums_numbers_and_dicts(store: CheckpointStore) -> None:
    """``add`` sums numbers, and dicts key by key."""
    state = await run_update(
        {"total": 5, "tally": {"a": 1, "b": 2}}, store, {"total": 3, "tally": {"a": 10}}
    )
    assert (state.total, state.tally) == (8, {"a": 11, "b": 2})


async def test_custom_callable_reducer(store: CheckpointStore) -> None:
    """Any ``Callable[[old, new], merged]`` in Annotated is used as the reducer."""
    assert (await run_update({"best": "ab"}, store, {"best": "longer"})).best == "longer"


async def test_custom_callable_reducer_takes_new_value(store: CheckpointStore) -> None:
    """The custom reducer gets (old, new) in that order."""
    assert (await run_update({"best": "longest!"}, store, {"best": "ab"})).best == "longest!"


async def test_replace_wrapper_bypasses_the_reducer(store: CheckpointStore) -> None:
    """``Replace(value)`` overwrites a field whatever its reducer (e.g. trims an append list)."""
    state = await run_update(
        {"items": Replace(["only"]), "total": Replace(1)}, store, {"items": ["a", "b"], "total": 5}
    )
    assert (["only"], 1) == (state.items, state.total)


async def test_replace_wrapper_value_is_validated(store: CheckpointStore) -> None:
    """A ``Replace`` value of the wrong type is an InvalidUpdate naming the field."""
    with pytest.raises(NodeFailed) as info:
        await run_update({"total": Replace("many")}, store, {})
    assert isinstance(info.value.cause, InvalidUpdate)
    assert "field `total`" in str(info.value.cause)


async def test_partial_model_update_only_touches_set_fields(store: CheckpointStore) -> None:
    """A partial model as update changes only the fields it was built with."""
    state = await run_update(R(total=2, items=["z"]), store, {"items": ["a"], "last": "keep"})
    assert (state.items, state.total, state.last) == (["a", "z"], 2, "keep")


async def test_none_update_leaves_state_unchanged(store: CheckpointStore) -> None:
    """A node returning None changes nothing, and the run still completes."""
    result = await one_node(None, store).run({"last": "x", "total": 4}, thread_id="t")
    assert (["node"], R(last="x", total=4)) == (result.path, result.state)


async def test_unknown_field_fails_the_node_naming_the_field(store: CheckpointStore) -> None:
    """An update to an unknown field is NodeFailed caused by InvalidUpdate naming it."""
    with pytest.raises(NodeFailed) as info:
        await run_update({"bogus": 1}, store, {})
    cause = info.value.cause
    assert isinstance(cause, InvalidUpdate)
    assert "node `node` updated unknown field `bogus` of `R`" in str(cause)
    assert info.value.node == "node"


async def test_wrong_type_fails_the_node_naming_the_field(store: CheckpointStore) -> None:
    """An update that does not validate is NodeFailed caused by InvalidUpdate naming the field."""
    with pytest.raises(NodeFailed) as info:
        await run_update({"last": ["not", "a", "str"]}, store, {})
    assert isinstance(info.value.cause, InvalidUpdate)
    assert "set field `last` to a value that does not fit" in str(info.value.cause)


async def test_reducer_that_cannot_merge_fails_the_node(store: CheckpointStore) -> None:
    """A reducer raising (e.g. int + list) is an InvalidUpdate naming the field, not a raw error."""
    with pytest.raises(NodeFailed) as info:
        await run_update({"total": [1]}, store, {})
    assert isinstance(info.value.cause, InvalidUpdate)
    assert "field `total`" in str(info.value.cause)


async def test_non_dict_update_fails_the_node(store: CheckpointStore) -> None:
    """Returning something that is not a dict, model, Suspend or None is InvalidUpdate."""
    with pytest.raises(NodeFailed) as info:
        await run_update("just text", store, {})
    assert isinstance(info.value.cause, InvalidUpdate)
    assert "node `node` returned str" in str(info.value.cause)


async def test_bad_first_input_type_raises_invalid_update(store: CheckpointStore) -> None:
    """A first input that does not validate raises InvalidUpdate and saves nothing."""
    compiled = one_node(None, store)
    with pytest.raises(InvalidUpdate, match="total"):
        await compiled.run({"total": "lots"}, thread_id="t")
    assert None is await compiled.get_state("t")


async def test_unknown_field_in_first_input_raises_invalid_update(store: CheckpointStore) -> None:
    """A first input with an unknown key raises InvalidUpdate naming it (never silently dropped)."""
    compiled = one_node(None, store)
    with pytest.raises(InvalidUpdate, match="unknown field `totl`"):
        await compiled.run({"totl": 1}, thread_id="t")
    assert None is await compiled.get_state("t")


async def test_first_input_may_be_a_model(store: CheckpointStore) -> None:
    """A full state model instance is accepted as first input."""
    result = await one_node(None, store).run(R(items=["a"], total=1), thread_id="t")
    assert R(items=["a"], total=1) == result.state


def test_reducer_functions_directly() -> None:
    """``append``/``add``/``replace`` behave as documented on plain values."""
    assert append([1], [2, 3]) == [1, 2, 3]
    assert append([1], 2) == [1, 2]
    assert append([1], None) == [1]
    nothing: list[int] | None = None
    assert append(nothing, [5]) == [5]
    assert add(1, 2) == 3
    assert add({"a": 1}, {"a": 2, "b": 1}) == {"a": 3, "b": 1}
    assert add(None, 4) == 4
    assert replace("old", "new") == "new"


async def test_replace_in_first_input_is_the_value() -> None:
    """``Replace(v)`` in a thread's first input sets the field to ``v``."""
    from pydantic import BaseModel

    from research_fsm.engine import END, START, Replace, StateGraph

    class Log(BaseModel):
        items: Annotated[list[str], append] = []

    async def noop(state: Log) -> None:
        return None

    graph = StateGraph(Log)
    graph.add_node("noop", noop)
    graph.add_edge(START, "noop")
    graph.add_edge("noop", END)
    app = graph.compile()
    first = await app.run({"items": Replace(["a"])}, thread_id="r")
    second = await app.run({"items": Replace(["b"])}, thread_id="r")
    assert (["a"], ["b"]) == (first.state.items, second.state.items)
