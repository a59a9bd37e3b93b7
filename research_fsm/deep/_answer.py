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

import functools
import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from ..common.text import is_japanese
from ..documents import SYMBOL
from ._japanese import (
    JA_COMPARE,
    JA_FILLERS,
    JA_SIDE_SPLIT,
    asks,
    japanese_kind,
    without_form,
)
from ._text import ROW, Sentence, sentences, terms

__all__ = [
    "ANSWER_CUTOFF",
    "LINE_KINDS",
    "Question",
    "Unit",
    "family",
    "has_number",
    "idf",
    "one_line_blocks",
    "parse_question",
    "passage_score",
    "refers_back",
    "score_units",
    "side_scores",
    "units",
    "with_next",
    "with_previous",
]

ANSWER_CUTOFF: Final = 0.70
"""Least passage score for a passage to be about the question. Calibrated on the dev set
of ``benchmarks.answers``: its unanswerable questions' best passages score at most 0.63,
its answerable ones' at least 0.80; the cut-off sits between them."""
LINE_KINDS: Final = (".html", ".htm", ".xhtml")
"""Files whose extracted text has one line per paragraph, list item or table row."""


def one_line_blocks(path: str) -> bool:
    """Whether the text of the file at ``path`` has a line per block (``LINE_KINDS``)."""
    return path.lower().endswith(LINE_KINDS)


QuestionKind = Literal["howto", "define", "value", "compare", "yesno", "general"]

_FILLER_WORDS: Final = """how do does did i we you one get way possible there exist someone
    something thing much many kind tell know show find give us let compare comparison
    difference differences differ versus vs mean means meaning fix solve resolve cause causes
    caused happen happens"""
