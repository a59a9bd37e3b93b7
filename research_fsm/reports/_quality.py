"""The synthesiser, the quality check, and the grounding rules both rely on."""

from __future__ import annotations

import re
import time
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from ..common.fence import data_rule, escape, fence
from ..engine import NodeContext
from ..llm import LLM, LLMError, keep_first
from ._agent_table import AGENTS
from ._labels import fact_label, text
from ._model import SECTIONS, Quality, ReportFact, ReportState, Section
from ._specialists import EXPECTED

__all__ = [
    "MAX_ITERATIONS",
    "QUALITY_SYSTEM",
    "QUALITY_TARGET",
    "WEIGHTS",
    "QualityCheck",
    "Synthesizer",
    "Verdict",
    "combined_quality",
    "quality_prompt",
    "rule_quality",
    "ungrounded_numbers",
]

QUALITY_TARGET: Final = 85
"""Score at which the report is good enough."""
MAX_ITERATIONS: Final = 2
"""Research iterations at most."""
WEIGHTS: Final[dict[str, int]] = {"financial": 40, "market": 25, "product": 25, "sources": 10}
"""Points per part of the rule-based score."""
_WEB_FACTS: Final = 4
"""Facts a web section needs for full marks (its keys are not fixed)."""
_NUMBER_RE: Final = re.compile(r"\d(?:[\d,.]*\d)?")


def _numbers(value: str) -> set[str]:
    return {match.replace(",", "") for match in _NUMBER_RE.findall(value)}


def ungrounded_numbers(prose: str, facts: list[ReportFact], company: str = "") -> list[str]:
    """Numbers in ``prose`` that no fact (nor the company's name) contains."""
    allowed = _numbers(company)
    for fact in facts:
        allowed |= _numbers(fact.value)
    return sorted(_numbers(prose) - allowed)


def all_facts(state: ReportState) -> list[ReportFact]:
    """Every specialist's facts, section by section."""
    return [fact for name in SECTIONS for fact in (getattr(state, name) or Section()).facts]


def _section_points(name: str, section: Section | None) -> tuple[int, list[str]]:
    weight = WEIGHTS[name]
    if section is None or section.status == "unavailable":
        return 0, [f"{name} (section unavailable)"]
    keys = {fact.key for fact in section.facts}
    expected = EXPECTED[name]  # type: ignore[index]
    if keys & set(expected):
        found = sum(1 for key in expected if key in keys)
        missing = [f"{name}: {key}" for key in expected if key not in keys]
        return round(weight * found / len(expected)), missing
    points = round(weight * min(1.0, len(section.facts) / _WEB_FACTS))
    return points, [] if points == weight else [f"{name}: more facts"]


def rule_quality(state: ReportState) -> Quality:
    """The rule-based score: coverage of each section, plus cited sources."""
    breakdown: dict[str, int] = {}
    missing: list[str] = []
    for name in SECTIONS:
        breakdown[name], lacking = _section_points(name, getattr(state, name))
        missing += lacking
    urls = {url for fact in all_facts(state) for url in fact.urls}
    breakdown["sources"] = min(WEIGHTS["sources"], 5 * len({s.url for s in state.sources}))
    if not urls:
        breakdown["sources"] = 0
        missing.append("sources: no fact is sourced")
    score = sum(breakdown.values())
    return Quality(score=score, breakdown=breakdown, maximum=dict(WEIGHTS), missing=missing)


