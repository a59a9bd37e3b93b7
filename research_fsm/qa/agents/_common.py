"""Small helpers every agent shares."""

from __future__ import annotations

import re
from typing import Any

from ..._logging import get_logger
from ...common.fence import escape
from ...engine import NodeContext
from ...llm import LLMError, Usage
from ..state import ResearchState

__all__ = [
    "as_data",
    "emit_text",
    "failed_usage",
    "llm_note",
    "log_step",
    "usage_update",
    "warn_fallback",
]

_log = get_logger("research_fsm.engine")
"""The agents' log lines: ``ctx.log``'s logger, with its bound fields (``_bound``) passed
in each call, so a line the configured level drops does not load structlog."""


def _bound(ctx: NodeContext) -> dict[str, Any]:
    """The fields ``ctx.log`` binds: thread, run, node, step (and branch)."""
    fields: dict[str, Any] = dict(
        thread_id=ctx.thread_id, run_id=ctx.run_id, node=ctx.node, step=ctx.step
    )
    if ctx.branch is not None:
        fields["branch"] = ctx.branch
    return fields


def as_data(text: str) -> str:
    """``text`` made safe to put inside a prompt's ``<findings>`` or ``<conversation>``
    block (``common.fence.escape``: ``&``, ``<`` and ``>`` as entities), so text from the
    web cannot close the block early and speak outside it."""
    return escape(text)


def usage_update(agent: str, usage: Usage) -> dict[str, Any]:
    """The state change that adds ``usage`` to ``agent``'s running total."""
    return {"usage": {agent: usage}, "question_usage": {agent: usage}}


def failed_usage(agent: str, exc: LLMError) -> dict[str, Any]:
    """The state change that counts what a failed call cost (answers that did not fit
    the schema, or were cut at the output limit, are paid for too) and notes, for the
    reply, that the rules did the step."""
    note = f"{agent}: the LLM's answer could not be used ({exc.kind}); the rules did this step"
    update: dict[str, Any] = {"question_notes": [note]}
    return update | (usage_update(agent, exc.usage) if exc.usage.calls else {})


def llm_note(ctx: NodeContext, state: ResearchState, note: str | None) -> dict[str, Any]:
    """Log what the LLM client had to do for an answer (e.g. a raised output limit, JSON
    asked for in text); the state change that notes it for the reply."""
    if not note:
        return {}
    _log.info(
        "LLM note", **_bound(ctx), agent=ctx.node, correlation_id=state.correlation_id, note=note
    )
    return {"question_notes": [note]}


def log_step(ctx: NodeContext, state: ResearchState, **fields: Any) -> None:
    """The one log line per agent step."""
    _log.info(
        "agent step", **_bound(ctx), agent=ctx.node, correlation_id=state.correlation_id, **fields
    )


def warn_fallback(ctx: NodeContext, state: ResearchState, exc: Exception) -> None:
    """Log (once per agent step) that the LLM failed and the rules take over."""
    reason = exc.kind if isinstance(exc, LLMError) else type(exc).__name__
    _log.warning(
        "LLM failed; using the rule-based path",
        **_bound(ctx),
        agent=ctx.node,
        correlation_id=state.correlation_id,
        reason=reason,
        detail=str(exc)[:300],
    )


_PIECES = re.compile(r"\S+\s*|\s+")


def emit_text(ctx: NodeContext, text: str) -> None:
    """Stream ``text`` word by word to ``ctx.emit("token", ...)`` consumers."""
    for piece in _PIECES.findall(text):
        ctx.emit("token", piece)
