"""OpenTelemetry spans of LLM calls and searches, and trace ids in log lines.

Through ``opentelemetry-api`` only, like the engine's spans (``engine/_tracing``):
without an SDK configured by the application they cost next to nothing. LLM spans
follow the GenAI semantic conventions (``gen_ai.*``); searches name their data
source. Prompts, queries and answers are never recorded unless the application
opts in with ``RESEARCH_FSM_TRACE_CONTENT=1``; API keys never are.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

__all__ = [
    "CONTENT_ENV",
    "add_trace_ids",
    "llm_span",
    "record_usage",
    "search_span",
    "trace_content",
]

CONTENT_ENV = "RESEARCH_FSM_TRACE_CONTENT"
"""Set to ``1`` to record prompts, answers and search queries on spans."""

_tracer = trace.get_tracer("research_fsm", "0.1.0")
_CONTENT_LIMIT = 4000  # characters of a prompt or answer kept on a span (opted in)


def trace_content() -> bool:
    """Whether the application opted in to prompts and queries on spans."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def llm_span(
    system: str, model: str, agent: str, operation: str = "chat", *, prompt: str | None = None
) -> Iterator[Span]:
    """A span around one LLM call (retries included), named as the GenAI conventions
    say (``chat <model>``); an exception leaving it is recorded (status ERROR)."""
    attributes: dict[str, Any] = {
        "gen_ai.system": system,
        "gen_ai.provider.name": system,
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": model,
        "research_fsm.agent": agent,
    }
    with _tracer.start_as_current_span(
        f"{operation} {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if prompt is not None and span.is_recording() and trace_content():
            span.set_attribute("gen_ai.prompt", prompt[:_CONTENT_LIMIT])
        with _errors_recorded(span):
            yield span


def record_usage(
    span: Span,
    input_tokens: int,
    output_tokens: int,
    cost_usd: float | None,
    *,
    model: str | None = None,
    answer: str | None = None,
) -> None:
    """Token usage and cost of an LLM call on its span."""
    if not span.is_recording():
        return
    span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if cost_usd is not None:  # unknown for a model without a price: left out, not 0
        span.set_attribute("research_fsm.cost_usd", cost_usd)
    if model is not None:
        span.set_attribute("gen_ai.response.model", model)
    if answer is not None and trace_content():
        span.set_attribute("gen_ai.completion", answer[:_CONTENT_LIMIT])


@contextmanager
def search_span(source: str, query: str, operation: str = "search") -> Iterator[Span]:
    """A span around one search of data source ``source``: the query's length (its
    text only when opted in); set ``research_fsm.search.results`` on it."""
    attributes: dict[str, Any] = {
        "research_fsm.data_source": source,
        "research_fsm.search.query_length": len(query),
    }
    with _tracer.start_as_current_span(
        f"research_fsm.{operation} {source}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if span.is_recording() and trace_content():
            span.set_attribute("research_fsm.search.query", query[:_CONTENT_LIMIT])
        with _errors_recorded(span):
            yield span


@contextmanager
def _errors_recorded(span: Span) -> Iterator[None]:
    """Record an exception leaving the block on ``span`` (status ERROR, type in
    ``error.type``); a cancellation is not an error."""
    try:
        yield
    except Exception as exc:
        if span.is_recording():
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        raise


def add_trace_ids(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor: the current span's ``trace_id`` and ``span_id`` (hex,
    as OTLP backends show them) on the log line, when a span records."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid and context.trace_flags.sampled:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event