"""Words of the question's form, not of its subject: "what does X mean", "what causes X"
and "how do I fix X" are answered by what X is, why it comes and how to avoid it, in words
that need not be these."""
_FILLERS: Final = frozenset(_FILLER_WORDS.split())
_COMPOUND: Final = re.compile(r"(?<![\w/])[a-z][a-z0-9]*/\d+(?:\.\d+)*(?![\w/])", re.IGNORECASE)
"""A versioned name ("HTTP/2", "OAuth/2.0"): one term, so HTTP/3 is not HTTP/2."""
_CAUSATIVE: Final = re.compile(
    r"\b(?:make|let|get|have)\s+(?!(?:a|an|the|my|your|our|its|this|that|these|those|some|"
    r"new|it|sure)\b)([\w.\-]+)(?=\s+(?!(?:of|for|in|on|with|to|from|by|and|or|as|at|into)\b)"
    r"[\w\-])",
    re.IGNORECASE,
)
"""'make structlog output JSON': 'make' before an object and the action it takes asks
for that action, it is no action itself (unlike 'make a virtual environment')."""
_RELEASE: Final = re.compile(r"^\d+(?:\.[\dx]+)+$")
"""A release number ("3.0", "2.7.x"): it also holds its major number ("3")."""
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
_DEFINE: Final = re.compile(
    r"^\s*what\s+(?:does|do)\s+.+?\s+(?:mean|do)\s*\??\s*$|^\s*what\s+causes?\b"
    r"|^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+(?!default\b))?[\w.\-/$@*]+\s*\??\s*$"
    r"|^\s*what\s+(?:does|do)\s+.+?\s+mean\b",
    re.IGNORECASE,
)
"""A question asking what something is, does or brings ("What does E0133 mean?", "What
is ASGI?", "What does --force-confold do?", "What causes E0106?"): the definition, a sentence of prose, answers it, not
the code example near it."""
_YESNO: Final = re.compile(r"^\s*(?:does|do|is|are|can|will|should|has|have|was)\b", re.IGNORECASE)
_COMPARE: Final = re.compile(
    r"\b(?:compare[sd]?|comparison|difference|differences|differ|versus|vs\.?)\b", re.IGNORECASE
)
_SIDE_SPLIT: Final = re.compile(r"\b(?:and|vs\.?|versus|or|with|to|from)\b|,", re.IGNORECASE)
_LINK: Final = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_REF_LINK: Final = re.compile(r"!?\[([^\]]*)\]\[[^\]]*\]")
_RST_LINK: Final = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
_URL: Final = re.compile(r"https?://\S+")
_ANGLE_URL: Final = re.compile(r"\s*<https?://[^>\s]*>`?_*")
_MARKUP: Final = re.compile(r"\*\*|``|`")
_BULLET: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_NOISE_START: Final = re.compile(
    r"^\s*(?:<|!\[|\[!\[|\.\.\s|:[a-z]+:|\||#|={3,}|-{3,}|\*{3,}|~{3,}|\[[^\]]+\]:\s)"
)
_UNDERLINE: Final = re.compile(r"^\s*[=\-~^*#+]{3,}\s*$", re.MULTILINE)
_EXCEPT: Final = re.compile(
    r"\b(?:other\s+than|besides|except(?:\s+for)?|apart\s+from|instead\s+of|rather\s+than)"
    r"\s+([\w.\-/]+)",
    re.IGNORECASE,
)
QUANTITIES: Final = frozenset({"vers", "port", "size", "numb", "limit", "count", "length"})
"""Stemmed words that ask for a number: a unit holding a number holds them."""
_FENCE: Final = re.compile(r"^\s*(?:```|~~~)")
_PROMPT: Final = re.compile(r"^\s*(?:\$|>>>|pip\s|python\s|uv\s|conda\s|npm\s)")
_IMPERATIVE: Final = re.compile(
    r"^(?:install|run|use|add|set|create|start|call|pass|import|enable|configure|open|type)\b",
    re.IGNORECASE,
)
_DIGIT: Final = re.compile(r"(?<!\w)\d")  # a number, not the 2 of httpx2 nor the 11 of h11
_BACK_REFERENCE: Final = re.compile(r"^(?:this|that|these|it|the above)\b", re.IGNORECASE)
_NUMERIC: Final = re.compile(
    r"\b(?:versions?|ports?|sizes?|numbers?|limits?|how\s+(?:many|much|long|fast)|default)\b",
    re.IGNORECASE,
)
FOCUS_CUTOFF: Final = 0.5
"""A passage none of whose units (with its context) holds this much of what the question
asks (its terms less the names of documents) loses ``FOCUS_PENALTY``."""
FOCUS_PENALTY: Final = 0.15
NAMED_BONUS: Final = 0.03
"""A unit that names what the question names itself beats one that only sits in its file."""
ASKS_FACTOR: Final = 0.5
"""A Japanese sentence that is itself a question (「〜する方法は?」) scores this share."""
NO_VALUE_FACTOR: Final = 0.5
"""A unit without a number scores this share when the question asks for one ("which
versions", "what port")."""
OTHER_THING_FACTOR: Final = 0.5
"""A unit scores this share when the question names a document (a product, a package) and
neither the unit nor its passage's title, heading or file name names it: it is about
something else ("Add support for Python 3.12." in another package's changelog)."""
MIN_NEW_TERMS: Final = 3
"""Words beyond the question's that a unit needs to say something (else the next unit of
its paragraph joins it)."""
MAX_TITLE_WORDS: Final = 8
"""Words of a paragraph without a sentence end that is taken for a section's title."""
_SENTENCE_END: Final = re.compile(r"[.!?:;。！？)\]]$")
MAX_TERM_WORDS: Final = 3
"""Words of a definition list's term (see ``_a_term``)."""
_NAME_LINE: Final = re.compile(
    r"^[\w.+:@/-]+(?:\(\w+\))?(?:,\s*[\w.+:@/-]+(?:\(\w+\))?)*\s+[-\u2013\u2014]\s+\S"
)
"""A man page's NAME line, "tig - text-mode interface for Git": the command's purpose,
a statement though it has no sentence end."""
MAX_CODE_LINES: Final = 3
"""Code lines a step keeps after its ``:``."""
MAX_BLOCK_LINES: Final = 6
"""Lines of a code block no sentence introduces kept as one unit."""
"""Code lines a step keeps after its ``:``."""


def _asks_number(question: Question) -> bool:
    return question.kind == "value" and bool(QUANTITIES & set(question.terms))


def has_number(text: str) -> bool:
    """Whether ``text`` states a number: the 1.1 of a versioned name ("HTTP/1.1") is a
    name, not a value."""
    return bool(_DIGIT.search(_COMPOUND.sub(" ", text)))


