"""The offline (rule-based) version of every stage: no model, no network.

- **query**: the topic as written; web searches add "guide official documentation" and,
  broadened, "official documentation breaking changes" (the seed design's retry);
  document searches broaden by matching any term instead of all.
- **relevance**: a source is kept when it holds at least half of the topic's terms;
  its score is 0.75 x term coverage + 0.25 / rank.
- **analysis**: the source's sentences that hold topic terms, copied verbatim (so every
  quote is exact), sorted into steps, caveats and findings by their wording.
- **synthesis**: the facts of the best-ranked sources, each citing its source.
- **verification**: lexical support (``_text.SUPPORT_THRESHOLD``) between each claim and
  the best sentence of the source it cites.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from ._model import (
    Analysis,
    Claim,
    ClaimCheck,
    DeepState,
    Draft,
    Fact,
    Relevance,
    SectionName,
    Source,
)
from ._text import SUPPORT_THRESHOLD, coverage, normalise, sentences, support, terms

__all__ = [
    "RELEVANCE_CUTOFF",
    "analyse",
    "check_claims",
    "draft",
    "gap_query",
    "query_for",
    "relevance",
]

RELEVANCE_CUTOFF: Final = 0.5
"""Least term coverage (and least Claude score) for a source to be kept."""
MAX_FACTS: Final = 6
"""Facts kept per source."""
_WEB_FIRST: Final = "guide official documentation"
_WEB_RETRY: Final = "official documentation breaking changes"
_BULLET: Final = re.compile(r"^\s*(?:[-*•>]|\d+[.)])\s+")
_IMPERATIVE: Final = re.compile(
    r"^(?:first|then|next|finally|upgrade|update|replace|migrate|install|run|change|set|add|"
    r"remove|rename|use|enable|disable|configure|move|switch|check|review|test|create|"
    r"make sure|ensure|convert|apply|start|build|step \d+)\b",
    re.IGNORECASE,
)
_STEP: Final = re.compile(
    r"[,;]\s*(?:first\s+|then\s+)?(?:upgrade|update|replace|migrate|install|remove|rename|add|"
    r"change|run|set)\b|\byou (?:need|must|should|have) to\b|してください|手順",
    re.IGNORECASE,
)
_CAVEAT: Final = re.compile(
    r"\b(?:deprecated|breaking|no longer|not supported|unsupported|must not|cannot|can't|"
    r"beware|incompatible|limitation)\b|(?<!\bwe )\bremoved\b|^(?:warning|caution|note)\b"
    r"|注意|廃止|非推奨|できません|削除|互換性",
    re.IGNORECASE,
)
_ENDS: Final = re.compile(r"[.!?。！？:;)\]」]$")
_MARKUP: Final = re.compile(r"\*\*|`|(?<!\w)__(?!\w)")  # never the `__` of `__init__`
FactKind = Literal["step", "finding", "caveat"]


def query_for(state: DeepState, *, attempt: int) -> tuple[str, bool]:
    """The query of this attempt of the current round and whether it is broadened."""
    broadened = attempt > 1
    if state.round > 0 and state.gaps:
        return gap_query(state), True
    if state.mode == "web":
        return f"{state.topic} {_WEB_RETRY if broadened else _WEB_FIRST}", broadened
    return state.topic, broadened


def gap_query(state: DeepState) -> str:
    """The topic's terms plus the unsupported claims' own terms (at most 12 words)."""
    wanted = list(dict.fromkeys([*state.terms, *(t for gap in state.gaps for t in terms(gap))]))
    return " ".join(wanted[:12]) or state.topic


def relevance(topic_terms: list[str], candidates: list[Source]) -> list[Relevance]:
    """A verdict per candidate, in the order given."""
    verdicts = []
    for source in candidates:
        covered = coverage(topic_terms, f"{source.title} {source.text}")
        score = round(min(1.0, 0.75 * covered + 0.25 / max(source.rank, 1)), 3)
        keep = covered >= RELEVANCE_CUTOFF
        reason = f"{covered:.0%} of the topic's terms, rank {source.rank}"
        verdicts.append(Relevance(source=source.id, score=score, relevant=keep, reason=reason))
    return verdicts


def _kind(sentence: str) -> FactKind:
    """A step (an instruction, or a numbered item), a caveat, or a finding."""
    bare = _BULLET.sub("", sentence)
    if _IMPERATIVE.search(bare) or re.match(r"\s*\d+[.)]\s", sentence):
        return "step"
    if _CAVEAT.search(bare):
        return "caveat"
    return "step" if _STEP.search(bare) else "finding"


def _clean(sentence: str) -> str:
    return " ".join(_MARKUP.sub("", _BULLET.sub("", sentence)).split())


def analyse(source: Source, topic_terms: list[str]) -> Analysis:
    """The source's sentences that hold topic terms, best first, then in text order."""
    picked = []
    for order, sentence in enumerate(sentences(source.text)):
        text = sentence.text
        if text.lstrip().startswith(("#", "|")) or not 25 <= len(text) <= 400:
            continue
        if not _ENDS.search(text) and not _BULLET.match(text):
            continue  # a title or a label line, not a statement
        covered = coverage(topic_terms, text)
        if covered > 0:
            picked.append((covered, order, text))
    best = sorted(picked, key=lambda item: (-item[0], item[1]))[:MAX_FACTS]
    facts = []
    for _, _, text in sorted(best, key=lambda item: item[1]):
        quote = _BULLET.sub("", text)
        kind = _kind(text)
        facts.append(Fact(kind=kind, statement=_clean(text), quote=quote))
    return Analysis(source=source.id, facts=facts)


