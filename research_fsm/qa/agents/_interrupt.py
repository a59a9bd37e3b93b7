"""InterruptAgent: ask the user back and wait for the answer."""

from __future__ import annotations

from typing import Any

from ...common.text import clean_text
from ...engine import NodeContext, Suspend
from ..constants import MAX_ANSWER_CHARS
from ..state import Message, ResearchState
from ._common import log_step

__all__ = ["InterruptAgent"]


class InterruptAgent:
    """Suspends the run with the clarity agent's question (kept in the conversation, so
    ``history`` shows it); ``resume`` takes the answer.

    ``run`` has no side effects, and it is never run again on resume.
    """

    async def run(self, state: ResearchState, ctx: NodeContext) -> Suspend:
        return Suspend(
            {
                "type": "clarification_needed",
                "question": state.clarification_question,
                "original_query": state.original_query,
                "attempt": state.clarification_attempts,
                "choices": list(state.clarification_choices),
            },
            update={
                "current_agent": "interrupt",
                "messages": [Message(role="assistant", content=state.clarification_question or "")],
            },
        )

    async def resume(self, state: ResearchState, value: Any, ctx: NodeContext) -> dict[str, Any]:
        answer = clean_text(
            value if isinstance(value, str) else "" if value is None else str(value)
        )
        answer = answer[:MAX_ANSWER_CHARS]
        log_step(ctx, state, answer_chars=len(answer))
        return {
            "messages": [Message(role="user", content=answer)],
            "original_query": answer,
            "clarity_status": "pending",
            "current_agent": "interrupt",
        }
