"""The financial, market and product specialists.

Offline (the directory) each reads the researcher's profile and computes what it can,
labelling every computed figure. With a web source each makes its own targeted search;
with Claude it extracts facts through structured output, each with the URL of a source
it was given; a fact is kept only when it cites such a URL and its value is in that
page's text (every number of it, or most of its words). The company name and the
findings reach Claude inside fences (``common.fence``), never in the system prompt.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from ..common.fence import data_rule, fence, unescape
from ..common.figures import figures, missing_figures
from ..engine import NodeContext
from ..llm import LLM, LLMError, keep_first
from ..sources import (
    CompanyProfile,
    DataSource,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    clean_founded,
    clean_value,
    fiscal_year,
    format_money,
    parse_money,
    split_people,
)
from ._agent_table import AGENTS
from ._model import ReportFact, ReportSource, ReportState, Section, SpecialistName
from ._research import sources_of

__all__ = ["EXPECTED", "SEARCHES", "Specialist", "in_source", "offline_section"]

SEARCHES: Final[dict[SpecialistName, tuple[str, str]]] = {
    "financial": ("financials", "financial results, revenue, profit and guidance"),
    "market": ("competitors", "competitors, market share and industry position"),
    "product": ("products", "products, services and recent launches"),
}
"""Per specialist: the search intent and query it adds to the company name."""

EXPECTED: Final[dict[SpecialistName, tuple[str, ...]]] = {
    "financial": (
        "revenue",
        "operating_income",
        "net_income",
        "total_assets",
        "total_equity",
        "employees",
        "net_margin",
        "operating_margin",
        "revenue_per_employee",
    ),
    "market": ("industry", "peer_position", "peers", "indices", "country"),
    "product": ("products", "key_people", "founders", "headquarters", "founded"),
}
"""What each specialist looks for; what it does not find is listed as missing."""

_SYSTEM: Final = (
    "You are the {agent} specialist of a company research team. Extract facts about the "
    "company named in <company> from the <finding> texts only. Every fact must cite the URL "
    "of the finding it comes from, exactly as given, and copy its figures as that finding "
    "writes them. Never estimate. " + data_rule("company", "finding")
)


MAX_FACTS: Final = 10
"""Facts one specialist extracts at most."""


class ExtractedFact(BaseModel):
    """One fact Claude extracted."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    label: str
    """What the value is (e.g. "Quarterly revenue"), in the report's language."""
    value: str
    """The value exactly as the finding writes it, figures and units unchanged."""
    source_url: str
    """The URL of the finding it comes from, exactly as given."""


