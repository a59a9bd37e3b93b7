"""``add_messages``, ``MessagesState``, ``ToolNode`` and ``tools_condition`` without a
model: merging by id in both dict shapes, tools run at once, errors as results."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    GraphValidationError,
    InvalidUpdate,
    NodeContext,
    NodeFailed,
    StateGraph,
)
from research_fsm.prebuilt import (
    REMOVE_ALL_MESSAGES,
    MessagesState,
    ToolNode,
    add_messages,
    create_react_agent,
    remove_message,
    to_anthropic,
    tools_condition,
)


def test_new_messages_are_appended_with_ids() -> None:
    """Messages without ids get distinct ids and are appended, one message or a list."""
    merged = add_messages(
        [{"role": "user", "content": "hi"}], {"role": "assistant", "content": "yo"}
    )
    merged = add_messages(merged, [{"type": "human", "content": "again"}])
    assert [m["content"] for m in merged] == ["hi", "yo", "again"]
    assert len({m["id"] for m in merged}) == 3


def test_a_known_id_replaces_in_place_and_remove_removes() -> None:
    """An update with a known id replaces that message where it stands; a remove
    message takes it out; removing an unknown id is an error."""
    start = [
        {"role": "user", "content": "a", "id": "1"},
        {"role": "assistant", "content": "b", "id": "2"},
        {"role": "user", "content": "c", "id": "3"},
    ]
    replaced = add_messages(start, {"role": "assistant", "content": "B", "id": "2"})
    assert [(m["id"], m["content"]) for m in replaced] == [("1", "a"), ("2", "B"), ("3", "c")]
    removed = add_messages(replaced, [remove_message("1")])
    assert [m["id"] for m in removed] == ["2", "3"]
    with pytest.raises(ValueError, match="cannot remove message 'nope'"):
        add_messages(removed, remove_message("nope"))
    cleared = add_messages(removed, [remove_message(REMOVE_ALL_MESSAGES), "fresh"])
    assert [m["content"] for m in cleared] == ["fresh"]
    assert start[1]["content"] == "b"  # the old list is untouched


def test_strings_and_pairs_are_messages_and_bad_ones_are_named() -> None:
    """A str is a user message, ("ai", text) an assistant one; a dict without role
    or type is refused naming both."""
    merged = add_messages([], ["hello", ("ai", "hi"), ("system", "be brief")])
    assert [(m["role"], m["type"]) for m in merged] == [
        ("user", "human"),
        ("assistant", "ai"),
        ("system", "system"),
    ]
    with pytest.raises(ValueError, match=r"needs `role` .* or `type`"):
        add_messages([], {"content": "x"})


def test_every_input_shape_comes_out_in_one_shape() -> None:
    """Pairs, Anthropic `role` dicts and LangGraph `type` dicts all come out with both
    keys, agreeing (LangGraph's types system, human for the reader's example)."""
    merged = add_messages([], [("system", "s"), ("user", "u")])
    assert [(m["type"], m["role"]) for m in merged] == [("system", "system"), ("human", "user")]
    given = [
        {"role": "user", "content": "a"},
        {"type": "human", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"type": "ai", "content": "d"},
        {"type": "tool", "content": "e", "tool_call_id": "t"},
    ]
    merged = add_messages(merged, given)
    assert [(m["type"], m["role"]) for m in merged[2:]] == [
        ("human", "user"),
        ("human", "user"),
        ("ai", "assistant"),
        ("ai", "assistant"),
        ("tool", "tool"),
    ]
    assert all(set(m) >= {"type", "role", "content", "id"} for m in merged)
    assert "type" not in given[0]  # the caller's dicts are not changed


def test_a_message_whose_type_and_role_disagree_is_refused() -> None:
    """`{"type": "ai", "role": "user"}` and an unknown role are errors naming the values."""
    with pytest.raises(ValueError, match="type 'ai' and role 'user' disagree"):
        add_messages([], {"type": "ai", "role": "user", "content": "x"})
    with pytest.raises(ValueError, match="message role 'bot': expected one of"):
        add_messages([], {"role": "bot", "content": "x"})


def test_normalised_messages_still_make_an_anthropic_request() -> None:
    """Messages in the normal form (both keys) convert to the Messages API's shape:
    system apart, tool messages as tool_result blocks, each tool call once."""
    call = {"id": "c1", "name": "add", "args": {"a": 1}}
    use = {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}}
    merged = add_messages(
        [],
        [
            ("system", "be brief"),
            ("user", "sum"),
            {"type": "ai", "content": [use], "tool_calls": [call]},
            {"type": "tool", "content": "2", "tool_call_id": "c1", "status": "success"},
        ],
    )
    system, api = to_anthropic(merged)
    assert system == "be brief"
    assert api == [
        {"role": "user", "content": "sum"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "2"}]},
    ]


async def test_messages_state_merges_the_first_input_by_id_too() -> None:
    """The first input's messages get ids, so a later update by id replaces one."""

    async def fix(state: MessagesState) -> dict[str, Any]:
        first = state.messages[0]
        return {"messages": [{**first, "content": "fixed"}]}

    graph = StateGraph(MessagesState).add_node("fix", fix)
    graph.add_edge(START, "fix").add_edge("fix", END)
    result = await graph.compile().run({"messages": ["typo", "more"]}, thread_id="t")
    assert [m["content"] for m in result.state.messages] == ["fixed", "more"]


