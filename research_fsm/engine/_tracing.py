"""OpenTelemetry spans of runs and node executions, through ``opentelemetry-api``
only: the library configures nothing, and without an SDK set up by the application
every span is a no-op.

A call (``run``, ``resume``, a stream) is one ``research_fsm.run`` span; each node
execution is a child ``research_fsm.node <name>`` span, current while the node runs
(so an LLM or search span inside the node is its child). Branch node spans are
siblings under the run span. When the run span does not record (no SDK, or the
sampler dropped it) the run loop is the untraced one: no per-step work at all.

A resumed run continues the trace of the run that suspended: the suspended run's
span context is saved with the suspension (``"trace"``: a W3C ``traceparent``,
only ids, nothing secret) and the resumed run span is its child, and links to it.
When the caller has a span of its own current (e.g. a web request), the resumed
run span is a child of that instead, and the link leads to the suspended run.

The run loop (``_runloop``) and the parallel runner (``_parallel``) call
``RunTrace.invoke`` in place of ``_steps.invoke`` when the run span records; it
hands the node's span to ``invoke``, which adds an event to it for each retry.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, Status, StatusCode
from opentelemetry.trace.span import TraceFlags
from pydantic import BaseModel

from ._context import NodeContext
from ._plan import NodeSpec
from ._steps import NodeError, invoke
from ._types import RunResult, Suspend

__all__ = ["RunTrace", "start_run"]

_tracer = trace.get_tracer("research_fsm.engine", "0.1.0")

# Span attributes (``_steps.invoke`` sets ATTEMPT again on a retry).
THREAD = "research_fsm.thread_id"
RUN = "research_fsm.run_id"
STATUS = "research_fsm.status"
RESUMED = "research_fsm.resumed"
NODE = "research_fsm.node"
STEP = "research_fsm.step"
BRANCH = "research_fsm.branch"
ATTEMPT = "research_fsm.attempt"
OUTCOME = "research_fsm.outcome"


def start_run(thread_id: str, run_id: str, resumed: str | None) -> RunTrace | None:
    """The run's span, or ``None`` when it does not record (no SDK: the usual case).
    ``resumed``: the ``traceparent`` saved with the suspension this call resumes."""
    parent = links = None
    saved = None if resumed is None else parse_traceparent(resumed)
    if saved is not None:
        links = [Link(saved, {"research_fsm.link": "resumes"})]
        if not trace.get_current_span().get_span_context().is_valid:
            parent = trace.set_span_in_context(NonRecordingSpan(saved))
    span = _tracer.start_span("research_fsm.run", context=parent, links=links)
    if not span.is_recording():  # no SDK (a no-op span), or not sampled
        return None
    span.set_attributes({THREAD: thread_id, RUN: run_id, RESUMED: resumed is not None})
    return RunTrace(span)


def traceparent(context: SpanContext) -> str:
    """``context`` as a W3C ``traceparent`` header value."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def parse_traceparent(text: object) -> SpanContext | None:
    """The span context of a ``traceparent`` value (``None``: not one)."""
    if not isinstance(text, str):
        return None
    parts = text.split("-")
    try:
        if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16:
            return None
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags & 0xFF))


class RunTrace:
    """The span of one recording run; starts the spans of its node executions."""

    __slots__ = ("context", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.context = trace.set_span_in_context(span)

    def traceparent(self) -> str:
        """The run span's context, saved with a suspension (links the resume to it)."""
        return traceparent(self.span.get_span_context())

    async def around(self, call: Coroutine[Any, Any, RunResult[Any]]) -> RunResult[Any]:
        """Await the run ``call`` with the run span current; end the span with its status."""
        span = self.span
        token = otel_context.attach(self.context)
        try:
            result = await call
        except BaseException as exc:
            cancelled = not isinstance(exc, Exception)
            span.set_attribute(STATUS, "cancelled" if cancelled else "failed")
            _end(span, None if cancelled else exc)
            raise
        finally:
            otel_context.detach(token)
        span.set_attribute(STATUS, result.status)
        span.set_attribute("research_fsm.steps", len(result.path))
        span.end()
        return result

    async def invoke(
        self, spec: NodeSpec, state: BaseModel, ctx: NodeContext, resuming: bool
    ) -> Any:
        """``_steps.invoke`` in a node span, current while the node runs (and
        recording the node's retries)."""
        attributes: dict[str, Any] = {NODE: ctx.node, STEP: ctx.step, ATTEMPT: 1}
        if ctx.branch is not None:
            attributes[BRANCH] = ctx.branch
        if resuming:
            attributes[RESUMED] = True
        span = _tracer.start_span(
            f"research_fsm.node {ctx.node}", context=self.context, attributes=attributes
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            out = await invoke(spec, state, ctx, resuming, span)
        except NodeError as failure:
            span.set_attribute(OUTCOME, "error")
            _end(span, failure.cause)
            raise
        except BaseException:
            span.set_attribute(OUTCOME, "cancelled")
            span.end()
            raise
        finally:
            otel_context.detach(token)
        if isinstance(out, Suspend):
            span.set_attribute(OUTCOME, "suspended")
            span.add_event("research_fsm.suspended", {NODE: ctx.node})
        else:
            span.set_attribute(OUTCOME, "ok")
        span.end()
        return out


def _end(span: Span, error: BaseException | None) -> None:
    """End ``span``, recording ``error`` on it (status ERROR) if there is one."""
    if error is not None:
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end()