class Extraction(BaseModel):
    """Claude's structured answer: the specialist's facts, most important first."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    facts: Annotated[list[ExtractedFact], Field(max_length=MAX_FACTS), keep_first(MAX_FACTS)] = (
        Field(default_factory=list)
    )
    """The facts, at most ten, most important first."""


def _money(text: str | None) -> str | None:
    return format_money(clean_value(text)) if text else None


def _ratio(key: str, part: str, whole: str, facts: dict[str, ReportFact]) -> ReportFact | None:
    top, bottom = parse_money(facts[part].value), parse_money(facts[whole].value)
    if top is None or bottom is None or not bottom.amount or top.currency != bottom.currency:
        return None
    value = f"{100 * top.amount / bottom.amount:.1f}%"
    urls = facts[part].urls
    periods = _mixed_periods(facts[part], facts[whole])
    return ReportFact(key=key, value=value, urls=urls, computed_from=[part, whole], periods=periods)


def _mixed_periods(*facts: ReportFact) -> list[str]:
    """The period of each fact as written ("FY23", "March 31, 2025") when their fiscal
    years differ, else none."""
    years = [fiscal_year(fact.value) for fact in facts]
    if None in years or len(set(years)) == 1:
        return []
    periods = []
    for fact, year in zip(facts, years, strict=True):
        written = re.findall(r"\(([^()]*\d[^()]*)\)", fact.value)
        periods.append(written[0].strip() if written else str(year))
    return periods


def _per_employee(facts: dict[str, ReportFact]) -> ReportFact | None:
    revenue = parse_money(facts["revenue"].value)
    digits = facts["employees"].value.split("(")[0].replace(",", "").strip()
    if revenue is None or not digits.isdigit() or not int(digits):
        return None
    amount = revenue.amount / int(digits)
    value = f"{revenue.currency}{amount:,.0f}"
    return ReportFact(
        key="revenue_per_employee",
        value=value,
        urls=facts["revenue"].urls,
        computed_from=["revenue", "employees"],
        periods=_mixed_periods(facts["revenue"], facts["employees"]),
    )


def _financial(profile: CompanyProfile, urls: list[str]) -> list[ReportFact]:
    data = profile.metadata
    raw = {
        "revenue": _money(data.revenue),
        "operating_income": _money(data.operating_income),
        "net_income": _money(data.net_income),
        "total_assets": _money(data.total_assets),
        "total_equity": _money(data.total_equity),
        "employees": data.employees and clean_value(data.employees),
    }
    facts = {
        key: ReportFact(key=key, value=value, urls=urls) for key, value in raw.items() if value
    }
    computed: list[ReportFact | None] = []
    if "revenue" in facts and "net_income" in facts:
        computed.append(_ratio("net_margin", "net_income", "revenue", facts))
    if "revenue" in facts and "operating_income" in facts:
        computed.append(_ratio("operating_margin", "operating_income", "revenue", facts))
    if "revenue" in facts and "employees" in facts:
        computed.append(_per_employee(facts))
    return [*facts.values(), *(fact for fact in computed if fact is not None)]


def _position(profile: CompanyProfile, peers: dict[str, Any], language: str) -> str:
    """The company's rank, with how many of the industry could not be ranked: the
    denominator counts only companies with a comparable revenue figure."""
    unranked = int(str(peers.get("unranked") or 0))
    if language == "ja" and peers["position"] is not None:
        text = (
            f"{profile.name}は、ディレクトリで{peers['industry']}に分類される売上高の数値がある"
            f"{peers['total']}社中、売上高で第{peers['position']}位です"
        )
        if unranked:
            text += f"（ほか{unranked}社は比較できる売上高の数値がありません）"
        return text + "。"
    sentence = str(peers["sentence"])
    if unranked and peers["position"] is not None:
        sentence = sentence.removesuffix(".") + (
            f" ({unranked} more {'has' if unranked == 1 else 'have'} no comparable revenue figure)."
        )
    return sentence


def _market(
    profile: CompanyProfile, peers: dict[str, Any] | None, urls: list[str], language: str
) -> list[ReportFact]:
    facts: list[ReportFact] = []
    if peers:
        facts.append(ReportFact(key="industry", value=str(peers["industry"]), urls=urls))
        position = _position(profile, peers, language)
        facts.append(ReportFact(key="peer_position", value=position, urls=urls))
        listed = [f"{name} ({revenue})" for name, revenue in peers["peers"]]
        if listed:
            facts.append(ReportFact(key="peers", value="; ".join(listed), urls=urls))
    elif profile.industries:
        facts.append(ReportFact(key="industry", value="; ".join(profile.industries[:3]), urls=urls))
    indices = ", ".join(i.replace("_", " ") for i in profile.indices)
    if indices:
        facts.append(ReportFact(key="indices", value=indices, urls=urls))
    if profile.country:
        facts.append(ReportFact(key="country", value=profile.country, urls=urls))
    return facts


def _product(profile: CompanyProfile, urls: list[str]) -> list[ReportFact]:
    data = profile.metadata
    raw = {
        "products": ", ".join(profile.product_items()),
        "key_people": data.key_people and split_people(data.key_people),
        "founders": ", ".join(profile.founder_names()),
        "headquarters": data.headquarters and clean_value(data.headquarters),
        "founded": data.founded and clean_founded(data.founded),
    }
    return [ReportFact(key=key, value=value, urls=urls) for key, value in raw.items() if value]


def offline_section(
    name: SpecialistName, material: dict[str, Any], language: str = "en"
) -> Section:
    """A specialist's section from the directory profile the researcher found."""
    profile = CompanyProfile.model_validate(material["directory"])
    urls = [url for url in (profile.wikipedia_url, profile.website_url) if url][:1]
    if name == "financial":
        facts = _financial(profile, urls)
    elif name == "market":
        facts = _market(profile, material.get("peers"), urls, language)
    else:
        facts = _product(profile, urls)
    found = {fact.key for fact in facts}
    return Section(facts=facts, missing=[key for key in EXPECTED[name] if key not in found])


def _findings_text(findings: ResearchFindings) -> str:
    """One ``<finding>`` fence per page (its text as the search kept it); findings
    without per-page texts (an older search) as one fence per field."""
    pages = findings.raw_data.get("pages")
    if isinstance(pages, dict) and pages:
        titles = {ref.url: ref.title for ref in findings.sources}
        return "\n".join(
            fence("finding", str(text), url=str(url), title=titles.get(str(url), ""))
            for url, text in pages.items()
        )
    blocks = [fence("finding", ref.title, url=ref.url) for ref in findings.sources]
    for field in findings.populated_fields():
        blocks.append(fence("finding", str(getattr(findings, field)), field=field))
    return "\n".join(blocks)


def _page_texts(findings: ResearchFindings) -> dict[str, str]:
    """Each page's text as the findings hold it; without per-page texts, all the
    findings' text for every source."""
    pages = findings.raw_data.get("pages")
    if isinstance(pages, dict) and pages:
        return {str(url): str(text) for url, text in pages.items()}
    every = "\n".join(str(getattr(findings, f)) for f in findings.populated_fields())
    return {ref.url: every for ref in findings.sources}


_WORD: Final = re.compile(r"[^\W\d_]{4,}")


