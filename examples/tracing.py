"""Tracing: print the OpenTelemetry span tree of a conversation, offline.

Run it with ``python examples/tracing.py`` (needs ``opentelemetry-sdk``:
``pip install 'research-fsm[otel]'``).

The library only emits spans through ``opentelemetry-api``; the application picks
the SDK and the exporter. Here the SDK keeps the spans in memory and the script
prints them as a tree: the offline assistant asks back on a vague question (a run
that suspends), then the answer resumes it (a run that continues the same trace).
To send the same spans to Jaeger, LangSmith or any OTLP backend, see "Tracing" in
the README: no code change, only environment variables.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opentelemetry import trace

from research_fsm import ResearchAssistant, configure_logging

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

SHOWN = (
    "research_fsm.status",
    "research_fsm.step",
    "research_fsm.outcome",
    "research_fsm.branch",
    "research_fsm.data_source",
    "research_fsm.search.results",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)
"""The attributes printed next to a span's name."""


def print_tree(spans: Sequence[ReadableSpan]) -> None:
    """Print ``spans`` as a tree per trace: name, duration and a few attributes."""
    ids = {span.context.span_id for span in spans if span.context is not None}
    kids: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        kids.setdefault(parent if parent in ids else None, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        attributes = span.attributes or {}
        shown = " ".join(
            f"{key.split('.')[-1]}={attributes[key]}" for key in SHOWN if key in attributes
        )
        took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        link = " (links to the suspended run)" if span.links else ""
        print(f"{'  ' * depth}{span.name}  {took:.1f} ms  {shown}{link}".rstrip())
        for child in sorted(kids.get(span.context.span_id, []), key=lambda s: s.start_time or 0):
            show(child, depth + 1)

    roots = sorted(kids.get(None, []), key=lambda s: s.start_time or 0)
    for trace_id in dict.fromkeys(root.context.trace_id for root in roots):
        print(f"trace {trace_id:032x}")
        for root in roots:
            if root.context.trace_id == trace_id:
                show(root, 1)


async def main() -> None:
    try:  # the SDK is the application's choice: the otel extra, not a dependency
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print("skipped: opentelemetry-sdk is not installed (pip install -e '.[otel]')")
        return
    configure_logging()  # warnings only, on stderr
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # what the application does, never the library

    with tempfile.TemporaryDirectory() as home:
        os.environ["RESEARCH_FSM_HOME"] = home
        assistant = ResearchAssistant()
        reply = await assistant.ask("Tell me about the company", thread_id="tracing-demo")
        print(f"asked:    status {reply.status}")
        if reply.token is None:
            raise SystemExit("expected the assistant to ask back")
        answer = await assistant.clarify(reply.token, "Apple")
        print(f"answered: status {answer.status}, company {answer.company}")
    print()
    print_tree(exporter.get_finished_spans())


if __name__ == "__main__":
    asyncio.run(main())
