"""The deep-research nodes: query_parser, search, relevance_filter, deep_analysis (one
parallel branch per source), synthesis and verification. The report node lives in
``_report.py``. Each node uses Claude when it has one and falls back to the rules
(``_rules``) when a call fails, saying so in the session's notes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from itertools import zip_longest
from typing import Any, Final, Literal

import structlog

from ..common.fence import unescape
from ..common.figures import missing_figures
from ..engine import NodeContext
from ..llm import LLM, LLMError, Usage
from ..sources import DataSourceError
from . import _claude as claude
from . import _rules as rules
from ._agent_table import AGENTS
from ._labels import label
from ._meaning import applies
from ._model import (
    MAX_SEARCH_ATTEMPTS,
    Analysis,
    ClaimCheck,
    DeepSource,
    DeepState,
    Draft,
    QueryRecord,
    QuotedFact,
    Relevance,
    SectionName,
    Verification,
)
from ._search import DocumentSearch, Found, TopicSearch, described
from ._session import write_stage
from ._text import locate, terms

__all__ = [
    "ANALYSIS_TIMEOUT",
    "Analyse",
    "QueryParser",
    "RelevanceFilter",
    "Search",
    "Synthesis",
    "Verify",
    "draft_markdown",
]

_log = structlog.get_logger(__name__)

ANALYSIS_TIMEOUT: Final = 120.0
"""Seconds one source's analysis may take before it is recorded as failed."""
SEARCH_LIMIT: Final = 8
MERGED_LIMIT: Final = 12
"""Candidates of a documents search by Claude's query and the question's own words."""
WORDS_ALONE: Final = label("en", "n_words_alone")
"""The note of a search of documents without an embedding model (in English)."""

Resolve = Callable[[DeepState], Awaitable[TopicSearch]]


def _spent(stage: str, started: float, usage: Usage | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"timings": {stage: round(time.perf_counter() - started, 4)}}
    if usage is not None:
        update["usage"] = {stage: usage}
    return update


def _noted(note: str | None) -> list[str]:
    """The LLM client's note on a reply (e.g. a raised output limit), for the notes."""
    return [note] if note else []


def _fallback(agent: str, exc: LLMError, how: str) -> str:
    """The note that the LLM's answer could not be used and what did the step instead;
    the same words for every source and round, so the report says it once."""
    return f"{agent}: the LLM's answer could not be used ({exc.kind}); {how}"


def _paid(exc: LLMError) -> Usage | None:
    """What a failed call cost (answers that did not fit are paid for), if anything."""
    return exc.usage if exc.usage.calls else None