def draft(state: DeepState) -> Draft:
    """Claims from the analyses, best-ranked sources first: a three-sentence summary,
    key points, steps and caveats; every claim cites the source it came from."""
    ranked = {v.source: v.score for v in state.relevance if v.relevant}
    analyses = sorted(
        (a for a in state.analyses if a.error is None and a.facts),
        key=lambda a: -ranked.get(a.source, 0.0),
    )
    seen: set[str] = set()
    pools: dict[FactKind, list[tuple[str, str]]] = {"finding": [], "step": [], "caveat": []}
    for analysis in analyses:
        for fact in analysis.facts:
            key = normalise(fact.statement)
            if key not in seen:
                seen.add(key)
                pools[fact.kind].append((fact.statement, analysis.source))
    findings = pools["finding"]
    lead = [pair for i, pair in enumerate(findings) if i < 3]
    if not lead:
        lead = (pools["step"] + pools["caveat"])[:2]
    sections: list[tuple[SectionName, list[tuple[str, str]]]] = [
        ("summary", lead),
        ("key_points", findings[3:9]),
        ("steps", pools["step"][:8]),
        ("caveats", pools["caveat"][:5]),
    ]
    placed = [(section, text, sid) for section, pairs in sections for text, sid in pairs]
    claims = [
        Claim(id=f"C{i}", section=section, text=text, sources=[sid])
        for i, (section, text, sid) in enumerate(placed, 1)
    ]
    return Draft(claims=claims, method="rules")


def check_claims(state: DeepState, claims: list[Claim]) -> list[ClaimCheck]:
    """Per claim: lexical support against the sources it cites; supported (with the
    evidence sentence, verbatim, and its source) at ``SUPPORT_THRESHOLD`` or more."""
    checked: list[ClaimCheck] = []
    for claim in claims:
        best: tuple[float, str | None, str | None] = (0.0, None, None)
        missing = [sid for sid in claim.sources if state.source(sid) is None]
        for cited in claim.sources:
            source = state.source(cited)
            if source is None:
                continue
            found, sentence = support(claim.text, source.text)
            if sentence is not None and found > best[0]:
                best = (found, sentence.text, cited)
        score, evidence, sid = best
        if not claim.sources:
            reason = "cites no source"
        elif missing and sid is None:
            reason = f"cites {', '.join(missing)}, which this session did not retrieve"
        elif score >= SUPPORT_THRESHOLD:
            reason = f"{score:.0%} of its terms are in one passage of {sid}"
        else:
            reason = f"only {score:.0%} of its terms are in the cited source"
        supported = evidence is not None and score >= SUPPORT_THRESHOLD
        checked.append(
            ClaimCheck(
                claim=claim.id,
                text=claim.text,
                sources=claim.sources,
                supported=supported,
                evidence=evidence if supported else None,
                source=sid if supported else None,
                score=score,
                method="lexical",
                reason=reason,
            )
        )
    return checked
