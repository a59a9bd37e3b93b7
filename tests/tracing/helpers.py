"""Reading the spans the in-memory exporter kept."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The spans called ``name``, in the order they ended."""
    return [span for span in spans if span.name == name]


def children(
    spans: tuple[ReadableSpan, ...] | list[ReadableSpan], parent: ReadableSpan
) -> list[ReadableSpan]:
    """The spans whose parent is ``parent``, in start order."""
    assert parent.context is not None
    found = [
        s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]
    return sorted(found, key=lambda s: s.start_time or 0)
