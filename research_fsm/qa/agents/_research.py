"""ResearchAgent: ask the data source, score how much of the question is covered."""

from __future__ import annotations

import asyncio
from typing import Any

from ...engine import NodeContext
from ...sources import DataSource, DataSourceError, SearchContext, SearchResult
from ..constants import CONFIDENCE_HIGH_THRESHOLD
from ..state import ResearchState
from ._common import log_step
from ._intents import coverage_score

__all__ = ["EXACT_MATCHES", "ResearchAgent", "coverage_score"]

EXACT_MATCHES = frozenset({"exact", "ticker"})
"""Ways of matching a company's name that leave no doubt about the company."""


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
        update: dict[str, Any] = {
            "current_agent": "research",
            "research_attempts": attempts,
            "research_repeatable": self.source.reads_feedback,
        }
        company = state.detected_company
        if not company:
            log_step(ctx, state, company=None, confidence=0)
            return update | {
                "research_findings": None,
                "confidence_score": 0,
                "research_note": "no company to research",
            }
        context = SearchContext(
            query=state.original_query,
            intent=state.query_intent,
            feedback=state.validation_feedback,
            attempt=attempts,
        )
        results = await asyncio.gather(
            self._search(company, context),
            *(self._search(other, context) for other in state.comparison_companies),
        )
        main = results[0]
        note = main if isinstance(main, str) else main.note
        findings = None if isinstance(main, str) else main.findings
        confidence = 0
        if findings is not None and not isinstance(main, str):
            coverage = coverage_score(findings, state.query_intent, state.original_query)
            confidence = min(main.confidence, coverage)
        if state.name_match not in EXACT_MATCHES:  # a typo or the start of a name: never high
            confidence = min(confidence, CONFIDENCE_HIGH_THRESHOLD - 1)
        compared = [r.findings for r in results[1:] if not isinstance(r, str) and r.findings]
        log_step(
            ctx,
            state,
            company=company,
            attempt=attempts,
            confidence=confidence,
            found=findings is not None,
            note=note,
        )
        return update | {
            "research_findings": findings,
            "comparison_findings": compared,
            "confidence_score": confidence,
            "research_note": note if findings is None else None,
        }
