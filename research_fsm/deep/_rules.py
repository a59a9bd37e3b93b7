"""The offline (rule-based) version of every stage: no model, no network.

- **query**: the topic as written; web searches add "guide official documentation" and,
  broadened, "official documentation breaking changes" (the seed design's retry);
  document searches broaden by matching any term instead of all.
- **relevance**: a passage is kept when it answers the question (``_answer.passage_score``:
  weighted coverage of the question's salient terms, proximity, answer cues, headings) at
  ``RELEVANCE_CUTOFF`` or more; when none does, the report says the documents do not
  answer it.
- **analysis**: the passage's units (sentences, or a step with its code) that answer the
  question best, copied verbatim (so every quote is exact), sorted into steps, caveats and
  findings by their wording.
- **synthesis**: answer first: the best unit of all (one per side for a comparison), then
  the other units that scored, each citing its source.
- **verification**: the claim's own quote when it is verbatim in the cited source, else
  lexical support (``_text.SUPPORT_THRESHOLD``) against the source's best sentence.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from ..common.text import is_japanese
from ..documents import SYMBOL
from ._answer import (
    ANSWER_CUTOFF,
    Question,
    Unit,
    has_number,
    one_line_blocks,
    parse_question,
    passage_score,
    refers_back,
    side_scores,
    stems,
    with_next,
    with_previous,
)
from ._meaning import blend, by_meaning
from ._model import (
    Analysis,
    Claim,
    ClaimCheck,
    DeepSource,
    DeepState,
    Draft,
    QuotedFact,
    Relevance,
    SectionName,
)
from ._search import HEADING_PATH
from ._text import SUPPORT_THRESHOLD, coverage, normalise, quote_in, quote_of, support, terms

__all__ = [
    "RELEVANCE_CUTOFF",
    "analyse",
    "check_claims",
    "draft",
    "gap_query",
    "query_for",
    "relevance",
]

RELEVANCE_CUTOFF: Final = ANSWER_CUTOFF
"""Least score (the rules' ``passage_score``, or Claude's) for a source to be kept."""
MAX_FACTS: Final = 6
"""Facts kept per source."""
MIN_SCORE: Final = 0.45
"""Least score of a fact to be a claim beside the answer."""
KEEP_RATIO: Final = 0.6
"""...and at least this share of the answer's score."""
SIDE_GAP: Final = 0.01
"""How far under each side's best passage the others of a comparison rank."""
MIN_GAIN: Final = 0.2
"""Share of the question's weighted focus terms a fact must add to join the answer."""
MAX_COMPLETING: Final = 2
"""Facts joined to the answer for the parts it leaves open."""
_WORDS: Final = re.compile(r"\S*[^\W\d_]\S*")
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


def _context(source: DeepSource) -> str:
    """What a passage sits in: its document's title, its heading and its file's name."""
    name = source.locator.rsplit("/", 1)[-1].rsplit(".", 1)[0] if source.kind == "file" else ""
    return f"{source.title} {source.heading or ''} {name}"


def _lines(source: DeepSource) -> bool:
    """Whether the source's text has a line per block (``_answer.one_line_blocks``)."""
    return source.kind == "file" and one_line_blocks(source.locator)


def _headings(source: DeepSource) -> frozenset[str]:
    """The titles of the passage's heading path."""
    return frozenset(source.heading.split(HEADING_PATH)) if source.heading else frozenset()


def _similarity(state: DeepState, source: DeepSource) -> float | None:
    """How close ``source`` is in meaning to the question (when the search that found it
    searched the question itself)."""
    if source.similarity is None or source.query.strip() != state.topic.strip():
        return None
    return source.similarity


