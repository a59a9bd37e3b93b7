"""The researcher: resolves the company (asking back when the name is ambiguous) and
gathers the sources and raw material the specialists work on."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..common.files import utc_now
from ..common.names import MAX_CHOICES, ask_choices, mentions, pick_choice
from ..common.text import is_japanese
from ..engine import NodeContext, Suspend
from ..sources import CompanyIndex, DataSource, ResearchFindings, SearchContext
from ._model import ReportSource, ReportState

__all__ = ["Researcher", "not_found_sentence", "resolve_company", "sources_of"]

Describe = Callable[[str], Awaitable[list[str]]]


def not_found_sentence(name: str, language: str) -> str:
    """What the user is told when no company matches."""
    if language == "ja":
        return f"「{name}」という会社は見つかりませんでした。会社名かティッカーで指定してください。"
    return f"I couldn't find \"{name}\" in my sources. Try the company's full name or its ticker."


async def resolve_company(
    index: CompanyIndex, text: str, describe: Describe | None
) -> tuple[str | None, list[str]]:
    """The company ``text`` names, or ``(None, choices)`` when several fit (none: empty)."""
    found = mentions(index, text)
    if found.choices:
        return None, found.choices
    if len(found.names) == 1:
        return found.names[0], []
    if len(found.names) > 1:
        return None, found.names[:3]
    refs = index.candidates(text)
    if len(refs) == 1:
        return refs[0].name, []
    if refs:
        return None, [ref.name for ref in refs][:MAX_CHOICES]
    typed = mentions(index, text, typed=True)
    if typed.choices:
        return None, typed.choices
    if len(typed.names) == 1:
        return typed.names[0], []
    if typed.names:
        return None, typed.names[:3]
    described = await describe(text) if describe is not None else []
    if len(described) == 1:
        return described[0], []
    return None, described[:3]


def sources_of(findings: ResearchFindings, agent: str) -> list[ReportSource]:
    """The findings' sources as ``ReportSource`` entries (now, by ``agent``); those of the
    bundled directory name its data set (they were not fetched)."""
    now = utc_now()
    dataset = findings.raw_data.get("dataset")
    return [
        ReportSource(
            title=ref.title,
            url=ref.url,
            retrieved_at=now,
            agent=agent,
            dataset=str(dataset) if dataset else None,
        )
        for ref in findings.sources
    ]


class Researcher:
    """Resolves the company, then searches the data source for its overview.

    On a later iteration it searches again with the quality check's gaps as feedback.
    """

    def __init__(
        self,
        source: DataSource,
        index: CompanyIndex,
        describe: Describe | None,
        *,
        web: bool,
    ) -> None:
        self.source = source
        self.index = index
        self.describe = describe
        self.web = web

    async def run(self, state: ReportState, ctx: NodeContext) -> dict[str, Any] | Suspend:
        if state.company is not None:
            return await self._gather(state, state.company)
        return await self._resolve(state, state.query)

    async def resume(self, state: ReportState, value: object, ctx: NodeContext) -> Any:
        _, offered = await resolve_company(self.index, state.query, self.describe)
        picked = pick_choice(offered, str(value))  # "electric" among the Mitsubishis
        return await self._resolve(state, picked or str(value))

    async def _resolve(self, state: ReportState, text: str) -> dict[str, Any] | Suspend:
        company, choices = await resolve_company(self.index, text, self.describe)
        if company is None and self.web and not choices:
            company = text  # web search knows companies the directory does not
        if company is not None:
            return {"company": company, "query": text, **await self._gather(state, company)}
        if choices:
            language = "ja" if state.language == "ja" or is_japanese(text) else "en"
            question = ask_choices(choices, language)
            return Suspend({"question": question, "choices": choices})
        return {"not_found": not_found_sentence(text, state.language)}

    async def _gather(self, state: ReportState, company: str) -> dict[str, Any]:
        start = time.perf_counter()
        context = SearchContext(
            query=f"{company} company overview",
            intent="overview",
            feedback="; ".join(state.gaps) or None,
            attempt=state.iteration + 1,
        )
        result = await self.source.search(company, context)
        update: dict[str, Any] = {"iteration": state.iteration + 1}
        if result.findings is None:
            if state.iteration == 0:
                update["not_found"] = not_found_sentence(company, state.language)
            return update
        findings = result.findings
        material: dict[str, object] = {
            "findings": findings.model_dump(mode="json", exclude={"raw_data"}),
        }
        profile = findings.raw_data.get("profile")
        if isinstance(profile, dict):
            material["directory"] = profile
            material["dataset"] = findings.raw_data.get("dataset")
            material["peers"] = await self._peers(findings.company)
        update |= {
            "company": findings.company,
            "profile": material,
            "sources": sources_of(findings, "researcher"),
            "timings": {"researcher": time.perf_counter() - start},
        }
        return update

    async def _peers(self, company: str) -> dict[str, object] | None:
        ranking = await self.source.peers(company)
        if ranking is None:
            return None
        return {
            "industry": ranking.industry,
            "position": ranking.position,
            "total": len(ranking.ranked),
            "sentence": ranking.sentence(),
            "peers": [[peer.name, peer.revenue] for peer in ranking.peers[:5]],
            "unranked": len(ranking.unranked),
        }
