"""The Claude version of each stage: prompts, reply schemas and the parsing of replies.

Retrieved text goes into prompts inside ``<source>`` fences (``common.fence``: escaped,
so a page cannot close its fence) with the instruction that it is data; whatever Claude
answers is checked by code: quotes must occur verbatim in the source they name, with
every number of the claim, ``[S#]`` ids must be ones this session retrieved. The prompts
that reason about time carry the session's date.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..common.fence import data_rule, fence
from ..llm import keep_first
from ._model import Claim, DeepSource, DeepState, Draft, SectionName
from ._text import unfenced

__all__ = [
    "ANALYSIS_SYSTEM",
    "QUERY_SYSTEM",
    "RELEVANCE_SYSTEM",
    "SYNTHESIS_SYSTEM",
    "VERIFY_SYSTEM",
    "EnhancedQuery",
    "ProposedQuotes",
    "RatedSources",
    "SourceFacts",
    "analysis_prompt",
    "parse_draft",
    "passages",
    "query_prompt",
    "relevance_prompt",
    "synthesis_prompt",
    "verify_prompt",
]

MAX_SOURCE_PROMPT_CHARS: Final = 12_000
"""Characters of one source put in an analysis prompt (the verifier sees the same window)."""
QUOTE_CONTEXT: Final = 600
"""Characters the verifier sees either side of each quote analysis took."""
RELEVANCE_CHARS: Final = 800
"""Characters of a source's text a relevance prompt shows when it has no search snippet."""
_DATA_RULE: Final = data_rule("topic", "source", "facts", "claims", "queries")

QUERY_SYSTEM: Final = (
    "You turn a research topic into one search query that finds authoritative sources "
    "(official documentation, guides, release notes). Keep the topic's key terms. " + _DATA_RULE
)
RELEVANCE_SYSTEM: Final = (
    "You rate search results for a research topic: 1.0 = directly about the topic and "
    "authoritative, 0.0 = unrelated, an advertisement or spam. " + _DATA_RULE
)
ANALYSIS_SYSTEM: Final = (
    "You extract facts about a research topic from one source. Every fact needs a quote "
    "copied character for character from the source (one or two full sentences); a fact "
    "without such a quote is discarded. " + _DATA_RULE
)
SYNTHESIS_SYSTEM: Final = (
    "You write a research brief from extracted facts. Every sentence and bullet ends with "
    "the [S#] ids of the sources that state it, and uses only those facts. " + _DATA_RULE
)
VERIFY_SYSTEM: Final = (
    "You check claims against the sources they cite. For each claim, copy from one cited "
    "source the exact words (a full sentence) that support it, or give null when no "
    "sentence does. Never paraphrase a quote. " + _DATA_RULE
)


COMPUTED_RULE: Final = (
    "Every number you state must be written in the source's text; a number you "
    "calculate from such numbers is allowed only with its calculation right after it, "
    "as (computed: EXPRESSION) using + - * / and parentheses on numbers the source "
    "states, e.g. 'grew 10% (computed: (110 - 100) / 100)'."
)
"""How a fact or claim labels a number it calculates (``common.figures.computed``)."""

_SCHEMA: Final = ConfigDict(use_attribute_docstrings=True)
MAX_FACTS: Final = 8
"""Facts one source's analysis returns at most."""
MAX_RATED: Final = 32
"""Ratings one relevance answer holds at most (a search returns fewer results)."""
MAX_QUOTES: Final = 64
"""Quotes one verification answer holds at most (one per claim)."""


class EnhancedQuery(BaseModel):
    """The query parser's answer."""

    model_config = _SCHEMA

    query: str = Field(max_length=400)
    """The search query (at most 400 characters)."""


class RatedSource(BaseModel):
    """One result's rating."""

    model_config = _SCHEMA

    id: str
    """The result's ``S#`` id."""
    score: float = Field(ge=0.0, le=1.0)
    """Relevance, 0-1."""
    reason: str = ""
    """A few words why."""


class RatedSources(BaseModel):
    """The relevance filter's answer."""

    model_config = _SCHEMA

    results: Annotated[list[RatedSource], Field(max_length=MAX_RATED), keep_first(MAX_RATED)]
    """One rating per result."""


class ProposedFact(BaseModel):
    """One fact Claude found."""

    model_config = _SCHEMA

    kind: Literal["step", "finding", "caveat"]
    """Step to take, finding, or caveat."""
    statement: str
    """The fact in one sentence."""
    quote: str
    """Exact words from the source, copied character for character in its language."""