def _strip(word: str) -> str:
    if not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    return word[:-2] if word.endswith("at") and len(word) > 5 else word  # migrat(e) = migr


FAMILIES: Final = (
    ("output", "render", "print", "emit", "produce"),
    ("create", "make", "generate"),
    ("remove", "delete", "erase"),
    ("show", "display", "view"),
    ("find", "search", "locate"),
    ("start", "launch"),
    ("stop", "terminate", "kill"),
    ("change", "modify", "alter", "edit"),
)
"""Verbs documentation uses for one action: a question's word matches its family's
("How do I make structlog output JSON?" is answered by "structlog renders JSON"); each
family is one term, named by its first word's stem."""


def _forms(word: str) -> set[str]:
    base = word[:-1] if word.endswith("e") else word
    return {word, f"{word}s", f"{word}es", f"{base}ed", f"{base}ing", f"{word}ed", f"{word}ing"}


def _keys(form: str) -> set[str]:
    """The stems a word form has, with and without the plural "s" ``terms`` strips."""
    plural = form.endswith("s") and not form.endswith("ss")
    return {_strip(form), _strip(form[:-1])} if plural else {_strip(form)}


_FAMILY_OF: Final = {
    key: _strip(words[0])
    for words in FAMILIES
    for word in words
    for form in _forms(word)
    for key in _keys(form)
}


def family(term: str) -> tuple[str, ...]:
    """The words of the verb family ``term`` (a stemmed term) names, or ``()``."""
    for words in FAMILIES:
        if _strip(words[0]) == term:
            return words
    return ()


def stem(word: str) -> str:
    """A light suffix strip: "installation", "installing", "installed" -> "install";
    "migration", "migrate", "migrating" -> "migr"; a verb of ``FAMILIES`` -> its family."""
    stripped = _strip(word)
    return _FAMILY_OF.get(stripped, stripped)


def stems(text: str) -> set[str]:
    """The stemmed terms of ``text``, and its versioned names ("http/2") whole."""
    found = {stem(term) for term in terms(text)}
    for term in list(found):
        if _RELEASE.match(term):
            found.add(term.split(".", 1)[0])
        elif "." in term:  # page.extract_text(), example.pdf: their parts too
            found.update(stem(part) for part in term.split(".") if len(part) > 1)
    found.update(match.group().lower() for match in _COMPOUND.finditer(text))
    return found


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
    named: frozenset[str] = frozenset()
    """Its terms that name a document of the folder (a product, a package)."""
    sides: tuple[frozenset[str], ...] = ()
    """For a comparison: the terms of each side."""
    excluded: frozenset[str] = frozenset()
    """The terms of what it rules out ("other than uvicorn"): no answer is about those."""

    def focus(self) -> tuple[str, ...]:
        """The terms that say what is asked about the things it names."""
        return tuple(t for t in self.terms if t not in self.named) or self.terms

    def side(self, index: int) -> Question:
        """The question about one side of a comparison (the other sides' terms left out)."""
        others = set().union(*(s for i, s in enumerate(self.sides) if i != index))
        kept = tuple(t for t in self.terms if t not in others)
        return Question(
            text=self.text,
            kind="general",
            terms=kept,
            words=self.words,
            named=self.named,
            excluded=self.excluded,
        )


