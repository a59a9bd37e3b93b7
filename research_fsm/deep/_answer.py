"""Answering a question from passages, offline: which words of the question matter, how
well a passage covers them, and which of its sentences answers it.

- **Salient terms**: the question's words less stop words and question fillers ("how do
  I"), lightly stemmed ("installation" and "install" are one term).
- **Weights**: inverse document frequency from the document index (a word in few passages
  counts more; a word in none counts most, so a question about something the documents
  never mention covers little); equal weights when the search gives none.
- **Answer units**: a sentence, or a sentence ending in ":" with the code lines that follow
  it (the step keeps its command). Badges, images, HTML and link-only lines are no units.
- **Scores**: a unit's weighted coverage of the salient terms (its heading and file name
  count a quarter), plus cues for the kind of answer asked (a command for "how do I", a
  value for "what is"); a passage's score mixes its whole coverage, its best window of
  three units (proximity) and its best unit. Below ``ANSWER_CUTOFF`` nothing answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from ._text import Sentence, sentences, terms

__all__ = [
    "ANSWER_CUTOFF",
    "Question",
    "Unit",
    "idf",
    "parse_question",
    "passage_score",
    "score_units",
    "units",
]

ANSWER_CUTOFF: Final = 0.62
"""Least passage score for a passage to be about the question (calibrated on the dev
set of ``benchmarks.answers``: no unanswerable question above it, no answerable one
under it)."""
QuestionKind = Literal["howto", "value", "compare", "yesno", "general"]

_FILLERS: Final = frozenset(
    [
        "how",
        "do",
        "does",
        "did",
        "i",
        "we",
        "you",
        "one",
        "get",
        "way",
        "possible",
        "there",
        "exist",
        "someone",
        "something",
        "thing",
        "much",
        "many",
        "kind",
        "tell",
        "know",
        "show",
        "find",
        "give",
        "us",
        "let",
    ]
)
_SUFFIXES: Final = ("ations", "ation", "ions", "ion", "ings", "ing", "ed", "er", "es", "e")
_HOWTO: Final = re.compile(
    r"^\s*(?:how\s+(?:do|can|could|should|would|to)\b|how\s+is\b.*\b(?:done|set|installed)\b"
    r"|what(?:'s|\s+is)\s+the\s+(?:command|way|syntax)\b|(?:steps?|command)\s+to\b)",
    re.IGNORECASE,
)
_VALUE: Final = re.compile(
    r"^\s*(?:what|which|who|when|where|how\s+(?:many|much|long|big|fast|large|often))\b"
    r"|\bdefault\b",
    re.IGNORECASE,
)
_YESNO: Final = re.compile(r"^\s*(?:does|do|is|are|can|will|should|has|have|was)\b", re.IGNORECASE)
_COMPARE: Final = re.compile(
    r"\b(?:compare[sd]?|comparison|difference|differences|differ|versus|vs\.?)\b", re.IGNORECASE
)
_SIDE_SPLIT: Final = re.compile(r"\b(?:and|vs\.?|versus|or|with|to|from)\b|,", re.IGNORECASE)
_LINK: Final = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_REF_LINK: Final = re.compile(r"!?\[([^\]]*)\]\[[^\]]*\]")
_RST_LINK: Final = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
_URL: Final = re.compile(r"https?://\S+")
_MARKUP: Final = re.compile(r"\*\*|``|`")
_BULLET: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_NOISE_START: Final = re.compile(
    r"^\s*(?:<|!\[|\[!\[|\.\.\s|:[a-z]+:|\||#|={3,}|-{3,}|\*{3,}|~{3,}|\[[^\]]+\]:\s)"
)
_FENCE: Final = re.compile(r"^\s*(?:```|~~~)")
_PROMPT: Final = re.compile(r"^\s*(?:\$|>>>|pip\s|python\s|uv\s|conda\s|npm\s)")
_IMPERATIVE: Final = re.compile(
    r"^(?:install|run|use|add|set|create|start|call|pass|import|enable|configure|open|type)\b",
    re.IGNORECASE,
)
_DIGIT: Final = re.compile(r"\d")
MAX_CODE_LINES: Final = 3
"""Code lines a step keeps after its ``:``."""


def stem(word: str) -> str:
    """A light suffix strip: "installation", "installing", "installed" -> "install"."""
    if not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def stems(text: str) -> set[str]:
    """The stemmed terms of ``text``."""
    return {stem(term) for term in terms(text)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A question as the rules see it."""

    text: str
    """The question as asked."""
    kind: QuestionKind
    """What kind of answer it wants."""
    terms: tuple[str, ...]
    """Its salient terms (stemmed), in order."""
    words: Mapping[str, str] = field(default_factory=dict)
    """Each salient term's word as asked (what the index is asked about)."""
    sides: tuple[frozenset[str], ...] = ()
    """For a comparison: the terms of each side."""


def parse_question(text: str) -> Question:
    """The question's kind and salient terms."""
    words: dict[str, str] = {}
    for term in terms(text):
        if term in _FILLERS:
            continue
        words.setdefault(stem(term), term)
    kind: QuestionKind = "general"
    sides: tuple[frozenset[str], ...] = ()
    if _COMPARE.search(text):
        parts = [stems(part) & set(words) for part in _SIDE_SPLIT.split(_COMPARE.sub(" ", text))]
        shared = set.intersection(*parts) if parts else set()
        own = [frozenset(part - shared) for part in parts if part - shared]
        if len(own) >= 2:
            kind, sides = "compare", tuple(own[:3])
    if kind == "general":
        if _HOWTO.search(text):
            kind = "howto"
        elif _YESNO.search(text):
            kind = "yesno"
        elif _VALUE.search(text):
            kind = "value"
    return Question(text=text, kind=kind, terms=tuple(words), words=words, sides=sides)


