"""Building a graph: what ``StateGraph`` accepts and every compile-time error."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    EngineError,
    GraphValidationError,
    NodeContext,
    StateGraph,
)

from .helpers import Counter, recorder

UNREACHABLE = " (no edge, router or destinations= leads to it)"


def no_exit(node: str) -> str:
    """The hint after "node `x` has no outgoing edge or router"."""
    return (
        " (if it returns Command(goto=...), list where it may go: "
        f"add_node({node!r}, ..., destinations=[...]), or annotate it "
        '`-> Command[Literal["a", "b"]]`)'
    )


def graph_with(*names: str) -> StateGraph[Counter]:
    graph = StateGraph(Counter)
    for name in names:
        graph.add_node(name, recorder(name))
    return graph


def compile_error(graph: StateGraph[Any]) -> GraphValidationError:
    with pytest.raises(GraphValidationError) as info:
        graph.compile()
    return info.value


def test_valid_graph_compiles_and_runs_nothing_at_compile_time() -> None:
    """A well-formed graph compiles into a CompiledGraph with the state model attached."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    assert Counter is graph.compile().state_model


def test_unknown_target_in_edge_is_named() -> None:
    """An edge to an undeclared node is reported with the node in backticks."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", "ghost")
    assert compile_error(graph).problems == ["edge from `a` to unknown node `ghost`"]


def test_unknown_source_in_edge_is_named() -> None:
    """An edge from an undeclared node is reported with the node in backticks."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_edge("ghost", "a")
    assert compile_error(graph).problems == ["edge from unknown node `ghost` (to `a`)"]


def test_unknown_node_in_router_targets_is_named() -> None:
    """A router target that is not a node is reported with its key and the node name."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_router("a", lambda s: "x", {"x": END, "y": "ghost"})
    assert compile_error(graph).problems == ["router of `a` maps key 'y' to unknown node `ghost`"]


def test_router_on_unknown_node_is_named() -> None:
    """A router whose source is not a node is reported."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_router("ghost", lambda s: "a", ["a"])
    assert compile_error(graph).problems == ["router on unknown node `ghost`"]


def test_unreachable_node_is_named() -> None:
    """A node that no path from START reaches is reported."""
    graph = graph_with("a", "island")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_edge("island", END)
    assert compile_error(graph).problems == [
        "node `island` is unreachable from START" + UNREACHABLE
    ]


def test_on_error_target_counts_as_reachable() -> None:
    """A node reached only as another node's on_error target is not 'unreachable'."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"), on_error="handler")
    graph.add_node("handler", recorder("handler"))
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_edge("handler", END)
    assert "handler" in graph.compile().to_mermaid()


def test_unknown_on_error_target_is_named() -> None:
    """on_error naming a node that does not exist is reported."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"), on_error="nope")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    assert compile_error(graph).problems == ["node `a` has on_error=`nope`, which is not a node"]


def test_node_without_exit_is_named() -> None:
    """A node with neither an outgoing edge nor a router is reported."""
    graph = graph_with("a", "b")
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    assert compile_error(graph).problems == [
        "node `b` has no outgoing edge or router" + no_exit("b")
    ]


def test_two_plain_edges_to_a_node_and_end_are_named_with_the_list_form() -> None:
    """Two plain edges out of one node, one of them to END, are reported with both
    targets and the list edge that makes parallel branches."""
    graph = graph_with("a", "b")
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("a", END)
    graph.add_edge("b", END)
    problems = compile_error(graph).problems
    assert problems == [
        "node `a` has two unconditional edges (to `b` and END): keep one, or for parallel "
        "branches write one list edge of nodes, add_edge('a', ['b'])"
    ]


def test_edge_and_router_on_one_node_is_reported() -> None:
    """A node with both an edge and a router is ambiguous and reported."""
    graph = graph_with("a", "b")
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_router("a", lambda s: "b", ["b"])
    graph.add_edge("b", END)
    assert compile_error(graph).problems == ["node `a` has both an edge and a router"]


def test_start_without_edge_is_reported() -> None:
    """A graph with no way out of START is reported."""
    graph = graph_with("a")
    graph.add_edge("a", END)
    problems = compile_error(graph).problems
    assert "START has no edge: add_edge(START, first_node)" in problems