def in_source(value: str, text: str) -> bool:
    """Whether ``value`` is in ``text``: every number of it is one ``text`` states, and
    a value without numbers has at least half of its words (4+ letters) in ``text``."""
    if missing_figures(value, text):
        return False
    if figures(value):
        return True
    words = {w.lower() for w in _WORD.findall(value)}
    if not words:
        return value.strip().lower() in text.lower()
    found = {w.lower() for w in _WORD.findall(text)}
    return len(words & found) * 2 >= len(words)


def _field_facts(findings: ResearchFindings, urls: list[str]) -> list[ReportFact]:
    """Without Claude: each ``Label: value`` line of the findings is a fact."""
    facts = []
    for field in findings.populated_fields():
        for line in str(getattr(findings, field)).splitlines():
            label, sep, value = line.partition(": ")
            if sep and value.strip():
                key = label.strip().lower().replace(" ", "_")
                facts.append(
                    ReportFact(key=key, label=label.strip(), value=value.strip(), urls=urls)
                )
    return facts


_RULES_TAKE_OVER = frozenset({"schema", "max_tokens", "no_tools", "other"})
"""``LLMError`` kinds after which the search's own fields are the facts (the model
answered, but not usably); the others (the service is down) leave the section unavailable."""


class Specialist:
    """One specialist node; an expected failure (source, LLM) becomes an unavailable section."""

    def __init__(self, name: SpecialistName, source: DataSource, llm: LLM | None) -> None:
        self.name: SpecialistName = name
        self.source = source
        self.llm = llm

    async def run(self, state: ReportState, ctx: NodeContext) -> dict[str, Any]:
        start = time.perf_counter()
        update: dict[str, Any]
        try:
            update = await self._work(state)
        except (DataSourceError, LLMError) as exc:
            ctx.log.warning("specialist failed", specialist=self.name, error=str(exc))
            update = {
                self.name: Section(status="unavailable", error=f"{type(exc).__name__}: {exc}")
            }
            if isinstance(exc, LLMError) and exc.usage.calls:
                update["usage"] = {self.name: exc.usage}
        update["timings"] = {self.name: time.perf_counter() - start}
        return update

    async def _work(self, state: ReportState) -> dict[str, Any]:
        if "directory" in state.profile:
            return {self.name: offline_section(self.name, state.profile, state.language)}
        intent, topic = SEARCHES[self.name]
        company = state.company or state.query
        context = SearchContext(
            query=f"{company} {topic}",
            intent=intent,
            feedback="; ".join(state.gaps) or None,
            attempt=state.iteration,
        )
        result = await self.source.search(company, context)
        if result.findings is None:
            return {self.name: Section(missing=list(EXPECTED[self.name]))}
        sources = sources_of(result.findings, self.name)
        update: dict[str, Any] = {"sources": sources}
        facts, dropped = await self._extract(state, company, result.findings, sources, update)
        notes = list(update.pop("notes", []))
        if dropped:
            notes.append(
                f"{self.name}: {len(dropped)} extracted fact(s) left out, their value is not "
                f"in the page they cite ({'; '.join(dropped[:3])})"
            )
        if notes:
            update["notes"] = notes
        return update | {self.name: Section(facts=facts)}

    async def _extract(
        self,
        state: ReportState,
        company: str,
        findings: ResearchFindings,
        sources: list[ReportSource],
        update: dict[str, Any],
    ) -> tuple[list[ReportFact], list[str]]:
        """The facts Claude extracted whose value the cited page states, and the ones
        left out (``label: value``); usage and Claude's notes go into ``update``."""
        urls = [source.url for source in sources]
        if self.llm is None:
            return _field_facts(findings, urls[:1]), []
        words = "Japanese" if state.language == "ja" else "English"
        try:
            reply = await self.llm.structured(
                agent=AGENTS[self.name].llm,
                system=_SYSTEM.format(agent=self.name),
                prompt=(
                    f"{fence('company', company)}\nToday's date: {state.started_at[:10]}.\n"
                    f"Findings:\n{_findings_text(findings)}\n\n"
                    f"Extract the {SEARCHES[self.name][1]}. Write each label in {words}; "
                    "copy each value as the finding writes it."
                ),
                schema=Extraction,
            )
        except LLMError as exc:
            if exc.usage.calls:  # answers that did not fit were paid for
                update["usage"] = {self.name: exc.usage}
            if exc.kind not in _RULES_TAKE_OVER:
                raise
            update["notes"] = [
                f"{self.name}: the LLM's answer could not be used ({exc.kind}); "
                "the facts are the search's own fields"
            ]
            return _field_facts(findings, urls[:1]), []
        update["usage"] = {self.name: reply.usage}
        if reply.note:
            update["notes"] = [reply.note]
        pages = _page_texts(findings)
        facts, dropped = [], []
        for i, item in enumerate(reply.value.facts):
            label, value = unescape(item.label), unescape(item.value)
            if item.source_url not in urls:
                continue
            if not in_source(value, pages.get(item.source_url, "")):
                dropped.append(f"{label}: {value}"[:80])
                continue
            fact = ReportFact(
                key=f"{self.name}_{i}", label=label, value=value, urls=[item.source_url]
            )
            facts.append(fact)
        return facts, dropped