def parse_question(text: str, names: Iterable[str] = ()) -> Question:
    """The question's kind and salient terms; ``names``: the words that name documents."""
    words: dict[str, str] = {}
    excluded = {stem(t) for m in _EXCEPT.finditer(text) for t in terms(m.group(1))}
    text_asked = _EXCEPT.sub(" ", text)
    text_asked = _CAUSATIVE.sub(lambda m: f" {m.group(1)}", text_asked)
    compounds = [match.group().lower() for match in _COMPOUND.finditer(text_asked)]
    versions = {compound.split("/", 1)[1] for compound in compounds}
    japanese = is_japanese(text)
    fillers = _FILLERS | _japanese_fillers() if japanese else _FILLERS
    if japanese:
        text_asked = without_form(text_asked)
    for term in terms(text_asked):
        if term in fillers or term in versions or stem(term) in excluded:
            continue
        words.setdefault(stem(term), term)
    for compound in compounds:
        words.setdefault(compound, compound)
    named = frozenset(t for t in words if t in set(names) or words[t] in set(names))
    kind: QuestionKind = "general"
    sides: tuple[frozenset[str], ...] = ()
    compare, split = (JA_COMPARE, JA_SIDE_SPLIT) if japanese else (_COMPARE, _SIDE_SPLIT)
    if compare.search(text):
        if len(named) >= 2:
            own = [frozenset({t}) for t in words if t in named]
        else:
            parts = [stems(part) & set(words) for part in split.split(compare.sub(" ", text))]
            shared = set.intersection(*parts) if parts else set()
            own = [frozenset(part - shared) for part in parts if part - shared]
        if len(own) >= 2:
            kind, sides = "compare", tuple(own[:3])
    if kind == "general" and japanese:
        found = japanese_kind(text)
        kind = found if found is not None and found != "compare" else "general"
    elif kind == "general":
        if _HOWTO.search(text):
            kind = "howto"
        elif _DEFINE.search(text):
            kind = "define"
        elif _YESNO.search(text):
            kind = "yesno"
        elif _VALUE.search(text):
            kind = "value"
    return Question(
        text=text,
        kind=kind,
        terms=tuple(words),
        words=words,
        named=named,
        sides=sides,
        excluded=frozenset(excluded),
    )


@functools.cache
def _japanese_fillers() -> frozenset[str]:
    """The terms of the Japanese form words as the segmentation in use gives them."""
    return JA_FILLERS | frozenset(term for word in JA_FILLERS for term in terms(word))


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
    prose: frozenset[str] = frozenset()
    """The stemmed terms of its words (its code left out, unless it is all code)."""
    opens_section: bool = False
    """Whether it is the first sentence after a section's title (where a definition is)."""

    def own(self, question: Question) -> frozenset[str]:
        """The terms it answers with: all for "how do I", else its words' only; a number
        answers for the quantity asked ("which version" is answered by "3.9")."""
        have = self.terms if question.kind == "howto" else self.prose
        if has_number(self.statement):
            have = have | (QUANTITIES & set(question.terms))
        return have


def clean(text: str) -> str:
    """Link text without its target, no emphasis marks, no list glyph, one line."""
    text = _RST_LINK.sub(r"\1", _REF_LINK.sub(r"\1", _LINK.sub(r"\1", text)))
    text = _ANGLE_URL.sub("", text)
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
    if _NOISE_START.match(sentence) or _UNDERLINE.search(sentence):
        return True
    words = re.findall(r"[^\W\d_]{2,}", _URL.sub(" ", clean(sentence)))
    unlinked = re.findall(r"[^\W\d_]{2,}", _URL.sub(" ", _LINK.sub(" ", sentence)))
    if len(words) < 2 and unlinked and is_japanese(sentence):  # no spaces between words
        words = terms(_URL.sub(" ", clean(sentence)))
    return len(words) < 2 or not unlinked  # a badge, an image, a line of links


_COMMAND_CELL: Final = re.compile(
    r"^(?:[a-z][\w.+-]*(?: +[-\w.+=/<>\[\]{}|:]+)+|-{1,2}[a-z][\w-]*)$"
)
"""A table cell that is a command or an option ("apt remove", "--purge")."""
_RULE_CELL: Final = re.compile(r"^[-:=+ ]*$")


def _row(text: str, sentence: Sentence) -> Unit | None:
    """A table row as a unit: its cells joined by " — " (its quote the row as written);
    a command in its first cell makes it code. A rule line or a row of one cell is none."""
    cells = [clean(cell) for cell in sentence.text.strip().strip("|").split("|")]
    cells = [cell for cell in cells if cell]
    if len(cells) < 2 or any(_RULE_CELL.match(cell) for cell in cells):
        return None
    command = _COMMAND_CELL.match(cells[0].strip("`")) is not None
    statement = " — ".join(cells)
    prose = " ".join(cells[1:]) if command else statement
    return _unit(text, sentence.start, sentence.end, statement, command, prose)