class QueryParser:
    """Writes the round's query: the enhanced topic, a broadened retry, or the gaps."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        attempt = state.attempts + 1
        query, broadened = rules.query_for(state, attempt=attempt)
        method: Literal["rules", "llm"] = "rules"
        usage: Usage | None = None
        notes: list[str] = []
        if self.llm is not None:
            try:
                reply = await self.llm.structured(
                    agent=AGENTS["query_parser"].llm,
                    system=claude.QUERY_SYSTEM,
                    prompt=claude.query_prompt(state, broadened=broadened),
                    schema=claude.EnhancedQuery,
                )
                query = " ".join(reply.value.query.split()) or query
                method = "llm"
                usage = reply.usage
                notes += _noted(reply.note)
            except LLMError as exc:
                notes.append(_fallback("query_parser", exc, "used the rules"))
                usage = _paid(exc)
        purpose: Literal["topic", "gaps"] = "gaps" if state.round > 0 and state.gaps else "topic"
        record = QueryRecord(
            query=query,
            round=state.round,
            attempt=attempt,
            broadened=broadened,
            purpose=purpose,
            method=method,
        )
        all_queries = [q.model_dump() for q in [*state.queries, record]]
        await write_stage(state.session_dir, {"queries.json": all_queries})
        update = {"queries": [record], "terms": state.terms or terms(state.topic), "notes": notes}
        return update | _spent("query_parser", started, usage)


class Search:
    """Runs the latest query; numbers new sources ``S#`` (a source found again keeps its id)."""

    def __init__(self, resolve: Resolve) -> None:
        self.resolve = resolve

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        record = state.queries[-1]
        search = await self.resolve(state)
        notes: list[str] = []
        try:
            found = await search.search(
                record.query, limit=SEARCH_LIMIT, broadened=record.broadened
            )
            if _own_words_too(state, record, search):
                own = await search.search(
                    state.topic, limit=SEARCH_LIMIT, broadened=record.broadened
                )
                found = _merged(own, found)
        except DataSourceError as exc:
            found = []
            notes.append(f"search failed for {record.query!r}: {exc.message}")
        new, candidates = self._number(state, found, record.query)
        attempts = state.attempts + 1
        weighed: dict[str, Any] = {}
        if not state.weights and isinstance(search, DocumentSearch) and found:
            weights, names = await search.term_weights(state.topic)
            meaning = search.index.semantic if applies(state.topic) else None
            weighed = {"weights": weights, "names": names, "meaning": meaning}
            if search.index.semantic is None:
                notes.append(label(state.language, "n_words_alone"))
        update: dict[str, Any] = {
            "sources": new,
            "candidates": candidates,
            "attempts": attempts,
            "notes": notes,
            "searched_with": described(search, state.language),
        }
        update |= weighed
        out_of_tries = attempts >= MAX_SEARCH_ATTEMPTS
        if not candidates and out_of_tries and not state.sources and state.round == 0:
            update["outcome"] = "no_sources"
        every = [s.model_dump() for s in [*state.sources, *new]]
        await write_stage(state.session_dir, {"search_results.json": every})
        return update | _spent("search", started)

    @staticmethod
    def _number(
        state: DeepState, found: list[Found], query: str
    ) -> tuple[list[DeepSource], list[str]]:
        known = {(s.locator, s.position): s.id for s in state.sources}
        new: list[DeepSource] = []
        candidates: list[str] = []
        for rank, item in enumerate(found, 1):
            key = (item.locator, item.position)
            if key in known:
                candidates.append(known[key])
                continue
            sid = f"S{len(state.sources) + len(new) + 1}"
            known[key] = sid
            new.append(
                DeepSource(
                    id=sid,
                    kind=item.kind,
                    title=item.title,
                    locator=item.locator,
                    position=item.position,
                    heading=item.heading,
                    text=item.text,
                    snippet=item.snippet,
                    score=item.score,
                    similarity=item.similarity,
                    rank=rank,
                    query=query,
                )
            )
            candidates.append(sid)
        return new, list(dict.fromkeys(candidates))


def _own_words_too(state: DeepState, record: QueryRecord, search: TopicSearch) -> bool:
    """Whether the question's own words are searched beside the query Claude wrote: in
    documents (their words are the user's; the model may have rewritten them into words
    the files do not use), for the topic, when the query differs."""
    return (
        isinstance(search, DocumentSearch)
        and record.method == "llm"
        and record.purpose == "topic"
        and " ".join(record.query.lower().split()) != " ".join(state.topic.lower().split())
    )


def _merged(own: list[Found], rewritten: list[Found]) -> list[Found]:
    """The passages both searches found, each once, taken in turn from each (the
    question's own words' first), at most ``MERGED_LIMIT``."""
    seen: set[tuple[str, str | None]] = set()
    merged = []
    for pair in zip_longest(own, rewritten):
        for item in pair:
            if item is None:
                continue
            key = (item.locator, item.position)
            if key not in seen:
                seen.add(key)
                merged.append(item)
    return merged[:MERGED_LIMIT]


