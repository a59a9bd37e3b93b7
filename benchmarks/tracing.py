"""``python -m benchmarks.tracing [--runs N] [--reps N]``: what tracing costs.

Figure 1's happy path (3 node executions per run, ``MemoryCheckpointStore``) timed
without an OpenTelemetry SDK (the library's spans are no-ops), then with the SDK,
a ``SimpleSpanProcessor`` and an ``InMemorySpanExporter``: the difference per span
(a run span and one span per node execution). Its own process, because a global
tracer provider can be set only once.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from ._common import median, quiet_logging
from ._graphs import STEPS, build_rfsm, question_input


async def _batch(runs: int) -> float:
    """Seconds per run of ``runs`` happy-path runs on new threads."""
    app = build_rfsm()
    inputs = [question_input("happy") for _ in range(runs)]
    started = time.perf_counter()
    for i in range(runs):
        await app.run(inputs[i], thread_id=f"t{i}")
    return (time.perf_counter() - started) / runs


def _measure(runs: int, reps: int) -> float:
    asyncio.run(_batch(runs))  # warm-up
    return median([asyncio.run(_batch(runs)) for _ in range(reps)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tracing")
    parser.add_argument("--runs", type=int, default=300, help="runs per batch")
    parser.add_argument("--reps", type=int, default=7, help="batches (median)")
    args = parser.parse_args(argv)
    quiet_logging()
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    plain = _measure(args.runs, args.reps)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    traced = _measure(args.runs, args.reps)
    spans = len(exporter.get_finished_spans()) / (args.runs * (args.reps + 1))
    per_span = (traced - plain) / spans
    print(f"happy path, {STEPS['happy']} steps, {args.runs} runs x {args.reps} batches (medians)")
    print(f"no SDK:                          {plain * 1e6:8.1f} µs/run")
    print(f"SDK + SimpleSpanProcessor + InMemorySpanExporter: {traced * 1e6:8.1f} µs/run")
    print(f"spans per run:                   {spans:8.1f}")
    print(f"cost per span:                   {per_span * 1e6:8.1f} µs")


if __name__ == "__main__":
    main()