def relevance(state: DeepState, candidates: list[DeepSource]) -> list[Relevance]:
    """A verdict per candidate, in the order given: kept when the passage answers the
    question at ``RELEVANCE_CUTOFF`` or more (``_answer.passage_score``)."""
    question = parse_question(state.topic, state.names)
    verdicts = []
    for source in candidates:
        score, _, _ = passage_score(
            question,
            source.text,
            _context(source),
            state.weights,
            headings=_headings(source),
            lines=_lines(source),
        )
        if state.meaning is not None:
            score = blend(score, _similarity(state, source))
        score = round(max(0.0, min(1.0, score)), 3)
        keep = score >= RELEVANCE_CUTOFF
        reason = (
            f"covers the question's key terms at {score:.0%} "
            f"(at least {RELEVANCE_CUTOFF:.0%} is about it), rank {source.rank}"
        )
        verdicts.append(Relevance(source=source.id, score=score, relevant=keep, reason=reason))
    if question.kind == "compare":
        _each_side(state, question, candidates, verdicts)
    return verdicts


def _each_side(
    state: DeepState, question: Question, candidates: list[DeepSource], verdicts: list[Relevance]
) -> None:
    """A comparison analyses each side's best passage first: those score 1, the others
    at most ``1 - SIDE_GAP`` (kept or not as their own score says)."""
    per_side = [
        side_scores(question, source.text, _context(source), state.weights, lines=_lines(source))
        for source in candidates
    ]
    firsts = set()
    for side in range(len(question.sides)):
        best = max(range(len(candidates)), key=lambda i: per_side[i][side], default=None)
        if best is not None and per_side[best][side] >= RELEVANCE_CUTOFF:
            firsts.add(best)
    for index, verdict in enumerate(verdicts):
        if index in firsts:
            reason = f"{verdict.reason}; the best passage for one side of the comparison"
            update = {"score": 1.0, "relevant": True, "reason": reason}
        else:
            update = {"score": min(verdict.score, round(1.0 - SIDE_GAP, 3))}
        verdicts[index] = verdict.model_copy(update=update)


def _kind(sentence: str, code: bool = False) -> FactKind:
    """A step (an instruction, a numbered item, a command), a caveat, or a finding."""
    bare = _BULLET.sub("", sentence)
    if code or _IMPERATIVE.search(bare) or re.match(r"\s*\d+[.)]\s", sentence):
        return "step"
    if _CAVEAT.search(bare):
        return "caveat"
    return "step" if _STEP.search(bare) else "finding"


def analyse(source: DeepSource, state: DeepState) -> Analysis:
    """The source's units that answer the question best (at most ``MAX_FACTS``), in
    text order; each quote is the passage's own text, each score how well it answers."""
    question = parse_question(state.topic, state.names)
    overall, found, scored = passage_score(
        question,
        source.text,
        _context(source),
        state.weights,
        headings=_headings(source),
        lines=_lines(source),
    )
    if state.meaning is not None:  # the passage's score as relevance gave it
        overall = blend(overall, _similarity(state, source))
        if _similarity(state, source) is not None:
            scored = by_meaning(state.topic, [unit.statement for unit in found], scored)
    best = sorted((i for i in range(len(found)) if scored[i] > 0), key=lambda i: (-scored[i], i))
    chosen = sorted(best[:MAX_FACTS])
    merged = {
        index - 1: index
        for index in chosen
        if index - 1 in chosen and with_previous(found, index, source.text) is not found[index]
    }  # "X. It ..." chosen with X: one fact, the one that says both
    taken: list[tuple[Unit, float]] = []
    for index in chosen:
        if index in merged:
            continue
        unit = with_previous(found, index, source.text)
        score = max(scored[index], scored[index - 1]) if index - 1 in merged else scored[index]
        if unit is found[index]:
            unit = with_next(question, found, index, source.text)
        taken.append((unit, score))
    facts = [
        QuotedFact(
            kind=_kind(unit.statement, unit.code),
            statement=unit.statement,
            quote=quote_of(source.text, unit.start, unit.end),
            score=round(0.7 * max(score, _within(unit, taken)) + 0.3 * overall, 4),
        )
        for number, (unit, score) in enumerate(taken)
        if not _inside(number, taken)
    ]
    return Analysis(source=source.id, facts=facts)