def idf(passages: int, frequencies: Mapping[str, int]) -> dict[str, float]:
    """BM25's inverse document frequency of each term over ``passages`` passages."""
    n = max(passages, 1)
    return {
        term: math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for term, df in frequencies.items()
        if df <= n
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """A candidate answer: a sentence, or a step with the code after it."""

    start: int
    """Offset of its first character in the passage."""
    end: int
    """Offset after its last character: ``text[start:end]`` is its verbatim quote."""
    statement: str
    """The claim it makes: the sentence with link targets and emphasis marks dropped."""
    code: bool
    """Whether it holds a command or code."""
    terms: frozenset[str]
    """Its stemmed terms."""


def clean(text: str) -> str:
    """Link text without its target, no emphasis marks, no list glyph, one line."""
    text = _RST_LINK.sub(r"\1", _REF_LINK.sub(r"\1", _LINK.sub(r"\1", text)))
    text = _MARKUP.sub("", _BULLET.sub("", text))
    text = re.sub(r"::$", ":", text.strip())
    return " ".join(text.split())


def _line_indent(text: str, at: int) -> int:
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:]
    return len(line) - len(line.lstrip(" \t"))


def _fenced(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of the fenced code blocks of ``text``."""
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            if opened is None:
                opened = position
            else:
                spans.append((opened, position + len(line)))
                opened = None
        position += len(line)
    if opened is not None:
        spans.append((opened, len(text)))
    return spans


def _is_code(text: str, sentence: Sentence, fenced: list[tuple[int, int]]) -> bool:
    return bool(
        _FENCE.match(sentence.text)
        or _PROMPT.match(sentence.text)
        or _line_indent(text, sentence.start) >= 4
        or any(a <= sentence.start < b for a, b in fenced)
    )


def _noise(sentence: str) -> bool:
    if _NOISE_START.match(sentence):
        return True
    words = re.findall(r"[^\W\d_]{2,}", _URL.sub(" ", clean(sentence)))
    return len(words) < 3


def _code_lines(text: str, following: list[Sentence]) -> tuple[list[str], int]:
    """The first code lines of the code sentences in ``following`` and where they end."""
    lines: list[str] = []
    end = following[0].start
    for sentence in following:
        offset = sentence.start
        for line in sentence.text.split("\n"):
            stripped = line.strip()
            if stripped and not _FENCE.match(stripped) and len(lines) < MAX_CODE_LINES:
                lines.append(stripped)
                end = offset + len(line.rstrip())
            offset += len(line) + 1
        if len(lines) >= MAX_CODE_LINES:
            break
    return lines, end


def units(text: str) -> list[Unit]:
    """The passage's candidate answers, in text order."""
    found = sentences(text)
    fenced = _fenced(text)
    out: list[Unit] = []
    index = 0
    while index < len(found):
        sentence = found[index]
        index += 1
        if _is_code(text, sentence, fenced):
            continue
        if _noise(sentence.text) or len(sentence.text) > 600:
            continue
        statement, end, code = clean(sentence.text), sentence.end, False
        if sentence.text.rstrip().endswith(":"):
            following = []
            while index < len(found) and _is_code(text, found[index], fenced):
                following.append(found[index])
                index += 1
                if len(following) >= MAX_CODE_LINES:
                    break
            if following:
                lines, last = _code_lines(text, following)
                if lines:
                    statement = f"{statement} {' '.join(lines)}"
                    end, code = max(last, sentence.end), True
        if len(statement) < 12:
            continue
        out.append(
            Unit(
                start=sentence.start,
                end=end,
                statement=statement,
                code=code,
                terms=frozenset(stems(statement)),
            )
        )
    return out


def _coverage(question: Question, have: Iterable[str], weights: Mapping[str, float]) -> float:
    wanted = question.terms
    if not wanted:
        return 0.0
    present = set(have)
    total = sum(weights.get(t, 1.0) for t in wanted)
    return sum(weights.get(t, 1.0) for t in wanted if t in present) / total if total else 0.0


def _cue(question: Question, unit: Unit) -> float:
    if question.kind == "howto":
        return 0.15 if unit.code else (0.05 if _IMPERATIVE.match(unit.statement) else 0.0)
    if question.kind == "value":
        return 0.05 if unit.code or _DIGIT.search(unit.statement) else 0.0
    return 0.0


def score_units(
    question: Question, found: list[Unit], context: str, weights: Mapping[str, float]
) -> list[float]:
    """Each unit's score: its coverage (its context counts a quarter) plus the cue."""
    around = stems(context)
    scores = []
    for unit in found:
        own = _coverage(question, unit.terms, weights)
        wide = _coverage(question, unit.terms | around, weights)
        long_penalty = 0.05 if len(unit.statement) > 300 else 0.0
        scores.append(round(0.75 * own + 0.25 * wide + _cue(question, unit) - long_penalty, 4))
    return scores


def passage_score(
    question: Question, text: str, context: str, weights: Mapping[str, float]
) -> tuple[float, list[Unit], list[float]]:
    """How well a passage answers the question (0-1), its units and their scores.
    ``context``: its title, heading and file name."""
    found = units(text)
    scored = score_units(question, found, context, weights)
    around = stems(context)
    whole = _coverage(question, stems(text) | around, weights)
    window = 0.0
    for index in range(len(found)):
        near = set(around)
        for unit in found[index : index + 3]:
            near |= unit.terms
        window = max(window, _coverage(question, near, weights))
    best = max(scored, default=0.0)
    return round(0.3 * whole + 0.4 * window + 0.3 * min(best, 1.0), 4), found, scored