class RelevanceFilter:
    """Scores every candidate; keeps the relevant ones (rules: term coverage and rank)."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        judged = {v.source for v in state.relevance}
        fresh = [s for sid in state.candidates if sid not in judged and (s := state.source(sid))]
        verdicts = rules.relevance(state, fresh)
        usage, notes = None, []
        if self.llm is not None and fresh:
            try:
                reply = await self.llm.structured(
                    agent=AGENTS["relevance_filter"].llm,
                    system=claude.RELEVANCE_SYSTEM,
                    prompt=claude.relevance_prompt(state, fresh),
                    schema=claude.RatedSources,
                )
                verdicts, usage = _rated(verdicts, reply.value), reply.usage
                notes += _noted(reply.note)
            except LLMError as exc:
                notes.append(_fallback("relevance_filter", exc, "used the rules"))
                usage = _paid(exc)
        update: dict[str, Any] = {"relevance": verdicts, "notes": notes}
        if not state.analyses and not any(v.relevant for v in [*state.relevance, *verdicts]):
            update["outcome"] = "no_relevant"
        every = [v.model_dump() for v in [*state.relevance, *verdicts]]
        await write_stage(state.session_dir, {"relevance.json": every})
        return update | _spent("relevance_filter", started, usage)


def _rated(offline: list[Relevance], rated: claude.RatedSources) -> list[Relevance]:
    scores = {item.id: item for item in rated.results}
    verdicts = []
    for verdict in offline:
        item = scores.get(verdict.source)
        if item is None:
            verdicts.append(
                verdict.model_copy(
                    update={"relevant": False, "score": 0.0, "reason": "not rated by Claude"}
                )
            )
            continue
        keep = item.score >= rules.RELEVANCE_CUTOFF
        verdicts.append(
            Relevance(
                source=verdict.source,
                score=round(item.score, 3),
                relevant=keep,
                reason=item.reason[:200],
            )
        )
    return verdicts


def next_sources(state: DeepState) -> list[str]:
    """The relevant sources not analysed yet, best first, at most ``top_k``."""
    done = {a.source for a in state.analyses}
    relevant = sorted(
        (v for v in state.relevance if v.relevant and v.source not in done), key=lambda v: -v.score
    )
    return [v.source for v in relevant[: state.top_k]]


class Analyse:
    """One source's facts with exact quotes (a parallel branch; ``ctx.item`` is its ``S#``).
    A failure is recorded on the analysis, so the other branches' work stays."""

    def __init__(self, llm: LLM | None, timeout: float = ANALYSIS_TIMEOUT) -> None:
        self.llm = llm
        self.timeout = timeout

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        sid = str(ctx.item)
        source = state.source(sid)
        usage: Usage | None = None
        notes: list[str] = []
        try:
            if source is None:
                raise LookupError(f"source {sid} was not retrieved in this session")
            async with asyncio.timeout(self.timeout):
                analysis, usage = await self._analyse(state, source, notes)
        except Exception as exc:  # one source's failure must not sink the others
            _log.warning("deep analysis failed", source=sid, error=repr(exc))
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            analysis = Analysis(source=sid, error=message[:300])
        analysis = analysis.model_copy(update={"round": state.round})
        update = {"analyses": [analysis], "notes": notes}
        return update | _spent("deep_analysis", started, usage)

    async def _analyse(
        self, state: DeepState, source: DeepSource, notes: list[str]
    ) -> tuple[Analysis, Usage | None]:
        if self.llm is None:  # its sentences may be embedded: CPU work, off the loop
            return await asyncio.to_thread(rules.analyse, source, state), None
        try:
            reply = await self.llm.structured(
                agent=AGENTS["deep_analysis"].llm,
                system=claude.ANALYSIS_SYSTEM,
                prompt=claude.analysis_prompt(state, source),
                schema=claude.SourceFacts,
            )
        except LLMError as exc:
            _log.warning("deep analysis: Claude failed, used the rules", error=exc.message)
            notes.append(_fallback("deep_analysis", exc, "the rules analysed the source"))
            return rules.analyse(source, state), _paid(exc)
        facts, dropped = [], 0
        for fact in reply.value.facts[:8]:
            exact = locate(unescape(fact.quote), source.text)
            if exact is None or missing_figures(fact.statement, exact):
                dropped += 1  # not in the source, or a number the quote does not state
                continue
            facts.append(
                QuotedFact(kind=fact.kind, statement=" ".join(fact.statement.split()), quote=exact)
            )
        notes += [f"{source.id}: {note}" for note in _noted(reply.note)]
        return Analysis(source=source.id, facts=facts, dropped=dropped, method="llm"), reply.usage