def _code_lines(text: str, following: list[Sentence], most: int = 0) -> tuple[list[str], int]:
    """The first code lines of the code sentences in ``following`` and where they end."""
    most = most or MAX_CODE_LINES
    lines: list[str] = []
    end = following[0].start
    for sentence in following:
        offset = sentence.start
        for line in sentence.text.split("\n"):
            stripped = line.strip()
            if stripped and not _FENCE.match(stripped) and len(lines) < most:
                lines.append(stripped)
                end = offset + len(line.rstrip())
            offset += len(line) + 1
        if len(lines) >= most:
            break
    return lines, end


def _unit(
    text: str,
    start: int,
    end: int,
    statement: str,
    code: bool,
    prose: str | None = None,
    *,
    opens_section: bool = False,
) -> Unit:
    return Unit(
        start=start,
        end=end,
        statement=statement,
        code=code,
        terms=frozenset(stems(statement)),
        prose=frozenset(stems(prose if prose is not None else statement)),
        opens_section=opens_section,
    )


def _code_units(text: str, block: list[Sentence]) -> list[Unit]:
    """A code block no sentence introduces: its first lines as one unit ("; "-joined)."""
    lines, last = _code_lines(text, block, MAX_BLOCK_LINES)
    if not lines or not any(re.search(r"[a-z]{2}", line) for line in lines):
        return []
    first = block[0].start
    while first < last and (text[first].isspace() or _FENCE.match(text[first:])):
        first = text.find("\n", first) + 1 if _FENCE.match(text[first:]) else first + 1
    return [_unit(text, first, last, "; ".join(lines), True)]


def units(text: str, headings: Collection[str] = (), *, lines: bool = False) -> list[Unit]:
    """The passage's candidate answers, in text order: sentences; a sentence that
    introduces a code block (ends in ":", or ends its paragraph right before the code)
    with the block's first lines; a code block followed by "This ..." with that sentence;
    and, alone, the lines of a code block no sentence introduces. A line that is one of
    ``headings`` (a section's title, as HTML pages give them) is none. ``lines``: each
    line is a sentence's end too (HTML's list items, see ``_text.sentences``)."""
    found = sentences(text, lines=lines)
    fenced = _fenced(text)
    code = [_is_code(text, sentence, fenced) for sentence in found]
    out: list[Unit] = []
    index = 0
    after_title = False  # the last sentence was a section's title
    title: Sentence | None = None
    while index < len(found):
        sentence = found[index]
        if code[index]:
            after_title = False
            block = []
            while index < len(found) and code[index]:
                block.append(found[index])
                index += 1
            after = found[index] if index < len(found) else None
            if after is not None and _BACK_REFERENCE.match(after.text) and not _noise(after.text):
                shown, last = _code_lines(text, block)
                statement = f"{' '.join(shown)} — {clean(after.text)}"
                out.append(
                    _unit(text, block[0].start, after.end, statement, True, clean(after.text))
                )
                index += 1
            else:
                out += _code_units(text, block)
            continue
        index += 1
        if ROW.match(sentence.text):  # a table row: its cells, one unit
            row = _row(text, sentence)
            out += [row] if row is not None else []
            after_title = False
            continue
        if lines and index < len(found) and _a_term(text, sentence, found[index]):
            after_title, title = True, sentence  # a definition list's term, on its own line
            continue
        if _noise(sentence.text) or len(sentence.text) > 600:
            continue
        statement, end, has_code = clean(sentence.text), sentence.end, False
        if statement in headings or _a_title(text, sentence):
            after_title, title = True, sentence
            continue
        opens_section, after_title = after_title, False
        start = sentence.start
        if opens_section and title is not None and _names_a_term(title, sentence, text):
            # a definition list's term ("-O: optimize your code", "$mail_check"): the
            # sentence under it says what the term is, the claim says which term
            statement, start = f"{clean(title.text)} — {statement}", title.start
        prose = statement
        introduces = sentence.text.rstrip().endswith(":") or _ends_paragraph(text, sentence)
        if introduces and index < len(found) and code[index]:
            block = []
            while index < len(found) and code[index] and len(block) < MAX_CODE_LINES:
                block.append(found[index])
                index += 1
            following = found[index] if index < len(found) else None
            if following is not None and _BACK_REFERENCE.match(following.text):
                index -= len(block)  # the code belongs to the sentence after it
            else:
                shown, last = _code_lines(text, block)
                if shown:  # its code on lines of their own: a code block in the report
                    statement = "\n".join([statement, *shown])
                    end, has_code = max(last, sentence.end), True
                while index < len(found) and code[index]:
                    index += 1  # the rest of the block goes with it
        if len(statement) >= 12:
            out.append(
                _unit(text, start, end, statement, has_code, prose, opens_section=opens_section)
            )
    return out


