"""Run in a child process by the tracing tests: ``python child.py MODE FOLDER``.

``nosdk``: no SDK configured; run a graph to a suspension on a file store in
FOLDER and print the run status and the saved suspension (node, payload, trace) as JSON.
``ask``: an SDK whose exporter appends each span to ``FOLDER/spans.jsonl``; the
offline assistant (file store in FOLDER) asks a vague question and suspends; print
the resume token.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel


class Log(BaseModel):
    """State of the ``nosdk`` graph."""

    log: list[str] = []


async def nosdk(folder: Path) -> None:
    """A suspension with no SDK configured."""
    from research_fsm.engine import END, START, StateGraph, Suspend
    from research_fsm.stores import JsonFileCheckpointStore

    async def ask(state: Log, ctx: object) -> Suspend:
        return Suspend("which?")

    store = JsonFileCheckpointStore(folder)
    graph = StateGraph(Log).add_node("ask", ask)
    graph.add_edge(START, "ask").add_edge("ask", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    saved = await store.load_latest("t")
    suspension = None if saved is None else saved.suspension
    shown = None if suspension is None else [suspension.node, suspension.payload, suspension.trace]
    print(json.dumps([result.status, shown]))


async def ask(folder: Path) -> None:
    """The assistant's clarification question, traced to ``spans.jsonl``."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from research_fsm import JsonFileCheckpointStore, ResearchAssistant

    class FileExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            with (folder / "spans.jsonl").open("a", encoding="utf-8") as out:
                for span in spans:
                    context = span.get_span_context()
                    assert context is not None
                    record = {
                        "name": span.name,
                        "trace_id": format(context.trace_id, "032x"),
                        "span_id": format(context.span_id, "016x"),
                    }
                    out.write(json.dumps(record) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    trace.set_tracer_provider(provider)
    assistant = ResearchAssistant(store=JsonFileCheckpointStore(folder / "store"))
    reply = await assistant.ask("Tell me about the company", thread_id="clarify")
    print(reply.token)


if __name__ == "__main__":
    mode, where = sys.argv[1], Path(sys.argv[2])
    asyncio.run(nosdk(where) if mode == "nosdk" else ask(where))