def _with_marks(text: str, marks: str) -> str:
    """A claim and its ``[S#]`` marks, a step's code lines after them, indented."""
    first, _, code = text.partition("\n")
    lines = [f"    {line}" for line in code.split("\n")] if code else []
    return "\n".join([f"{first} {marks}".strip(), *lines])


def draft_markdown(draft: Draft, language: str) -> str:
    """The draft as Markdown with ``[S#]`` markers (``draft.md`` and the streamed text)."""
    titles: dict[SectionName, str] = {
        "summary": "Summary",
        "key_points": "Key points",
        "steps": "Steps",
        "caveats": "Caveats",
    }
    if language == "ja":
        titles = {"summary": "概要", "key_points": "要点", "steps": "手順", "caveats": "注意点"}
    parts = []
    for key, title in titles.items():
        claims = draft.section(key)
        if not claims:
            continue
        cite = ["".join(f"[{s}]" for s in c.sources) for c in claims]
        shown = [_with_marks(c.text, m) for c, m in zip(claims, cite, strict=True)]
        if key == "summary":
            body = " ".join(shown)
        else:
            marker = "1." if key == "steps" else "-"
            body = "\n".join(f"{marker} {line}" for line in shown)
        parts.append(f"## {title}\n{body}")
    return "\n\n".join(parts) + "\n"


class Synthesis:
    """Joins the analyses into a draft whose every sentence cites ``[S#]``; streams it."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        if state.outcome != "running" or not _new_evidence(state):
            return {}
        evidence = [a.model_dump() for a in state.analyses]
        await write_stage(state.session_dir, {"evidence.json": evidence})
        usage, notes = None, []
        draft: Draft | None = None
        if self.llm is not None:
            facts = [(f.kind, f.statement, a.source) for a in state.analyses for f in a.facts]
            try:
                reply = await self.llm.generate(
                    agent=AGENTS["synthesis"].llm,
                    system=claude.SYNTHESIS_SYSTEM,
                    prompt=claude.synthesis_prompt(state, facts),
                    on_token=lambda piece: ctx.emit("token", piece),
                )
                draft, usage = claude.parse_draft(reply.text), reply.usage
                notes += _noted(reply.note)
                if reply.truncated:  # its last line may stop mid-sentence: not a claim
                    draft = Draft(claims=draft.claims[:-1], method=draft.method)
            except LLMError as exc:
                notes.append(_fallback("synthesis", exc, "used the rules"))
                usage = _paid(exc)
        if draft is None:
            draft = rules.draft(state)
            for line in draft_markdown(draft, state.language).splitlines(keepends=True):
                ctx.emit("token", line)
        await write_stage(state.session_dir, {"draft.md": draft_markdown(draft, state.language)})
        update = {"draft": draft, "draft_round": state.round, "notes": notes}
        return update | _spent("synthesis", started, usage)


def _new_evidence(state: DeepState) -> bool:
    """Whether this round analysed anything (a gap round may find nothing new)."""
    return state.round == 0 or any(a.round == state.round for a in state.analyses)


class Verify:
    """Checks every claim against the passages it cites; sets the gaps for another round.
    A claim a previous round checked (same text, same sources) keeps its check: only new
    or changed claims are sent to Claude."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        started = time.perf_counter()
        claims = state.draft.claims if state.draft else []
        known = _checked(state)
        fresh = [c for c in claims if (c.text, tuple(c.sources)) not in known]
        usage, notes = None, []
        checks = {check.claim: check for check in rules.check_claims(state, fresh)}
        if self.llm is not None and fresh:
            try:
                reply = await self.llm.structured(
                    agent=AGENTS["verification"].llm,
                    system=claude.VERIFY_SYSTEM,
                    prompt=claude.verify_prompt(state, fresh),
                    schema=claude.ProposedQuotes,
                )
                quoted, usage = _quoted(state, fresh, reply.value), reply.usage
                checks = {check.claim: check for check in quoted}
                notes += _noted(reply.note)
            except LLMError as exc:
                notes.append(_fallback("verification", exc, "checked lexically"))
                usage = _paid(exc)
        every = [
            _numbers_checked(checks[c.id])
            if c.id in checks
            else known[(c.text, tuple(c.sources))].model_copy(update={"claim": c.id})
            for c in claims
        ]
        result = Verification(round=state.round + 1, checks=every, threshold=state.threshold)
        gaps = [check.text for check in every if not check.supported]
        rounds = [*state.verifications, result]
        await write_stage(state.session_dir, {"verification.json": verification_json(rounds)})
        update = {"verifications": [result], "gaps": gaps, "attempts": 0, "notes": notes}
        return update | _spent("verification", started, usage)