def _a_term(text: str, sentence: Sentence, after: Sentence) -> bool:
    """Whether ``sentence`` is a definition list's term ("TIG_EDITOR", "aptitude update"):
    a line of ``MAX_TERM_WORDS`` words or fewer (more when it names an option or symbol),
    without a sentence end, right above the sentence that says what it is (a list of items
    without full stops is no definition list)."""
    words = sentence.text.split()
    if (
        len(words) > MAX_TITLE_WORDS
        or "\n" in sentence.text
        or text[sentence.end : after.start] != "\n"
        or _SENTENCE_END.search(words[-1])
        or not after.text.rstrip().endswith((".", "!", "?", "。", "！", "？"))
    ):
        return False
    return len(words) <= MAX_TERM_WORDS or SYMBOL.search(sentence.text) is not None


def _names_a_term(title: Sentence, sentence: Sentence, text: str) -> bool:
    """Whether ``title``, right above ``sentence``, names an option, a variable or a
    symbol (``documents.SYMBOL``): the term a definition list's entry defines."""
    if text[title.end : sentence.start].strip():
        return False
    return SYMBOL.search(title.text) is not None or (
        text[title.end : sentence.start] == "\n" and len(title.text.split()) <= MAX_TERM_WORDS
    )


def _a_title(text: str, sentence: Sentence) -> bool:
    """A paragraph of a few words with no sentence end: a section's title, as HTML pages
    give their headings ("Error code E0133"); it names a section, it states nothing."""
    alone = (
        sentence.start == 0 or text[max(sentence.start - 2, 0) : sentence.start] == "\n\n"
    ) and (sentence.end >= len(text.rstrip()) or text[sentence.end : sentence.end + 2] == "\n\n")
    words = sentence.text.split()
    if not alone or _NAME_LINE.match(sentence.text):
        return False
    if len(words) < 3 and is_japanese(sentence.text):  # no spaces between words
        words = [*terms(sentence.text), words[-1]]
    return len(words) <= MAX_TITLE_WORDS and not _SENTENCE_END.search(words[-1])


def _ends_paragraph(text: str, sentence: Sentence) -> bool:
    return text[sentence.end : sentence.end + 2] == "\n\n" or text[sentence.end :].startswith(
        "\n```"
    )


def with_next(question: Question, found: list[Unit], index: int, text: str) -> Unit:
    """``found[index]``, joined by the unit after it when it only restates the question
    (fewer than ``MIN_NEW_TERMS`` words the question does not have) and that unit follows
    in the same paragraph: "You can try it without a key." then says how."""
    unit = found[index]
    new = unit.prose - set(question.terms)
    line = text[text.rfind("\n", 0, unit.start) + 1 : unit.start + 2]
    if len(new) >= MIN_NEW_TERMS or index + 1 >= len(found) or unit.code:
        return unit
    if _BULLET.match(line) or not unit.statement.endswith((".", "!", "?")):
        return unit  # a list item, a heading-like line: complete as it is
    after = found[index + 1]
    if "\n\n" in text[unit.end : after.start]:
        return unit
    return Unit(
        start=unit.start,
        end=after.end,
        statement=f"{unit.statement} {after.statement}",
        code=unit.code or after.code,
        terms=unit.terms | after.terms,
        prose=unit.prose | after.prose,
    )


_REFERS_BACK: Final = re.compile(
    r"^(?:this|that|these|those|it|they|such|both)\b(?!\s+(?:is|are)\s+(?:why|how|what)\b)"
    r"|^(?:この|その|これ|それ|こうした|そうした|こちら)",
    re.IGNORECASE,
)
"""A sentence whose subject is in the sentence before it ("This command does not update
your branch", "It is ...")."""


