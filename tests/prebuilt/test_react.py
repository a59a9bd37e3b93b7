"""``create_react_agent`` end to end against the local Anthropic stand-in: a task
that needs three tools, a breakpoint before each tool run, a tool call edited at
the pause, and the run resumed in a new process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.servers.anthropic import FakeAnthropic, message, text, tool_use

from .react_app import build

ROOT = Path(__file__).resolve().parents[2]


def script(server: FakeAnthropic) -> None:
    server.enqueue(
        message(
            [
                {"type": "text", "text": "Pricing each fruit."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "price",
                    "input": {"item": "apple", "count": 2},
                },
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "price",
                    "input": {"item": "pear", "count": 3},
                },
            ],
            stop_reason="tool_use",
        ),
        tool_use("total", {"amounts": [1.0, 2.5]}, id="t3"),  # wrong: edited at the pause
        tool_use("to_eur", {"usd": 3.25}, id="t4"),
        text("2 apples and 3 pears cost 2.93 EUR."),
    )


def tool_results(server: FakeAnthropic) -> list[tuple[str, str]]:
    """Each tool_result the model was sent last, as (id, content)."""
    last = server.requests[-1].body["messages"]
    return [
        (block["tool_use_id"], block["content"])
        for m in last
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]


async def test_react_agent_pauses_takes_an_edited_call_and_resumes_in_a_new_process(
    anthropic_server: FakeAnthropic, tmp_path: Path
) -> None:
    """Three tools, four model turns: the run pauses before each tool run; at the
    second pause the `total` call is edited (same message id, replaced), and a new
    process resumes it from the file store to the final answer in EUR."""
    script(anthropic_server)
    agent, llm = build(str(tmp_path), anthropic_server.url)
    try:
        first = await agent.run(
            {"messages": ["What do 2 apples and 3 pears cost in EUR?"]}, thread_id="shop"
        )
        assert first.status == "suspended" and first.suspension is not None
        assert first.path == ["agent"]
        second = await agent.resume(first.suspension.token, None)
        assert second.status == "suspended" and second.suspension is not None
        assert second.path == ["tools", "agent"]
        assert tool_results(anthropic_server) == [("t1", "1.0"), ("t2", "2.25")]
    finally:
        await llm.aclose()
    call = second.state.messages[-1]
    assert call["content"][0]["input"] == {"amounts": [1.0, 2.5]}
    edited = {**call, "content": [{**call["content"][0], "input": {"amounts": [1.0, 2.25]}}]}
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.prebuilt.react_app",
            str(tmp_path),
            anthropic_server.url,
            str(second.suspension.token),
            json.dumps(edited),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert child.returncode == 0, child.stderr
    done = json.loads(child.stdout)
    assert done["status"] == "completed"
    messages = done["messages"]
    assert messages[-1]["content"] == [
        {"type": "text", "text": "2 apples and 3 pears cost 2.93 EUR."}
    ]
    assert [m["id"] for m in messages].count(call["id"]) == 1  # replaced, not appended
    assert len(messages) == 8  # question, 4 assistant turns, 3 tool result messages
    sent = [r.body for r in anthropic_server.requests]
    assert len(sent) == 4
    assert [t["name"] for t in sent[0]["tools"]] == ["price", "total", "to_eur"]
    # The edited call was run: the model got 3.25, then 2.93 from to_eur.
    third = sent[2]["messages"]
    assert third[-2]["content"][0]["input"] == {"amounts": [1.0, 2.25]}
    assert third[-1]["content"] == [{"type": "tool_result", "tool_use_id": "t3", "content": "3.25"}]
    assert tool_results(anthropic_server)[-1] == ("t4", "2.93")


async def test_react_agent_answers_a_failing_tool_with_its_error(
    anthropic_server: FakeAnthropic, tmp_path: Path
) -> None:
    """A tool that raises (an unknown fruit) is answered with is_error and the model
    goes on; nothing is raised into the run."""
    anthropic_server.enqueue(
        tool_use("price", {"item": "durian", "count": 1}, id="bad"), text("No price for durian.")
    )
    agent, llm = build(str(tmp_path), anthropic_server.url)
    try:
        result = await agent.run(
            {"messages": ["Price a durian"]}, thread_id="t", interrupt_before=[]
        )
    finally:
        await llm.aclose()
    assert result.status == "completed"
    last_request = anthropic_server.requests[-1].body["messages"]
    assert last_request[-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "bad",
            "content": "Error: KeyError: 'durian'",
            "is_error": True,
        }
    ]