def _inside(number: int, taken: list[tuple[Unit, float]]) -> bool:
    """Whether another unit of ``taken`` spans unit ``number`` (a reference entry's head
    that a sentence under it carries; the same span, an earlier one): one fact says both."""
    unit = taken[number][0]
    for other_number, (other, _) in enumerate(taken):
        if other_number == number or not (other.start <= unit.start and unit.end <= other.end):
            continue
        if (other.start, other.end) != (unit.start, unit.end) or other_number < number:
            return True
    return False


def _within(unit: Unit, taken: list[tuple[Unit, float]]) -> float:
    """The best score of the units of ``taken`` that ``unit`` spans (its own included)."""
    return max(
        (score for other, score in taken if unit.start <= other.start and other.end <= unit.end),
        default=0.0,
    )


def _sides(state: DeepState, question: Question, ranked: list[tuple[QuotedFact, str]]) -> list[int]:
    """For a comparison: the best fact of each side (by its words, its source's title and
    file name), as indexes into ``ranked``."""
    chosen: list[int] = []
    for side in question.sides:
        for index, (fact, sid) in enumerate(ranked):
            source = state.source(sid)
            around = stems(f"{fact.statement} {_context(source) if source else ''}")
            if index not in chosen and around & side:
                chosen.append(index)
                break
    return chosen


def _complete(
    question: Question,
    ranked: list[tuple[QuotedFact, str]],
    lead: list[int],
    weights: dict[str, float],
) -> list[int]:
    """Facts that answer the parts of the question the lead leaves open (a question asked
    of two things, an answer spread over files), as indexes into ``ranked``: each adds at
    least ``MIN_GAIN`` of the question's weighted focus terms."""
    focus = set(question.focus())
    total = sum(weights.get(t, 1.0) for t in focus)
    covered: set[str] = set().union(*(stems(ranked[i][0].statement) for i in lead))
    added: list[int] = []
    for _ in range(MAX_COMPLETING):
        best_gain, best = 0.0, -1
        for index, (fact, _) in enumerate(ranked):
            if index in lead or index in added:
                continue
            new = (stems(fact.statement) - covered) & focus
            gain = sum(weights.get(t, 1.0) for t in new) / total if total else 0.0
            if gain > best_gain:
                best_gain, best = gain, index
        if best < 0 or best_gain < MIN_GAIN:
            break
        added.append(best)
        covered |= stems(ranked[best][0].statement)
    return added


LEAD_RATIO: Final = 0.9
"""The facts that may lead the answer: those scoring at least this share of the best."""
_PATH_OR_NAME: Final = re.compile(
    r"(?:^|\s)(?:/[\w.-]+){2,}|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b\w+(?:\+\w+)+\b|`[^`]+`"
)
"""A path, a macro or constant name (``PDF_LINK``), a key chord (``Control+t``), code."""
_UNFINISHED: Final = re.compile(
    r"(?:[:：,]|\b(?:with|the|to|of|and|or|a|an|by|for|in|is|are|as|from))\s*$", re.IGNORECASE
)
"""The end of a lead-in that says nothing without what follows it."""


def _unfinished(statement: str) -> bool:
    """A lead-in cut before what it introduces ("The colour of links is set with"); a step
    with its code after its ":" is finished."""
    return "\n" not in statement and _UNFINISHED.search(statement) is not None


def _shaped(question: Question, statement: str) -> bool:
    """Whether a statement has what the question's kind asks for: a command or code for
    "how do I", a value (a number, a path, a name, a key) for "which / what is the
    default", a statement of its own (no code, no lead-in) for "what is"."""
    if question.kind == "howto":
        return "\n" in statement or bool(
            SYMBOL.search(statement) or _PATH_OR_NAME.search(statement)
        )
    if question.kind == "value":
        return has_number(statement) or bool(
            SYMBOL.search(statement) or _PATH_OR_NAME.search(statement)
        )
    if question.kind == "define":
        return "\n" not in statement and not refers_back(statement)
    return True