def refers_back(statement: str) -> bool:
    """Whether ``statement`` starts with a word whose subject is before it ("This ...")."""
    return _REFERS_BACK.match(statement) is not None


MAX_PREAMBLE_LINES: Final = 4
"""Lines of a reference entry's head (its name, "Type: number", "Default: 5") a claim
under it may carry."""
MAX_PREAMBLE_CHARS: Final = 80
_MARKED: Final = re.compile(r"^\s*(?:#|[=\-~^*+]{3,}\s*$|\.\.\s|```)")
_ATTRIBUTE: Final = re.compile(r"^[A-Z][\w /-]{0,24}:\s+\S")
"""A reference entry's attribute line ("Type: number", "Default: 5")."""


def _preamble(text: str, start: int) -> tuple[int, list[str]] | None:
    """The head of the reference entry a paragraph at ``start`` opens, when there is one:
    up to ``MAX_PREAMBLE_LINES`` short lines right above it (a blank line between), none
    ending a sentence, at least one of them an attribute ("Default: 5") or the paragraph
    referring back to them ("This variable ..."); where they start and the lines."""
    before = text[:start]
    if not before.endswith("\n\n") and not before.rstrip(" \t").endswith("\n\n"):
        return None
    lines: list[str] = []
    at = len(before.rstrip())
    while at > 0 and len(lines) < MAX_PREAMBLE_LINES:
        line_start = text.rfind("\n", 0, at) + 1
        line = text[line_start:at].strip()
        if not line or len(line) > MAX_PREAMBLE_CHARS or line.endswith((".", "!", "?", "。")):
            break
        lines.insert(0, line)
        start, at = line_start, max(line_start - 1, 0)
        while at > 0 and text[at - 1] == "\n":
            at -= 1
    if not lines or any(
        _BULLET.match(line) or ROW.match(line) or _MARKED.match(line) for line in lines
    ):
        return None  # a list, a table, a Markdown or reST heading: not an entry's head
    return start, lines


def _with_head(unit: Unit, text: str) -> Unit:
    """``unit`` with the head of the reference entry it opens (``_preamble``) before it,
    joined by " — ": "3.163. mail_check — Type: number — Default: 5 — This variable
    configures how often ...". Without such a head, ``unit`` itself."""
    head = _preamble(text, unit.start)
    if head is None:
        return unit
    at, lines = head
    if not any(_ATTRIBUTE.match(line) for line in lines) and not _REFERS_BACK.match(unit.statement):
        return unit
    named = " — ".join(clean(line) for line in lines)
    return Unit(
        start=at,
        end=unit.end,
        statement=f"{named} — {unit.statement}",
        code=unit.code,
        terms=unit.terms | frozenset(stems(named)),
        prose=unit.prose | frozenset(stems(named)),
        opens_section=True,
    )


def with_previous(found: list[Unit], index: int, text: str) -> Unit:
    """``found[index]`` with the sentence it refers to ("This command ...", "It ...") put
    before it: the unit just before, when nothing but white space is between them (the
    same paragraph, or the paragraph right before), so the claim says what it is about;
    or the head of the reference entry it opens (``_with_head``: a name and attribute
    lines such as "Default: 5")."""
    unit = found[index]
    if index == 0 or not _REFERS_BACK.match(unit.statement):
        return _with_head(unit, text)
    before = found[index - 1]
    if before.code or text[before.end : unit.start].strip() or before.end > unit.start:
        return _with_head(unit, text)
    if _REFERS_BACK.match(before.statement):
        return unit  # a chain of references: the first of them is no better a subject
    return Unit(
        start=before.start,
        end=unit.end,
        statement=f"{before.statement} {unit.statement}",
        code=unit.code,
        terms=unit.terms | before.terms,
        prose=unit.prose | before.prose,
        opens_section=before.opens_section,
    )


def _coverage(wanted: tuple[str, ...], have: Iterable[str], weights: Mapping[str, float]) -> float:
    if not wanted:
        return 0.0
    present = set(have)
    total = sum(weights.get(t, 1.0) for t in wanted)
    return sum(weights.get(t, 1.0) for t in wanted if t in present) / total if total else 0.0


