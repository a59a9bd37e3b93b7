"""LangGraph's builder and app names (issue 41, item 3): the ones that cost nothing
are aliases; the others fail naming this engine's equivalent."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from research_fsm.engine import END, GraphValidationError, MemoryCheckpointStore, StateGraph


class Turn(BaseModel):
    n: int = 0


async def bump(state: Turn) -> dict[str, Any]:
    return {"n": state.n + 1}


def again(state: Turn) -> Literal["bump", "__end__"]:
    return "bump" if state.n < 3 else END


def looping() -> StateGraph[Turn]:
    graph = StateGraph(Turn)
    graph.add_node("bump", bump)
    graph.set_entry_point("bump")
    return graph


async def test_set_entry_point_and_add_conditional_edges_with_a_literal_annotation() -> None:
    """`set_entry_point` is `add_edge(START, ...)`; `add_conditional_edges` without a
    path_map reads the targets from the router's `-> Literal[...]`."""
    graph = looping()
    graph.add_conditional_edges("bump", again)
    result = await graph.compile().run({}, thread_id="t")
    assert (result.state.n, result.path) == (3, ["bump"] * 3)


async def test_add_conditional_edges_with_a_path_map_and_set_finish_point() -> None:
    """`add_conditional_edges(src, fn, {key: node})` is `add_router`; `set_finish_point`
    is `add_edge(node, END)`."""
    graph = StateGraph(Turn)
    graph.add_node("bump", bump).add_node("last", bump)
    graph.set_entry_point("bump")
    graph.add_conditional_edges("bump", lambda s: s.n < 2, {True: "bump", False: "last"})
    graph.set_finish_point("last")
    result = await graph.compile().run({}, thread_id="t")
    assert result.path == ["bump", "bump", "last"]


def test_add_conditional_edges_without_targets_names_path_map() -> None:
    """A router without path_map or Literal annotation is refused naming both."""
    graph = looping()
    with pytest.raises(GraphValidationError, match=r"pass path_map=\[\.\.\.\].*Literal"):
        graph.add_conditional_edges("bump", lambda s: "bump")


def test_compile_checkpointer_names_store() -> None:
    """`compile(checkpointer=...)` is refused naming `store=` and the matching stores."""
    graph = looping().set_finish_point("bump")
    with pytest.raises(GraphValidationError, match=r"compile\(store=\.\.\.\): InMemorySaver is"):
        graph.compile(checkpointer=MemoryCheckpointStore())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "equivalent"),
    [
        ("invoke", "await app.run(input, thread_id=...)"),
        ("ainvoke", "await app.run(input, thread_id=...)"),
        ("get_state_history", "app.history(thread_id)"),
        ("astream", "app.stream(input, thread_id=..., mode='values')"),
    ],
)
def test_langgraph_app_methods_name_the_equivalent(name: str, equivalent: str) -> None:
    """`app.invoke` and friends raise AttributeError naming this engine's call."""
    app = looping().set_finish_point("bump").compile()
    with pytest.raises(AttributeError) as missing:
        getattr(app, name)
    assert f"no attribute '{name}' (LangGraph's); here it is" in str(missing.value)
    assert equivalent in str(missing.value)


@pytest.mark.parametrize(
    ("name", "equivalent"),
    [
        ("values", ".state"),
        ("config", "checkpoint_id"),
        ("metadata", '.origin for metadata["source"]'),
        ("tasks", ".suspensions"),
        ("parent_config", ".parent_id"),
    ],
)
async def test_langgraph_snapshot_fields_name_the_equivalent(name: str, equivalent: str) -> None:
    """A snapshot's `.values`, `.config`, `.metadata`... raise AttributeError naming
    this engine's field; other missing names read as usual (getattr defaults work)."""
    app = looping().set_finish_point("bump").compile()
    await app.run({}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    with pytest.raises(AttributeError) as missing:
        getattr(snapshot, name)
    assert f"'StateSnapshot' object has no attribute '{name}' (LangGraph's)" in str(missing.value)
    assert equivalent in str(missing.value)
    assert getattr(snapshot, "nope", "default") == "default"


async def test_a_result_read_as_langgraphs_dict_names_the_field() -> None:
    """`result["field"]` and `result["__interrupt__"]` (LangGraph's invoke dict) raise
    a TypeError naming `.state.field` and `.suspensions`."""
    app = looping().set_finish_point("bump").compile()
    result = await app.run({}, thread_id="t")
    with pytest.raises(TypeError, match=r"result\['n'\] is result\.state\.n "):
        result["n"]  # type: ignore[index]
    with pytest.raises(TypeError, match=r"is result\.suspensions \(each \.payload"):
        result["__interrupt__"]  # type: ignore[index]


def test_other_missing_attributes_read_as_usual() -> None:
    """A name LangGraph does not have gives Python's usual message; hasattr works."""
    app = looping().set_finish_point("bump").compile()
    with pytest.raises(AttributeError, match=r"^'CompiledGraph' object has no attribute 'nope'$"):
        app.nope  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(StateGraph(Turn), "add_sequence")


def test_langgraphs_command_arguments_name_this_engines_way() -> None:
    """``Command(resume=...)`` and ``Command(graph=...)`` fail naming ``app.resume`` and
    the parent's router; an unknown argument names the two ``Command`` takes."""
    from research_fsm.engine import Command

    with pytest.raises(TypeError, match=r"app\.resume\(token, value\)"):
        Command(resume="yes")
    with pytest.raises(TypeError, match="route in the parent"):
        Command(graph="parent", goto="a")
    with pytest.raises(TypeError, match="it takes update= and goto="):
        Command(updates={"n": 1})
    assert ({"n": 1}, "a") == (Command(update={"n": 1}, goto="a").update, "a")


def test_command_parent_names_this_engines_way() -> None:
    """Reading ``Command.PARENT`` raises an ``AttributeError`` that says a child returns
    its update to the parent, which routes (not Python's bare message)."""
    from research_fsm.engine import Command

    with pytest.raises(AttributeError, match="return the update from the child"):
        Command.PARENT  # noqa: B018
    assert not hasattr(Command(), "PARENT")
