"""LangGraph-shaped mistakes a fresh reader made porting from docs/langgraph.md (issue
41): each is a specific engine error whose message names this engine's way."""

from __future__ import annotations

import dataclasses
import pydoc
import re
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    EngineError,
    GraphValidationError,
    InvalidCall,
    NodeContext,
    NodeFailed,
    RunResult,
    Send,
    StaleResumeToken,
    StateGraph,
    StateMisread,
    StateSnapshot,
    Suspension,
    ThreadSuspended,
    append,
)
from research_fsm.engine._langgraph import langgraph_call


class Topics(BaseModel):
    subjects: list[str] = ["tea", "milk"]
    notes: Annotated[list[str], append] = []


async def note(state: Topics) -> dict[str, Any]:
    return {"notes": [f"on {state.subject}"]}  # type: ignore[attr-defined]


async def fine(state: Topics) -> dict[str, Any]:
    return {"notes": ["fine"]}


def each(state: Topics) -> list[Send]:
    return [Send("note", {"subject": s}) for s in state.subjects]


def one_node(name: str, fn: Any) -> Any:
    graph = StateGraph(Topics)
    graph.add_node(name, fn)
    graph.add_edge(START, name).add_edge(name, END)
    return graph.compile()


async def test_a_send_target_reading_the_item_off_the_state_names_ctx_item() -> None:
    """`state.subject` in a node reached through Send, where `subject` is no state
    field, fails naming ctx.item (a StateMisread, also an AttributeError)."""
    graph = StateGraph(Topics)
    graph.add_node("note", note).add_router(START, each, ["note"]).add_edge("note", END)
    with pytest.raises(NodeFailed) as failed:
        await graph.compile().run({}, thread_id="t")
    assert isinstance(failed.value.cause, StateMisread)
    assert isinstance(failed.value.cause, AttributeError)
    assert "ctx.item['subject']" in str(failed.value)
    assert "reached through Send" in str(failed.value)


async def test_a_missing_attribute_outside_send_keeps_its_own_error() -> None:
    """Without Send, reading a name the state lacks stays Python's AttributeError."""
    with pytest.raises(NodeFailed) as failed:
        await one_node("note", note).run({}, thread_id="t")
    assert type(failed.value.cause) is AttributeError


async def test_subscripting_the_state_names_attribute_access() -> None:
    """`state["subjects"]` fails naming `state.field` (a StateMisread, also a TypeError)."""

    async def reads(state: Topics) -> dict[str, Any]:
        return {"notes": state["subjects"]}  # type: ignore[index]

    with pytest.raises(NodeFailed) as failed:
        await one_node("reads", reads).run({}, thread_id="t")
    assert isinstance(failed.value.cause, StateMisread)
    assert isinstance(failed.value.cause, TypeError)
    assert "read a field as `state.field`" in str(failed.value)


async def test_reading_the_context_as_a_config_dict_names_ctx_thread_id() -> None:
    """`config["configurable"]` on a node's second parameter fails naming ctx.thread_id."""

    async def gather(state: Topics, config: Any) -> dict[str, Any]:
        return {"notes": [config["configurable"]["thread_id"]]}

    with pytest.raises(NodeFailed) as failed:
        await one_node("gather", gather).run({}, thread_id="t")
    assert isinstance(failed.value.cause, InvalidCall)
    assert "ctx.thread_id" in str(failed.value) and "NodeContext" in str(failed.value)
    ctx = NodeContext(thread_id="t", run_id="r", step=0, node="n")
    with pytest.raises(TypeError, match=r"ctx\.thread_id"):
        ctx["configurable"]  # type: ignore[index]
    with pytest.raises(InvalidCall, match=r"config dict \(ctx\.get\('configurable'\)\)"):
        ctx.get("configurable", {})  # type: ignore[attr-defined]


async def test_add_node_with_a_function_alone_takes_its_name() -> None:
    """`add_node(fn)` names the node `fn.__name__`, as in LangGraph."""

    async def split(state: Topics) -> dict[str, Any]:
        return {"notes": ["split"]}

    graph = StateGraph(Topics)
    graph.add_node(split).add_edge(START, "split").add_edge("split", END)
    result = await graph.compile().run({}, thread_id="t")
    assert result.path == ["split"] and result.state.notes == ["split"]


def test_add_node_with_no_function_name_names_the_two_argument_form() -> None:
    """A lambda, an object or a name alone is refused naming add_node('name', node)."""
    for bad in (lambda s: {}, object()):
        with pytest.raises(GraphValidationError, match=r"add_node\('name', node\)"):
            StateGraph(Topics).add_node(bad)
    with pytest.raises(GraphValidationError, match=r"add_node\('split', fn\)"):
        StateGraph(Topics).add_node("split")


@pytest.mark.parametrize(
    ("call", "fix"),
    [
        (lambda app: app.run({}), r"run\(input, thread_id='any-new-id'\)"),
        (lambda app: app.stream({}), r"stream\(input, thread_id='any-new-id'\)"),
        (
            lambda app: app.run({}, {"configurable": {"thread_id": "t1"}}),
            r"run\(input, thread_id='t1'\)",
        ),
        (lambda app: app.run({}, config={}, thread_id="t"), r"thread_id=\.\.\. \(and"),
        (lambda app: app.stream({}, thread_id="t", stream_mode="updates"), r"mode='updates'"),
        (lambda app: app.run({}, thread_id="t", stream_mode="values"), r"takes no mode"),
        (lambda app: app.run({}, thread_id="t", nope=1), r"it takes run\(input"),
    ],
)
async def test_langgraph_call_arguments_name_this_engines_spelling(call: Any, fix: str) -> None:
    """run/stream without thread_id, with a config dict or stream_mode= raise an
    InvalidCall (a TypeError) naming the keyword form."""
    app = one_node("gather", note)
    with pytest.raises(InvalidCall, match=fix) as raised:
        made = call(app)
        await made
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, EngineError)