class SourceFacts(BaseModel):
    """The deep analysis' answer."""

    model_config = _SCHEMA

    facts: Annotated[list[ProposedFact], Field(max_length=MAX_FACTS), keep_first(MAX_FACTS)]
    """The facts, at most eight."""


class ProposedQuote(BaseModel):
    """Claude's evidence for one claim."""

    model_config = _SCHEMA

    claim: str
    """The claim's ``C#`` id."""
    source: str | None = None
    """The cited ``S#`` the quote is from."""
    quote: str | None = None
    """Exact supporting words, or null."""


class ProposedQuotes(BaseModel):
    """The verifier's answer."""

    model_config = _SCHEMA

    quotes: Annotated[list[ProposedQuote], Field(max_length=MAX_QUOTES), keep_first(MAX_QUOTES)]
    """One per claim."""


def _source_block(source: DeepSource, text: str) -> str:
    where = f"{source.locator} ({source.position})" if source.position else source.locator
    return fence("source", text, id=source.id, title=source.title, at=where)


def _today(state: DeepState) -> str:
    return f"Today's date: {state.started_at[:10]}."


def _language(state: DeepState) -> str:
    return "Japanese" if state.language == "ja" else "English"


def _topic(state: DeepState) -> str:
    """The user's topic, fenced: it is what to research, never instructions."""
    return fence("topic", state.topic)


def query_prompt(state: DeepState, *, broadened: bool) -> str:
    """Ask for the round's query (broader on a retry; aimed at the gaps after verification)."""
    parts = [_topic(state), _today(state)]
    if state.gaps:
        parts.append("Find sources for these claims that could not be verified:")
        parts.append(fence("claims", "\n".join(f"- {gap}" for gap in state.gaps[:6])))
    if broadened:
        tried = "\n".join(q.query for q in state.queries[-2:])
        parts.append("Earlier queries found too little; write a broader one. They were:")
        parts.append(fence("queries", tried))
    return "\n".join(parts)


def relevance_prompt(state: DeepState, candidates: list[DeepSource]) -> str:
    """The topic and each candidate's title and search snippet (the search's own
    query-focused extract; a source without one shows its opening)."""
    blocks = "\n".join(
        _source_block(source, source.snippet or source.text[:RELEVANCE_CHARS])
        for source in candidates
    )
    return (
        f"{_topic(state)}\n{_today(state)} Prefer current sources when the topic is "
        f"about recent events.\nRate every result by its id from its title and snippet.\n"
        f"{blocks}"
    )


def analysis_prompt(state: DeepState, source: DeepSource) -> str:
    """One source to analyse."""
    return (
        f"{_topic(state)}\nExtract up to eight facts (steps, findings, caveats) about "
        f"the topic from this source. {COMPUTED_RULE}\n"
        f"{_source_block(source, source.text[:MAX_SOURCE_PROMPT_CHARS])}"
    )


def synthesis_prompt(state: DeepState, facts: Sequence[tuple[str, str, str]]) -> str:
    """The facts (kind, statement, S#) and the format to write in."""
    lines = [f"- ({kind}) {statement} [{sid}]" for kind, statement, sid in facts]
    return (
        f"{_topic(state)}\n{_today(state)}\nWrite in {_language(state)}. Facts:\n"
        + fence("facts", "\n".join(lines))
        + "\n\nAnswer in exactly this Markdown format:\n## Summary\n(2-4 sentences, each "
        "ending with [S#])\n## Key points\n- point [S#]\n## Steps\n1. step [S#]\n## Caveats\n"
        "- caveat [S#]\nKeep these four headings exactly as written here, in English, "
        f"whatever the language of the text; write every sentence in {_language(state)}. "
        "Leave a section empty when no fact belongs in it. " + COMPUTED_RULE
    )


def passages(state: DeepState, source: DeepSource) -> str:
    """What the verifier reads of ``source``: the passage around every quote analysis
    took from it (``QUOTE_CONTEXT`` characters either side, overlapping passages joined,
    " … " between the others), wherever in the source the quote is; a source analysis
    quoted nothing from shows the window analysis read. Quotes are taken without fence
    lines (``_text.unfenced``), and so is the text shown."""
    text = unfenced(source.text)
    spans: list[tuple[int, int]] = []
    for analysis in state.analyses:
        if analysis.source != source.id:
            continue
        for fact in analysis.facts:
            start = text.find(fact.quote)
            if start >= 0:
                end = start + len(fact.quote)
                spans.append((max(0, start - QUOTE_CONTEXT), min(len(text), end + QUOTE_CONTEXT)))
    if not spans:
        return text[:MAX_SOURCE_PROMPT_CHARS]
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces = [text[start:end].strip() for start, end in merged]
    return "\n … \n".join(piece for piece in pieces if piece)