def _lead(question: Question, ranked: list[tuple[QuotedFact, str]]) -> int:
    """The fact that leads the answer, as an index into ``ranked`` (best first): of those
    scoring at least ``LEAD_RATIO`` of the best, the first whose shape fits the kind of
    question (``_shaped``) and that is a finished statement; else the best one."""
    floor = ranked[0][0].score * LEAD_RATIO
    near = [i for i, (fact, _) in enumerate(ranked) if fact.score >= floor]
    finished = [i for i in near if not _unfinished(ranked[i][0].statement)] or [0]
    return next((i for i in finished if _shaped(question, ranked[i][0].statement)), finished[0])


def _few_words(statement: str) -> bool:
    """Fewer than three words (a Japanese sentence, written without spaces, counted by
    its terms)."""
    few = len(_WORDS.findall(statement)) < 3
    return few and (not is_japanese(statement) or len(terms(statement)) < 3)


def draft(state: DeepState) -> Draft:
    """Answer first: the summary is the unit that answers the question best, in its own
    words (for a comparison, the best one of each side); then the other units of the
    passages that scored, by kind, best first; every claim cites its source."""
    question = parse_question(state.topic, state.names)
    relevant = {v.source for v in state.relevance if v.relevant}
    ranked: list[tuple[QuotedFact, str]] = []
    seen: set[str] = set()
    pool = [
        (fact, analysis.source)
        for analysis in state.analyses
        if analysis.error is None and analysis.source in relevant
        for fact in analysis.facts
    ]
    for fact, sid in sorted(pool, key=lambda pair: -pair[0].score):
        key = normalise(fact.statement)
        if key not in seen:
            seen.add(key)
            ranked.append((fact, sid))
    if not ranked:
        return Draft(claims=[], method="rules")
    lead = _sides(state, question, ranked) if question.kind == "compare" else []
    lead = lead if len(lead) >= 2 else [_lead(question, ranked)]
    lead += _complete(question, ranked, lead, state.weights)
    floor = max(MIN_SCORE, ranked[0][0].score * KEEP_RATIO)
    rest = [i for i in range(len(ranked)) if i not in lead and ranked[i][0].score >= floor]
    pools: dict[FactKind, list[tuple[str, str]]] = {"finding": [], "step": [], "caveat": []}
    for index in rest:
        fact, sid = ranked[index]
        if fact.statement.endswith((":", "：")) or _few_words(fact.statement):
            continue  # a lead-in without its list, a two-word label: nothing said alone
        pools[fact.kind].append((fact.statement, sid))
    sections: list[tuple[SectionName, list[tuple[str, str]]]] = [
        ("summary", [(ranked[i][0].statement, ranked[i][1]) for i in lead]),
        ("key_points", pools["finding"][:5]),
        ("steps", pools["step"][:5]),
        ("caveats", pools["caveat"][:3]),
    ]
    placed = [(section, text, sid) for section, pairs in sections for text, sid in pairs]
    claims = [
        Claim(id=f"C{i}", section=section, text=text, sources=[sid])
        for i, (section, text, sid) in enumerate(placed, 1)
    ]
    return Draft(claims=claims, method="rules")


def _own_quote(state: DeepState, claim: Claim, sid: str, text: str) -> tuple[float, str | None]:
    """The quote the analysis of ``sid`` made this claim from, when it is verbatim in the
    source, and the share of the claim's terms it holds."""
    for analysis in state.analyses:
        if analysis.source != sid:
            continue
        for fact in analysis.facts:
            if fact.statement == claim.text and quote_in(fact.quote, text):
                return coverage(terms(claim.text), fact.quote), fact.quote
    return 0.0, None


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
            own, quote = _own_quote(state, claim, cited, source.text)
            if quote is not None and own >= SUPPORT_THRESHOLD and own > best[0]:
                best = (own, quote, cited)
                continue
            found, sentence = support(claim.text, source.text, lines=_lines(source))
            if sentence is not None and found > best[0]:
                best = (found, quote_of(source.text, sentence.start, sentence.end), cited)
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