def _cue(question: Question, unit: Unit) -> float:
    if question.kind == "define":  # prose, best the sentence that opens its section
        if unit.code or unit.statement.rstrip().endswith(":"):
            return 0.0
        return 0.1 if unit.opens_section else 0.05
    if question.kind == "howto":
        return 0.15 if unit.code else (0.05 if _IMPERATIVE.match(unit.statement) else 0.0)
    if question.kind == "value":
        if _NUMERIC.search(question.text) and has_number(unit.statement):
            return 0.1
        return 0.05 if unit.code or has_number(unit.statement) else 0.0
    return 0.0


def score_units(
    question: Question, found: list[Unit], context: str, weights: Mapping[str, float]
) -> list[float]:
    """Each unit's score: its coverage (its context counts a quarter) plus the cue; 0 for
    a unit that names what the question rules out (it answers with the excluded thing)."""
    around = stems(context)
    scores = []
    named = around & question.named  # "It supports ..." in the product's own document
    asked: frozenset[str] = frozenset()  # the terms of the FAQ question above the unit
    for unit in found:
        if unit.terms & question.excluded:
            scores.append(0.0)
            continue
        have = unit.own(question) | named | asked
        own = _coverage(question.terms, have, weights)
        wide = _coverage(question.terms, have | around, weights)
        long_penalty = 0.05 if len(unit.statement) > 300 else 0.0
        names_it = NAMED_BONUS if unit.prose & question.named else 0.0
        cue = _cue(question, unit) + names_it - long_penalty
        score = 0.75 * own + 0.25 * wide + cue
        if asks(unit.statement):
            score *= ASKS_FACTOR  # an FAQ's question: the answer is what follows it
            asked = unit.prose  # ... and is about what it asks
        if _asks_number(question) and not has_number(unit.statement):
            score *= NO_VALUE_FACTOR  # "which versions" is not answered without a number
        if question.named and not named and not unit.terms & question.named:
            score *= OTHER_THING_FACTOR  # about another product than the one asked about
        scores.append(round(score, 4))
    return scores


def _one(
    question: Question, found: list[Unit], text: str, context: str, weights: Mapping[str, float]
) -> tuple[float, list[float]]:
    scored = score_units(question, found, context, weights)
    around = stems(context)
    whole = _coverage(question.terms, stems(text) | around, weights)
    window = 0.0
    for index in range(len(found)):
        near = set(around)
        for unit in found[index : index + 3]:
            near |= unit.own(question)
        window = max(window, _coverage(question.terms, near, weights))
    best = max(scored, default=0.0)
    focus = question.focus()
    answered = max((_coverage(focus, unit.terms | around, weights) for unit in found), default=0.0)
    score = 0.3 * whole + 0.4 * window + 0.3 * min(best, 1.0)
    if answered < FOCUS_CUTOFF:
        score -= FOCUS_PENALTY
    return round(score, 4), scored


def side_scores(
    question: Question,
    text: str,
    context: str,
    weights: Mapping[str, float],
    *,
    lines: bool = False,
) -> list[float]:
    """For a comparison: how well the passage answers each side."""
    found = units(text, lines=lines)
    return [
        _one(question.side(index), found, text, context, weights)[0]
        for index in range(len(question.sides))
    ]


def passage_score(
    question: Question,
    text: str,
    context: str,
    weights: Mapping[str, float],
    *,
    headings: Collection[str] = (),
    lines: bool = False,
) -> tuple[float, list[Unit], list[float]]:
    """How well a passage answers the question (0-1), its units and their scores.
    ``context``: its title, heading and file name; ``headings``: its heading path's titles
    (a line that is one of them names a section, it states nothing). A comparison's
    passage is scored for the side it answers best; ``lines``: see ``units``."""
    found = units(text, headings, lines=lines)
    if question.kind == "compare":
        sides = [
            _one(question.side(index), found, text, context, weights)
            for index in range(len(question.sides))
        ]
        best = max(sides, key=lambda pair: pair[0])
        return best[0], found, best[1]
    score, scored = _one(question, found, text, context, weights)
    return score, found, scored
