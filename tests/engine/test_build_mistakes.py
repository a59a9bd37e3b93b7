"""Mistakes caught when the graph is built, each with an engine error naming the culprit.

And the ones that can only show when a node runs (a signature Python cannot read)
end as a node failure: inside retries, ``on_error`` and ``NodeFailed``, never a
raw ``TypeError`` that leaves the thread ``running``.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    GraphValidationError,
    InvalidUpdate,
    MemoryCheckpointStore,
    NodeContext,
    NodeFailed,
    StateGraph,
    StateSerializationError,
)

from .helpers import Counter


def one_node(node: Any, **add: Any) -> StateGraph[Counter]:
    """START -> `a` -> END with ``node`` as `a`."""
    graph = StateGraph(Counter)
    graph.add_node("a", node, **add)
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    return graph


def build_error(build: Any) -> str:
    """The message of the GraphValidationError ``build()`` raises."""
    with pytest.raises(GraphValidationError) as info:
        build()
    return str(info.value)


def test_a_reducer_that_does_not_take_two_arguments_is_refused_when_the_graph_is_made() -> None:
    """A one-argument reducer is a GraphValidationError naming the field, the model and the reducer."""

    def keep_first(old: Any) -> Any:
        return old

    class Bad(BaseModel):
        x: Annotated[int, keep_first] = 0

    expected = (
        "field `x` of `Bad`: its reducer `keep_first(old: 'Any') -> 'Any'` must take two "
        "arguments, `reducer(old, new) -> merged`"
    )
    assert expected == build_error(lambda: StateGraph(Bad))


def test_a_three_argument_reducer_with_a_default_is_accepted() -> None:
    """A reducer whose third parameter has a default can be called as (old, new)."""

    def merge(old: Any, new: Any, scale: int = 1) -> Any:
        return new * scale

    class Fine(BaseModel):
        x: Annotated[int, merge] = 0

    assert ["x"] == list(StateGraph(Fine).schema.fields)


async def three(a: Any, b: Any, c: Any) -> None:
    """A node with one parameter too many."""


async def keyword_ctx(state: Any, *, ctx: Any) -> None:
    """A node whose ctx is keyword-only: the engine passes it by position."""


class RunWithoutCtx:
    """A node object whose ``run`` misses ``ctx``."""

    async def run(self, state: Any) -> None:
        return None


class ResumeWithoutValue:
    """A node object whose ``resume`` misses ``value``."""

    async def run(self, state: Any, ctx: NodeContext) -> None:
        return None

    async def resume(self, state: Any, ctx: NodeContext) -> None:
        return None


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (
            three,
            "node `a`: `three(a: 'Any', b: 'Any', c: 'Any') -> 'None'` cannot be called as "
            "`(state)` or `(state, ctx)`: give it those parameters (others need defaults)",
        ),
        (
            keyword_ctx,
            "node `a`: `keyword_ctx(state: 'Any', *, ctx: 'Any') -> 'None'` cannot be called "
            "as `(state)` or `(state, ctx)`: give it those parameters (others need defaults)",
        ),
        (
            RunWithoutCtx(),
            "node `a`: `RunWithoutCtx.run` must be `async def run(self, state, ctx)`, got "
            "`run(state: 'Any') -> 'None'`",
        ),
        (
            ResumeWithoutValue(),
            "node `a`: `ResumeWithoutValue.resume` must be `async def resume(self, state, value, "
            "ctx)`, got `resume(state: 'Any', ctx: 'NodeContext') -> 'None'`",
        ),
    ],
)
def test_a_node_that_cannot_be_called_as_a_node_is_refused_by_add_node(
    node: Any, expected: str
) -> None:
    """add_node refuses code that cannot take (state) / (state, ctx), saying what it got."""
    assert expected == build_error(lambda: one_node(node))


async def _noop(state: Counter) -> None:
    return None


@pytest.mark.parametrize("store", [42, "memory", object()])
def test_compile_refuses_a_store_that_is_not_a_checkpoint_store(store: Any) -> None:
    """compile(store=...) with a non-store names its type and what it lacks."""
    message = build_error(lambda: one_node(_noop).compile(store=store))
    assert message.startswith("compile(store=...) must be a CheckpointStore")
    assert f"got {type(store).__name__} " in message
    assert message.endswith(
        "which lacks saves_changes, acquire, load_latest, save, history, load, delete, secret"
    )


@pytest.mark.parametrize("option", [{"step_limit": True}, {"max_concurrency": True}])
def test_compile_refuses_a_bool_where_an_int_is_asked(option: dict[str, Any]) -> None:
    """``True`` is not a step limit or a concurrency cap (Python would take it as 1)."""
    message = build_error(lambda: one_node(_noop).compile(**option))
    assert f"got {option[next(iter(option))]!r}" in message


class LyingSignature:
    """An async callable whose declared signature says (state, ctx) but whose code takes (state)."""

    __signature__ = inspect.Signature(
        [
            inspect.Parameter("state", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ]
    )

    async def __call__(self, state: Any) -> dict[str, Any]:
        return {"n": 1}


async def test_a_node_that_cannot_be_called_at_run_time_fails_as_a_node(
    store: CheckpointStore,
) -> None:
    """A TypeError from calling the node is a NodeFailed, and the thread is saved as failed."""
    app = one_node(LyingSignature()).compile(store=store)
    with pytest.raises(NodeFailed) as info:
        await app.run({}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert ("a", TypeError, "failed") == (info.value.node, type(info.value.cause), snapshot.status)


async def test_a_node_that_cannot_be_called_goes_to_its_on_error_node(
    store: CheckpointStore,
) -> None:
    """The call's TypeError routes to ``on_error`` like any node failure."""

    async def recover(state: Counter, ctx: NodeContext) -> dict[str, Any]:
        assert ctx.error is not None
        return {"log": [f"recovered from {ctx.error.exc_type}"]}

    graph = StateGraph(Counter)
    graph.add_node("a", LyingSignature(), on_error="recover")
    graph.add_node("recover", recover)
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_edge("recover", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert ["recovered from TypeError"] == result.state.log


class Loose(BaseModel):
    """A state with an untyped field."""

    x: Any = None


def nested(depth: int) -> list[Any]:
    """A list nested ``depth`` levels deep."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def test_a_value_nested_thousands_deep_is_an_invalid_update(store: CheckpointStore) -> None:
    """A node setting an untyped field to a 5,000-deep list fails with InvalidUpdate, not RecursionError."""

    async def deep(state: Loose) -> dict[str, Any]:
        return {"x": nested(5000)}

    graph = StateGraph(Loose)
    graph.add_node("deep", deep)
    graph.add_edge(START, "deep")
    graph.add_edge("deep", END)
    with pytest.raises(NodeFailed) as info:
        await graph.compile(store=store).run({}, thread_id="t")
    assert isinstance(info.value.cause, InvalidUpdate)
    assert "field `x` to a value nested more than 200 levels deep" in str(info.value.cause)


async def test_input_nested_thousands_deep_is_an_invalid_update() -> None:
    """A run's input nested 5,000 deep in an untyped field is an InvalidUpdate naming the field."""
    graph = StateGraph(Loose)
    graph.add_node("a", _noop)
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    with pytest.raises(InvalidUpdate, match="input field `x` is nested more than 200 levels"):
        await graph.compile(store=MemoryCheckpointStore()).run({"x": nested(5000)}, thread_id="t")


async def test_a_value_nested_200_deep_round_trips(store: CheckpointStore) -> None:
    """At the limit a nested value is saved and read back equal, on every store."""

    async def deep(state: Loose) -> dict[str, Any]:
        return {"x": nested(200)}

    graph = StateGraph(Loose)
    graph.add_node("deep", deep)
    graph.add_edge(START, "deep")
    graph.add_edge("deep", END)
    app = graph.compile(store=store)
    await app.run({}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert nested(200) == snapshot.state.x


def test_saving_a_deep_value_names_its_path_instead_of_recursing() -> None:
    """The JSON check of a save reports a too-deep value as a StateSerializationError."""
    from research_fsm.stores._codec.jsonplan import model_json

    state = Loose.model_construct(x=nested(5000))
    with pytest.raises(StateSerializationError, match="nested more than 200 levels deep"):
        model_json(state, None, "deep")