def test_edge_out_of_end_is_reported() -> None:
    """An edge leaving END is reported."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    graph.add_edge(END, "a")
    assert [f"edge out of END: `{END}` -> `a`"] == compile_error(graph).problems


def test_duplicate_node_name_is_reported_at_compile() -> None:
    """Adding two nodes with one name is reported by compile(), with the name."""
    graph = graph_with("a")
    graph.add_node("a", recorder("again"))
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    assert compile_error(graph).problems == ["duplicate node name `a`"]


def test_several_problems_are_all_listed() -> None:
    """Every problem is listed, one line each, in one GraphValidationError."""
    graph = graph_with("a", "island", "dead_end")
    graph.add_node("a", recorder("dup"))
    graph.add_edge(START, "a")
    graph.add_edge("a", "ghost")
    graph.add_edge("island", END)
    error = compile_error(graph)
    expected = {
        "duplicate node name `a`",
        "edge from `a` to unknown node `ghost`",
        "node `dead_end` has no outgoing edge or router" + no_exit("dead_end"),
        "node `island` is unreachable from START" + UNREACHABLE,
        "node `dead_end` is unreachable from START" + UNREACHABLE,
    }
    assert expected == set(error.problems)
    assert str(error).startswith("5 problems in the graph:\n")
    for problem in expected:
        assert f"  - {problem}" in str(error)


def test_every_problem_names_its_culprit_in_backticks() -> None:
    """Each reported problem (bar START's) quotes the culprit in backticks."""
    graph = graph_with("a", "island")
    graph.add_edge("a", "ghost")
    graph.add_edge(END, "a")
    for problem in compile_error(graph).problems:
        if not problem.startswith("START"):
            assert re.search(r"`[^`]+`", problem), problem


def test_sync_function_node_is_rejected() -> None:
    """A plain (sync) function is refused when added, naming the node."""

    def sync_node(state: Counter) -> dict[str, Any]:
        return {}

    graph = StateGraph(Counter)
    with pytest.raises(GraphValidationError, match="node `sync` must be an async function"):
        graph.add_node("sync", sync_node)


def test_class_node_with_sync_run_is_rejected() -> None:
    """An object whose ``run`` is not ``async def`` is refused."""

    class SyncRun:
        def run(self, state: Counter, ctx: NodeContext) -> None:
            return None

    with pytest.raises(GraphValidationError, match=r"`SyncRun\.run` must be `async def run"):
        StateGraph(Counter).add_node("n", SyncRun())


def test_class_node_with_sync_resume_is_rejected() -> None:
    """An object whose ``resume`` is not ``async def`` is refused."""

    class SyncResume:
        async def run(self, state: Counter, ctx: NodeContext) -> None:
            return None

        def resume(self, state: Counter, value: Any, ctx: NodeContext) -> None:
            return None

    with pytest.raises(GraphValidationError, match=r"`SyncResume\.resume` must be `async def"):
        StateGraph(Counter).add_node("n", SyncResume())


def test_node_class_instead_of_instance_is_rejected() -> None:
    """Passing a node class rather than an instance is refused with a hint."""

    class Node:
        async def run(self, state: Counter, ctx: NodeContext) -> None:
            return None

    with pytest.raises(GraphValidationError, match="pass an instance of `Node`, not the class"):
        StateGraph(Counter).add_node("n", Node)


def test_non_callable_node_is_rejected() -> None:
    """Something that is neither a coroutine function nor a node object is refused."""
    with pytest.raises(GraphValidationError, match="node `n` must be an async function"):
        StateGraph(Counter).add_node("n", 42)


@pytest.mark.parametrize("name", [START, END, ""])
def test_reserved_or_empty_node_names_are_rejected(name: str) -> None:
    """START, END and the empty string cannot be node names."""
    with pytest.raises(GraphValidationError):
        StateGraph(Counter).add_node(name, recorder("x"))


@pytest.mark.parametrize("model", [dict, Counter(), "Counter", None])
def test_bad_state_model_is_rejected(model: Any) -> None:
    """StateGraph needs a pydantic BaseModel subclass and names what it got."""
    with pytest.raises(GraphValidationError, match=r"BaseModel subclass, got `.+`"):
        StateGraph(model)


def test_timeout_must_be_positive() -> None:
    """A zero or negative timeout is refused, naming the node."""
    with pytest.raises(GraphValidationError, match="node `a`: timeout must be > 0"):
        StateGraph(Counter).add_node("a", recorder("a"), timeout=0)


@pytest.mark.parametrize("step_limit", [0, -1, 1.5])
def test_step_limit_must_be_positive_int(step_limit: Any) -> None:
    """compile(step_limit=...) refuses anything but an int >= 1."""
    graph = graph_with("a")
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    with pytest.raises(GraphValidationError, match="step_limit"):
        graph.compile(step_limit=step_limit)


def test_router_needs_targets() -> None:
    """A router with an empty or non-list/mapping target set is refused."""
    graph = graph_with("a")
    with pytest.raises(GraphValidationError, match="declares no targets"):
        graph.add_router("a", lambda s: "x", [])
    with pytest.raises(GraphValidationError, match="targets must be a list"):
        graph.add_router("a", lambda s: "x", "a")


def test_graph_validation_error_is_a_value_error() -> None:
    """GraphValidationError is both an EngineError and a ValueError."""
    assert issubclass(GraphValidationError, EngineError)
    assert issubclass(GraphValidationError, ValueError)


def test_state_only_and_ctx_nodes_are_both_accepted() -> None:
    """``(state)`` and ``(state, ctx)`` async functions and async callables are nodes."""

    async def with_ctx(state: Counter, ctx: NodeContext) -> None:
        return None

    class Callable_:
        async def __call__(self, state: Counter) -> None:
            return None

    class Model(BaseModel):
        x: int = 0

    graph = StateGraph(Model)
    graph.add_node("a", with_ctx)
    graph.add_node("b", Callable_())
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", END)
    assert list(graph.nodes) == ["a", "b"]
    assert [spec.takes_ctx for spec in graph.nodes.values()] == [True, False]
