"""ErrorRecoveryAgent: a message that fits what failed; the run ends cleanly."""

from __future__ import annotations

from typing import Any

from ...engine import NodeContext
from ..state import ErrorContext, Message, ResearchState
from ._common import emit_text, log_step
from ._synthesis import _section, sources_block

__all__ = ["ErrorRecoveryAgent"]


class ErrorRecoveryAgent:
    """Turns a failed agent into a helpful answer and clears ``error_context``."""

    async def run(self, state: ResearchState, ctx: NodeContext) -> dict[str, Any]:
        error = state.error_context
        if error is None and ctx.error is not None:
            error = ErrorContext(
                agent=ctx.error.node, type=ctx.error.exc_type, message=ctx.error.message
            )
        agent = error.agent if error else "unknown"
        answer = self._message(state, agent)
        emit_text(ctx, answer)
        log_step(ctx, state, failed_agent=agent, error_type=error.type if error else None)
        return {
            "current_agent": "error_recovery",
            "error_context": None,
            "final_summary": answer,
            "messages": [Message(role="assistant", content=answer)],
        }

    @staticmethod
    def _message(state: ResearchState, agent: str) -> str:
        company = state.detected_company or "that company"
        findings = state.research_findings
        if agent == "clarity":
            return (
                "I had trouble understanding your question. Could you rephrase it and "
                "name the company you're interested in?"
            )
        if agent == "research":
            return (
                f"I had trouble finding information about {company} just now. "
                "Please try again in a moment, or ask about another company."
            )
        if findings is not None and agent in ("validator", "synthesis"):
            lead = (
                "I couldn't double-check these findings, so please treat them with care:"
                if agent == "validator"
                else f"I couldn't polish the answer, but here are the findings about {findings.company}:"
            )
            body = "\n\n".join(_section(findings, state.query_intent, state.language))
            block = sources_block([findings])
            return "\n\n".join(p for p in (lead, body, block) if p)
        return "Something went wrong while researching your question. Please try again."