def verify_prompt(state: DeepState, claims: list[Claim]) -> str:
    """The claims with the passages of the sources they cite (see ``passages``)."""
    cited = dict.fromkeys(sid for claim in claims for sid in claim.sources)
    blocks = [
        _source_block(s, passages(state, s))
        for sid in cited
        if (s := state.source(sid)) is not None
    ]
    lines = [
        f"{claim.id}: {claim.text} (cites {', '.join(claim.sources) or 'nothing'})"
        for claim in claims
    ]
    return "Claims:\n" + fence("claims", "\n".join(lines)) + "\n\nSources:\n" + "\n".join(blocks)


_ORDER: Final[tuple[SectionName, ...]] = ("summary", "key_points", "steps", "caveats")
_HEADING_WORDS: Final[tuple[tuple[SectionName, tuple[str, ...]], ...]] = (
    ("key_points", ("key point", "keypoint", "要点", "ポイント", "主な点", "重要な点")),
    ("summary", ("summary", "overview", "概要", "要約", "まとめ", "サマリ", "概説")),
    ("steps", ("step", "手順", "ステップ", "段取り", "進め方")),
    ("caveats", ("caveat", "warning", "limitation", "注意", "留意", "制約", "懸念")),
)
"""Words that name each section in a heading, English and Japanese."""
_HEADING_NOISE: Final = re.compile(r"^[\s#*_`\d.)）:：、-]+|[\s*_`:：]+$")


def _section_of(heading: str, position: int) -> SectionName:
    """The section a draft's heading opens: by its words (English or Japanese), else by
    its position (the n-th heading is the n-th section), so that a heading Claude wrote in
    other words never drops the claims under it."""
    words = _HEADING_NOISE.sub("", heading).lower()
    for section, names in _HEADING_WORDS:
        if any(name in words for name in names):
            return section
    return _ORDER[min(position, len(_ORDER) - 1)]


_CITE: Final = re.compile(r"\[(S\d+)\]")
_SPLIT: Final = re.compile(r"(?<=[.!?])(?:\s*\[S\d+\])*(?:\s+|$)|(?<=[。！？])(?:\s*\[S\d+\])*\s*")
_ITEM: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SPACE_BEFORE: Final = re.compile(r"\s+([.,;:!?。、])")


def _strip_cites(text: str) -> str:
    return _SPACE_BEFORE.sub(r"\1", " ".join(_CITE.sub("", text).split()))


def _claims_of(line: str) -> list[tuple[str, list[str]]]:
    """A paragraph's sentences (or one bullet) with their citations."""
    found: list[tuple[str, list[str]]] = []
    position = 0
    for match in [*_SPLIT.finditer(line), None]:
        end = match.end() if match is not None else len(line)
        piece = line[position:end]
        position = end
        text = _strip_cites(piece)
        if text:
            found.append((text, list(dict.fromkeys(_CITE.findall(piece)))))
        if match is None or position >= len(line):
            break
    return found


def parse_draft(markdown: str) -> Draft:
    """The claims of a draft written in ``synthesis_prompt``'s format: each summary
    sentence and each bullet is one claim. A heading opens the section its words name
    (English or Japanese), else the one at its position; text before the first heading
    is ignored, unless the draft has no heading at all (then it is the summary)."""
    lines = [raw.strip() for raw in markdown.splitlines()]
    headed = any(line.startswith("#") for line in lines)
    section: SectionName | None = None if headed else "summary"
    headings = 0
    claims: list[Claim] = []
    for line in lines:
        if line.startswith("#"):
            section = _section_of(line, headings)
            headings += 1
            continue
        if not line or section is None:
            continue
        body = _ITEM.sub("", line)
        if section != "summary" and body != line:
            text = _strip_cites(body)
            units = [(text, list(dict.fromkeys(_CITE.findall(body))))] if text else []
        else:
            units = _claims_of(body)
        for text, cites in units:
            claims.append(
                Claim(id=f"C{len(claims) + 1}", section=section, text=text, sources=cites)
            )
    return Draft(claims=claims, method="llm")