async def test_a_bad_message_in_an_update_fails_the_node_naming_the_keys() -> None:
    """A node returning a message the reducer cannot read fails with NodeFailed whose
    cause is InvalidUpdate naming the field and the keys a message needs."""

    async def bad(state: MessagesState) -> dict[str, Any]:
        return {"messages": [{"text": "no role"}]}

    graph = StateGraph(MessagesState).add_node("bad", bad)
    graph.add_edge(START, "bad").add_edge("bad", END)
    with pytest.raises(NodeFailed) as failed:
        await graph.compile().run({"messages": ["x"]}, thread_id="t")
    assert isinstance(failed.value.cause, InvalidUpdate)
    assert "field `messages`" in str(failed.value.cause)
    assert "needs `role` (Anthropic: user, assistant) or `type`" in str(failed.value.cause)


def test_langgraph_shaped_messages_convert_to_the_messages_api() -> None:
    """System messages become the system text; an ai message's tool_calls become
    tool_use blocks and tool messages tool_result blocks in one user message."""
    system, messages = to_anthropic(
        [
            {"type": "system", "content": "be brief"},
            {"type": "human", "content": "sum"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}],
            },
            {"type": "tool", "content": "2", "tool_call_id": "c1"},
            {"type": "tool", "content": "boom", "tool_call_id": "c2", "status": "error"},
        ]
    )
    assert system == "be brief"
    assert messages == [
        {"role": "user", "content": "sum"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "2"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": True},
            ],
        },
    ]


CTX = NodeContext(thread_id="t", run_id="r", step=0, node="tools")


async def slow_double(x: int) -> int:
    """Twice x, slowly."""
    await asyncio.sleep(0.2)
    return 2 * x


def broken(x: int) -> int:
    """Always fails."""
    raise RuntimeError(f"no {x}")


def assistant_calling(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return {"role": "assistant", "content": blocks, "id": "a1"}


async def test_the_tool_node_runs_calls_at_once_and_returns_errors_as_results() -> None:
    """Two slow calls take one call's time; a raising tool, an unknown tool and bad
    arguments come back as tool_result blocks with is_error, in call order."""
    node = ToolNode([slow_double, broken])
    state = MessagesState(
        messages=[
            assistant_calling(
                ("t1", "slow_double", {"x": 1}),
                ("t2", "slow_double", {"x": 2}),
                ("t3", "broken", {"x": 3}),
                ("t4", "missing", {}),
                ("t5", "slow_double", {"x": "many"}),
            )
        ]
    )
    started = time.monotonic()
    update = await node.run(state, CTX)
    elapsed = time.monotonic() - started
    assert elapsed < 0.6  # three slow calls, run one after another, take 0.6 s
    [reply] = update["messages"]
    assert reply["role"] == "user"
    results = reply["content"]
    assert [(r["tool_use_id"], r["content"], r.get("is_error", False)) for r in results[:3]] == [
        ("t1", "2", False),
        ("t2", "4", False),
        ("t3", "Error: RuntimeError: no 3", True),
    ]
    assert results[3]["is_error"] and "no tool `missing`" in results[3]["content"]
    assert "slow_double, broken" in results[3]["content"]
    assert (
        results[4]["is_error"]
        and "arguments of `slow_double` do not fit: x" in results[4]["content"]
    )


async def test_langgraph_shaped_tool_calls_get_tool_messages() -> None:
    """An ai message with tool_calls gets one tool message per call, with status
    "success" or "error" as LangGraph's."""
    node = ToolNode([slow_double, broken])
    ai = {
        "type": "ai",
        "content": "",
        "tool_calls": [
            {"id": "c1", "name": "slow_double", "args": {"x": 5}},
            {"id": "c2", "name": "broken", "args": {"x": 1}},
        ],
    }
    update = await node.run(MessagesState(messages=[ai]), CTX)
    assert [
        (m["type"], m["tool_call_id"], m["content"], m.get("status")) for m in update["messages"]
    ] == [
        ("tool", "c1", "10", "success"),
        ("tool", "c2", "Error: RuntimeError: no 1", "error"),
    ]


def test_tools_condition_routes_to_tools_only_while_there_are_calls() -> None:
    """`tools` after an assistant message with tool calls; END after plain text or a
    user message."""
    calling = MessagesState(messages=[assistant_calling(("t", "x", {}))])
    talking = MessagesState(messages=[{"role": "assistant", "content": "done", "id": "z"}])
    asking = MessagesState(messages=[{"role": "user", "content": "?", "id": "u"}])
    assert [tools_condition(s) for s in (calling, talking, asking)] == ["tools", END, END]
    assert (
        tools_condition(
            {"messages": [{"type": "ai", "content": "", "tool_calls": [{"id": "1", "name": "x"}]}]}
        )
        == "tools"
    )


def test_the_tool_spec_reads_the_signature_and_docstring() -> None:
    """A tool's spec has its name, the docstring's first paragraph, and its typed
    parameters as a JSON schema."""
    [spec] = ToolNode([slow_double]).specs()
    assert spec["name"] == "slow_double"
    assert spec["description"] == "Twice x, slowly."
    assert spec["input_schema"]["properties"]["x"]["type"] == "integer"
    assert spec["input_schema"]["required"] == ["x"]


def test_create_react_agent_refuses_a_model_name_when_built() -> None:
    """A LangGraph model string (or any object without async converse) is refused by
    create_react_agent itself, naming what a model must be."""
    for model in ("anthropic:claude-3-5-sonnet-latest", object()):
        with pytest.raises(GraphValidationError, match=r"async def converse\(\*, agent"):
            create_react_agent(model, [slow_double])  # type: ignore[arg-type]