class Verdict(BaseModel):
    """Claude's verdict on a company report's facts and sources, along design 004's
    criteria (completeness 40, accuracy 30, depth 30)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    completeness: int = Field(ge=0, le=40)
    """0-40: coverage of the key topics (company overview, financial metrics, market
    position, products and services)."""
    accuracy: int = Field(ge=0, le=30)
    """0-30: source quality (number and diversity of the sources; every fact cites a
    source that can state it)."""
    depth: int = Field(ge=0, le=30)
    """0-30: specific figures rather than vague statements, recent information, industry
    context."""
    missing: Annotated[list[str], Field(max_length=5), keep_first(5)] = Field(default_factory=list)
    """What the report lacks most, each as a few English words to search for (e.g.
    "revenue guidance"); at most five, none when nothing important is missing."""

    @property
    def score(self) -> int:
        """The sum of the three criteria, 0-100."""
        return self.completeness + self.accuracy + self.depth


QUALITY_SYSTEM: Final = (
    "You score a company report's research 0-100 along three criteria: completeness "
    "(0-40: company overview, financial metrics, market position, products and services), "
    "accuracy (0-30: number and diversity of the sources, every fact citing one) and depth "
    "(0-30: specific figures rather than vague statements, recent information, industry "
    "context). Judge the facts and the sources listed; list what is missing most. "
    + data_rule("report")
)


def quality_prompt(state: ReportState, rules: Quality) -> str:
    """The report's facts section by section, each with the ids of its sources, and the
    sources (title and URL): what Claude judges. The summary is not in it (its length
    must not decide the score)."""
    sources = {source.url: source for source in state.sources}
    ids = {url: f"S{i}" for i, url in enumerate(sources, start=1)}
    lines = [f"Company: {escape(state.company or state.query)}"]
    for name in SECTIONS:
        section = getattr(state, name) or Section()
        lines.append(f"## {name}" + (" (unavailable)" if section.status != "ok" else ""))
        for fact in section.facts:
            cites = "".join(f"[{ids[url]}]" for url in fact.urls if url in ids) or "[no source]"
            computed = (
                f" (computed from {', '.join(fact.computed_from)})" if fact.computed_from else ""
            )
            label = fact_label("en", fact.key, fact.label)
            lines.append(f"- {escape(label)}: {escape(fact.value)}{computed} {cites}")
        if not section.facts:
            lines.append("- (nothing found)")
    lines.append("## sources")
    lines += [f"[{ids[url]}] {escape(s.title)} — {escape(url)}" for url, s in sources.items()]
    body = "\n".join(lines)
    lacking = "; ".join(rules.missing) or "nothing"
    return (
        f"<report>\n{body}\n</report>\n"
        f"The rules' coverage check: {rules.score}/100; fields not found: {lacking}."
    )


def combined_quality(rules: Quality, verdict: Verdict) -> Quality:
    """The mean of the rules' score and Claude's; what is missing from both."""
    missing = list(dict.fromkeys([*verdict.missing, *rules.missing]))
    return rules.model_copy(
        update={
            "score": round((rules.score + verdict.score) / 2),
            "missing": missing,
            "method": "combined",
            "rule_score": rules.score,
            "llm_score": verdict.score,
            "criteria": {
                "completeness": verdict.completeness,
                "accuracy": verdict.accuracy,
                "depth": verdict.depth,
            },
        }
    )


def _template_summary(state: ReportState) -> str:
    facts = {fact.key: fact.value for fact in all_facts(state)}
    lang, company = state.language, state.company or state.query
    parts = []
    if "headquarters" in facts:
        parts.append(text(lang, "sentence_hq", company=company, hq=facts["headquarters"]))
    if "revenue" in facts and "net_income" in facts:
        parts.append(
            text(lang, "sentence_money", revenue=facts["revenue"], net=facts["net_income"])
        )
    if "net_margin" in facts:
        parts.append(text(lang, "sentence_margin", margin=facts["net_margin"]))
    if "peer_position" in facts:
        parts.append(facts["peer_position"])
    if "products" in facts:
        products = text(lang, "list_sep").join(facts["products"].split(", ")[:5])
        parts.append(text(lang, "sentence_products", products=products))
    if "key_people" in facts:
        parts.append(text(lang, "sentence_people", people=facts["key_people"]))
    if not parts:  # web facts without fixed keys
        parts = [f"{fact_label(lang, f.key, f.label)}: {f.value}." for f in all_facts(state)[:6]]
    return ("" if lang == "ja" else " ").join(parts)


class Synthesizer:
    """Writes the summary from the specialists' facts only (Claude's prose is checked:
    a number no fact contains sends it back to the template)."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: ReportState, ctx: NodeContext) -> dict[str, Any]:
        start = time.perf_counter()
        update: dict[str, Any] = {"summary": _template_summary(state)}
        if self.llm is not None and all_facts(state):
            try:
                update |= await self._write(state)
            except LLMError as exc:
                update["notes"] = [
                    f"synthesizer: the LLM failed ({exc.kind}); the summary is the rule-based one"
                ]
                if exc.usage.calls:
                    update["usage"] = {"synthesizer": exc.usage}
        update["timings"] = {"synthesizer": time.perf_counter() - start}
        return update

    async def _write(self, state: ReportState) -> dict[str, Any]:
        assert self.llm is not None
        facts = all_facts(state)
        listing = "\n".join(f"- {fact_label('en', f.key, f.label)}: {f.value}" for f in facts)
        language = "Japanese" if state.language == "ja" else "English"
        reply = await self.llm.generate(
            agent=AGENTS["synthesizer"].llm,
            system=(
                f"Write a 3-5 sentence summary of the company named in <company> in {language} "
                "from the <facts> only. Do not add any number that is not in the facts. "
                + data_rule("company", "facts")
            ),
            prompt=(
                f"{fence('company', state.company or state.query)}\n"
                f"Today's date: {state.started_at[:10]}.\n{fence('facts', listing)}"
            ),
        )
        update: dict[str, Any] = {"usage": {"synthesizer": reply.usage}}
        notes = [reply.note] if reply.note else []
        bad = ungrounded_numbers(reply.text, facts, state.company or "")
        if bad or reply.truncated:
            why = (
                f"had numbers no source gives ({', '.join(bad)})"
                if bad
                else "was cut at the output limit"
            )
            notes.append(f"synthesizer: the LLM's summary {why}; the rule-based summary is used")
        else:
            update["summary"] = reply.text.strip()
        if notes:
            update["notes"] = notes
        return update


class QualityCheck:
    """Scores the report 0-100 and lists what is missing for the next iteration: the
    rules' coverage score, averaged with Claude's score of the facts and their sources
    along design 004's criteria when there is Claude (the rules alone when it fails)."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: ReportState, ctx: NodeContext) -> dict[str, Any]:
        start = time.perf_counter()
        quality = rule_quality(state)
        update: dict[str, Any] = {}
        if self.llm is not None:
            try:
                reply = await self.llm.structured(
                    agent=AGENTS["quality"].llm,
                    system=QUALITY_SYSTEM,
                    prompt=quality_prompt(state, quality),
                    schema=Verdict,
                )
                update["usage"] = {"quality": reply.usage}
                if reply.note:
                    update["notes"] = [reply.note]
                quality = combined_quality(quality, reply.value)
            except LLMError as exc:
                update["notes"] = [
                    f"quality: the LLM's answer could not be used ({exc.kind}); scored by the rules"
                ]
                if exc.usage.calls:
                    update["usage"] = {"quality": exc.usage}
        update |= {"quality": quality, "gaps": list(quality.missing)}
        update["timings"] = {"quality": time.perf_counter() - start}
        return update