def _checked(state: DeepState) -> dict[tuple[str, tuple[str, ...]], ClaimCheck]:
    """Every claim an earlier round checked, by (text, cited sources): the latest check."""
    return {
        (check.text, tuple(check.sources)): check
        for verification in state.verifications
        for check in verification.checks
    }


def _numbers_checked(check: ClaimCheck) -> ClaimCheck:
    """``check``, unsupported when its evidence lacks a number the claim states."""
    if not check.supported or check.evidence is None:
        return check
    lacking = missing_figures(check.text, check.evidence)
    if not lacking:
        return check
    return check.model_copy(
        update={
            "supported": False,
            "score": 0.0,
            "reason": f"the evidence in {check.source} does not state {', '.join(lacking)}",
        }
    )


def _quoted(
    state: DeepState, claims: list[Any], proposed: claude.ProposedQuotes
) -> list[ClaimCheck]:
    by_claim = {item.claim: item for item in proposed.quotes}
    checks = []
    for claim in claims:
        item = by_claim.get(claim.id)
        source = state.source(item.source) if item and item.source else None
        quote = unescape(item.quote) if item and item.quote else None
        exact = locate(quote, source.text) if quote and source else None
        if item is None or not item.quote:
            reason = "Claude found no supporting sentence in the cited sources"
        elif item.source not in claim.sources:
            reason = f"the quote is from {item.source}, which the claim does not cite"
            exact = None
        elif exact is None:
            reason = f"the proposed quote does not occur in {item.source}"
        else:
            reason = f"quote found verbatim in {item.source}"
        checks.append(
            ClaimCheck(
                claim=claim.id,
                text=claim.text,
                sources=claim.sources,
                supported=exact is not None,
                evidence=exact,
                source=item.source if exact is not None and item else None,
                score=1.0 if exact is not None else 0.0,
                method="quote",
                reason=reason,
            )
        )
    return checks


def verification_json(rounds: list[Verification]) -> dict[str, Any]:
    """``verification.json``: the final round's counts and every round's checks."""
    last = rounds[-1]
    return {
        "rounds": len(rounds),
        "threshold": last.threshold,
        "claims": last.total,
        "supported": last.supported,
        "unsupported": last.total - last.supported,
        "ratio": last.ratio,
        "passed": last.passed,
        "history": [
            {
                "round": r.round,
                "claims": r.total,
                "supported": r.supported,
                "ratio": r.ratio,
                "checks": [c.model_dump() for c in r.checks],
            }
            for r in rounds
        ],
    }