def test_a_type_error_inside_a_call_that_binds_is_not_rewritten() -> None:
    """A TypeError raised inside a checked call whose arguments bind stays as it was."""

    @langgraph_call
    def run(input: object, *, thread_id: str) -> None:
        raise TypeError("from inside")

    with pytest.raises(TypeError, match="from inside") as raised:
        run({}, thread_id="t")
    assert not isinstance(raised.value, InvalidCall)
    with pytest.raises(InvalidCall, match="without thread_id"):
        run({})  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("keyword", "fix"),
    [
        ("output_schema", r"add_node\(name, child, output="),
        ("input_schema", r"add_node\(name, child, input="),
        ("context_schema", "close over what nodes need"),
    ],
)
def test_state_graph_schemas_name_the_subgraph_mapping(keyword: str, fix: str) -> None:
    """StateGraph(S, output_schema=...) and the like name add_node's input=/output=."""
    with pytest.raises(InvalidCall, match=fix):
        StateGraph(Topics, **{keyword: Topics})  # type: ignore[call-arg]


async def test_a_sync_for_over_a_stream_names_async_for() -> None:
    """`for chunk in app.stream(...)` raises an InvalidCall naming `async for`."""
    app = one_node("gather", note)
    with pytest.raises(InvalidCall, match=r"async for chunk in app\.stream"):
        for _ in app.stream({}, thread_id="t"):  # type: ignore[attr-defined]
            pass


class Booking(BaseModel):
    city: str = ""
    booked: bool = False


async def book(state: Booking) -> dict[str, Any]:
    return {"booked": True}


async def test_a_stale_token_after_update_state_names_the_snapshots_token() -> None:
    """After update_state at a pause, the old token's StaleResumeToken names the
    snapshot's suspension.token, and that token resumes."""
    graph = StateGraph(Booking)
    graph.add_node("book", book).add_edge(START, "book").add_edge("book", END)
    app = graph.compile(interrupt_before=["book"])
    first = await app.run({"city": "Oslo"}, thread_id="t")
    assert first.suspension is not None
    snapshot = await app.update_state("t", {"city": "Bergen"})
    with pytest.raises(StaleResumeToken, match=r"snapshot's suspension\.token"):
        await app.resume(first.suspension.token, None)
    assert snapshot.suspension is not None
    done = await app.resume(snapshot.suspension.token, None)
    assert done.state.booked and done.state.city == "Bergen"


async def test_thread_suspended_names_its_token_attribute() -> None:
    """New input at a pause raises ThreadSuspended whose message names `.token`."""
    graph = StateGraph(Booking)
    graph.add_node("book", book).add_edge(START, "book").add_edge("book", END)
    app = graph.compile(interrupt_before=["book"])
    await app.run({"city": "Oslo"}, thread_id="t")
    with pytest.raises(ThreadSuspended, match=r"resume\(error\.token, value\)") as raised:
        await app.run({"city": "Rome"}, thread_id="t")
    done = await app.resume(raised.value.token, None)
    assert done.status == "completed"


async def test_get_state_with_a_config_dict_names_its_thread_id() -> None:
    """get_state(config) with LangGraph's config dict names the thread id to pass."""
    app = one_node("gather", note)
    with pytest.raises(ValueError, match=r"LangGraph config dict: pass its thread id, 't9'"):
        await app.get_state({"configurable": {"thread_id": "t9"}})  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [NodeContext, RunResult, StateSnapshot, Suspension])
def test_help_describes_every_public_field(cls: type) -> None:
    """help() shows a line of text for each public field (the class docstring's
    Attributes section: attribute docstrings do not reach help())."""
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    public = [f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")]
    described = re.findall(r"^ \|\s{4,}(\w+): \S", text, re.MULTILINE)
    assert public and set(public) <= set(described), set(public) - set(described)


async def test_a_run_result_read_with_dict_methods_names_the_state() -> None:
    """`result.get(...)`, `.keys()`, `.values` (LangGraph's returned dict) name
    `result.state`; `hasattr` still answers False."""
    result = await one_node("fine", fine).run({}, thread_id="t")
    for name, fix in [
        ("get", r"model_dump\(\)\.get\(key\)"),
        ("keys", r"model_dump\(\)\.keys\(\)"),
        ("values", r"result\.state \(a model"),
    ]:
        with pytest.raises(AttributeError, match=fix):
            getattr(result, name)
    assert not hasattr(result, "nothing_like_it")


async def test_a_snapshot_read_with_langgraphs_names_names_this_engines() -> None:
    """`snapshot.values`, `.metadata`, `.tasks` name `.state`, `.origin`, `.suspensions`."""
    app = one_node("fine", fine)
    await app.run({}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    for name, fix in [
        ("values", r"here it is \.state"),
        ("metadata", r"here it is \.origin"),
        ("tasks", r"here it is \.suspensions"),
    ]:
        with pytest.raises(AttributeError, match=fix):
            getattr(snapshot, name)
    assert snapshot.state.notes == ["fine"] and not hasattr(snapshot, "nothing_like_it")
