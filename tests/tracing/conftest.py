"""An OpenTelemetry SDK for the tracing tests: one ``TracerProvider`` for the session
(the global provider can be set once per process) exporting to memory, emptied
before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def _provider() -> TracerProvider:
    """The session's tracer provider, set as the global one (once)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    current = trace.get_tracer_provider()
    assert current is provider, "another tracer provider was set before the tracing tests"
    return provider


@pytest.fixture
def exporter(
    _provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InMemorySpanExporter]:
    """The in-memory exporter, empty at the start of the test; content tracing off."""
    monkeypatch.delenv("RESEARCH_FSM_TRACE_CONTENT", raising=False)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
