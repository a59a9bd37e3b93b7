"""Engine spans with the SDK's in-memory exporter: the run span and its node spans
(happy path, failure, retry, parallel branches, suspension and resume), and the
untraced loop when no SDK is configured."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    NodeFailed,
    RetryPolicy,
    StateGraph,
    Suspend,
    append,
)

from .helpers import by_name, children

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "child.py"


class Log(BaseModel):
    """State: the nodes that ran."""

    log: Annotated[list[str], append] = []


def node(name: str, delay: float = 0.0) -> Any:
    """A node that logs its name (after ``delay`` seconds)."""

    async def run(state: Log) -> dict[str, Any]:
        if delay:
            await asyncio.sleep(delay)
        return {"log": [name]}

    return run


def chain(*names: str) -> StateGraph[Log]:
    """START -> names... -> END."""
    graph = StateGraph(Log)
    for name in names:
        graph.add_node(name, node(name))
    for source, target in zip((START, *names), (*names, END), strict=True):
        graph.add_edge(source, target)
    return graph


async def test_happy_path_is_a_run_span_with_node_children_in_order(
    exporter: InMemorySpanExporter,
) -> None:
    """A completed run: one run span, a child per node in order with step and outcome."""
    result = await chain("a", "b", "c").compile().run({}, thread_id="happy")
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "research_fsm.run")
    assert None is run.parent
    assert {
        "research_fsm.thread_id": "happy",
        "research_fsm.run_id": run.attributes["research_fsm.run_id"],
        "research_fsm.resumed": False,
        "research_fsm.status": "completed",
        "research_fsm.steps": 3,
    } == dict(run.attributes or {})
    nodes = children(spans, run)
    assert ["research_fsm.node a", "research_fsm.node b", "research_fsm.node c"] == [
        s.name for s in nodes
    ]
    assert [
        {
            "research_fsm.node": name,
            "research_fsm.step": step,
            "research_fsm.attempt": 1,
            "research_fsm.outcome": "ok",
        }
        for step, name in enumerate("abc")
    ] == [dict(s.attributes or {}) for s in nodes]
    assert {run.context.trace_id} == {s.context.trace_id for s in spans}
    assert 4 == len(spans)
    assert ["a", "b", "c"] == result.path


async def test_failing_node_records_the_error_on_node_and_run_spans(
    exporter: InMemorySpanExporter,
) -> None:
    """A node that raises: its span and the run span have status ERROR and the exception."""

    async def boom(state: Log) -> dict[str, Any]:
        raise ValueError("no data")

    graph = StateGraph(Log).add_node("a", node("a")).add_node("boom", boom)
    graph.add_edge(START, "a").add_edge("a", "boom").add_edge("boom", END)
    with pytest.raises(NodeFailed):
        await graph.compile().run({}, thread_id="fails")
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "research_fsm.run")
    [failed] = by_name(spans, "research_fsm.node boom")
    assert (StatusCode.ERROR, "error") == (
        failed.status.status_code,
        (failed.attributes or {})["research_fsm.outcome"],
    )
    assert [("exception", "ValueError", "no data")] == [
        (e.name, (e.attributes or {})["exception.type"], (e.attributes or {})["exception.message"])
        for e in failed.events
    ]
    assert (StatusCode.ERROR, "failed") == (
        run.status.status_code,
        (run.attributes or {})["research_fsm.status"],
    )
    assert ["exception"] == [e.name for e in run.events]


async def test_retried_node_is_one_span_with_a_retry_event(
    exporter: InMemorySpanExporter,
) -> None:
    """A node that fails once then succeeds: one span, attempt 2, one retry event, outcome ok."""
    calls = []

    async def flaky(state: Log) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("blip")
        return {"log": ["flaky"]}

    graph = StateGraph(Log).add_node("flaky", flaky, retry=RetryPolicy(backoff=0.0))
    graph.add_edge(START, "flaky").add_edge("flaky", END)
    await graph.compile().run({}, thread_id="retry")
    [span] = by_name(exporter.get_finished_spans(), "research_fsm.node flaky")
    assert (2, "ok") == (
        (span.attributes or {})["research_fsm.attempt"],
        (span.attributes or {})["research_fsm.outcome"],
    )
    assert [("research_fsm.retry", 1, "ConnectionError")] == [
        (
            e.name,
            (e.attributes or {})["research_fsm.attempt"],
            (e.attributes or {})["exception.type"],
        )
        for e in span.events
    ]


async def test_parallel_branches_are_overlapping_sibling_spans(
    exporter: InMemorySpanExporter,
) -> None:
    """A fan-out: the branch node spans are siblings under the run span, with their
    branch ids, and overlap in time; the join follows them."""
    graph = StateGraph(Log)
    graph.add_node("plan", node("plan")).add_node("left", node("left", 0.05))
    graph.add_node("right", node("right", 0.05)).add_node("join", node("join"))
    graph.add_edge(START, "plan").add_edge("left", "join").add_edge("right", "join")
    graph.add_edge("join", END)
    graph.add_router("plan", lambda s: ["left", "right"], ["left", "right"], join="join")
    await graph.compile().run({}, thread_id="fan")
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "research_fsm.run")
    nodes = children(spans, run)
    assert [
        "research_fsm.node plan",
        "research_fsm.node left",
        "research_fsm.node right",
        "research_fsm.node join",
    ] == [s.name for s in nodes]
    assert [None, "left[0]", "right[1]", None] == [
        (s.attributes or {}).get("research_fsm.branch") for s in nodes
    ]
    left, right = nodes[1], nodes[2]
    assert (left.start_time or 0) < (right.end_time or 0)
    assert (right.start_time or 0) < (left.end_time or 0)


async def test_suspension_and_resume_continue_one_trace(exporter: InMemorySpanExporter) -> None:
    """Suspend then resume in one process: the resumed run span is a child of the
    suspended run span (same trace) and links to it."""

    async def ask(state: Log, ctx: Any) -> Any:
        if not ctx.resuming:
            return Suspend({"question": "which one?"})
        return {"log": [str(ctx.resume_value)]}

    graph = StateGraph(Log).add_node("ask", ask)
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile()
    first = await app.run({}, thread_id="pause")
    assert first.suspension is not None
    await app.resume(first.suspension.token, "this one")
    suspended, resumed = by_name(exporter.get_finished_spans(), "research_fsm.run")
    assert ("suspended", "completed") == (
        (suspended.attributes or {})["research_fsm.status"],
        (resumed.attributes or {})["research_fsm.status"],
    )
    assert resumed.parent is not None
    assert (suspended.context.trace_id, suspended.context.span_id) == (
        resumed.context.trace_id,
        resumed.parent.span_id,
    )
    assert [suspended.context.span_id] == [link.context.span_id for link in resumed.links]
    asked = by_name(exporter.get_finished_spans(), "research_fsm.node ask")
    assert ["suspended", "ok"] == [(s.attributes or {})["research_fsm.outcome"] for s in asked]
    assert ["research_fsm.suspended"] == [e.name for e in asked[0].events]


def test_without_an_sdk_nothing_is_traced(tmp_path: Path) -> None:
    """No SDK configured (a fresh process): runs work, and no trace context is saved
    with a suspension (the untraced loop ran)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    out = subprocess.run(
        [sys.executable, str(CHILD), "nosdk", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert ["suspended", ["ask", "which?", None]] == json.loads(out)
