"""ResearchAgent: ask the data source, score how much of the question is covered."""

from __future__ import annotations

import asyncio
from typing import Any

from ..engine import NodeContext
from ..sources import DataSource, DataSourceError, ResearchFindings, SearchContext, SearchResult
from ..state import ResearchState
from ._common import log_step
from ._rules import INTENT_FIELDS

__all__ = ["ResearchAgent", "coverage_score"]


def coverage_score(findings: ResearchFindings | None, intent: str) -> int:
    """0-10: how much of what ``intent`` asks the findings cover.

    6 points when a field that answers the intent has data, 2 for supporting
    fields (1 each, up to 2), 2 for sources (1 per distinct host, up to 2).
    """
    if findings is None:
        return 0
    answering = INTENT_FIELDS.get(intent, INTENT_FIELDS["overview"])
    populated = findings.populated_fields()
    answered = any(name in populated for name in answering)
    supporting = len(populated) - 1 if answered else len(populated)
    score = (6 if answered else 0) + min(2, supporting)
    hosts = {ref.url.split("/")[2] for ref in findings.sources if ref.url.count("/") >= 2}
    score += min(2, len(hosts))
    return max(0, min(10, score))


class ResearchAgent:
    """Queries the data source for the company (and any companies compared)."""

    def __init__(self, source: DataSource) -> None:
        self.source = source

    async def _search(self, company: str, context: SearchContext) -> SearchResult | str:
        try:
            return await self.source.search(company, context)
        except DataSourceError as exc:
            return f"The data source '{exc.source}' failed: {exc.message}"
        except Exception as exc:  # a broken source must not crash the conversation
            return f"The data source '{self.source.name}' failed: {type(exc).__name__}"

    async def run(self, state: ResearchState, ctx: NodeContext) -> dict[str, Any]:
        attempts = state.research_attempts + 1
        update: dict[str, Any] = {"current_agent": "research", "research_attempts": attempts}
        company = state.detected_company
        if not company:
            log_step(ctx, state, company=None, confidence=0)
            return update | {"research_findings": None, "confidence_score": 0,
                             "research_note": "no company to research"}  # fmt: skip
        context = SearchContext(
            query=state.original_query, intent=state.query_intent,
            feedback=state.validation_feedback, attempt=attempts,
        )  # fmt: skip
        results = await asyncio.gather(
            self._search(company, context),
            *(self._search(other, context) for other in state.comparison_companies),
        )
        main = results[0]
        note = main if isinstance(main, str) else main.note
        findings = None if isinstance(main, str) else main.findings
        confidence = 0
        if findings is not None and not isinstance(main, str):
            confidence = min(main.confidence, coverage_score(findings, state.query_intent))
        compared = [r.findings for r in results[1:] if not isinstance(r, str) and r.findings]
        log_step(
            ctx, state, company=company, attempt=attempts, confidence=confidence,
            found=findings is not None, note=note,
        )  # fmt: skip
        return update | {
            "research_findings": findings,
            "comparison_findings": compared,
            "confidence_score": confidence,
            "research_note": note if findings is None else None,
        }
