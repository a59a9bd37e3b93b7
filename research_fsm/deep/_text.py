"""Words, sentences and lexical support: the offline rules' view of text.

Latin text is split into lower-case words (stop words dropped, a light plural
strip); Japanese into its content words in dictionary form (the index's segmenter:
"消して" and "消す" are one term), or, without the ``ja`` extra, into overlapping
character bigrams (those with hiragana, mostly particles and endings, dropped), so
"移行手順" and "手順の移行" share terms either way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Final

from ..documents import CJK as _CJK
from ..documents import SYMBOL as _SYMBOL
from ..documents import japanese_words

__all__ = [
    "ROW",
    "SUPPORT_THRESHOLD",
    "Sentence",
    "coverage",
    "locate",
    "normalise",
    "quote_in",
    "quote_of",
    "sentences",
    "support",
    "terms",
    "unfenced",
    "verbatim",
]

SUPPORT_THRESHOLD: Final = 0.6
"""Offline verification: a claim is supported when at least this share of its terms
occur in one sentence of the source it cites."""

_STOP_WORDS: Final = """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our out over own
    same she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours how-to guide tell explain please want need what's vs versus
    using use via about between into onto per etc"""
_STOP: Final = frozenset(_STOP_WORDS.split())
_WORD: Final = re.compile(r"[^\W_]+(?:[.+#][^\W_]+)*[+#]*", re.UNICODE)
_HIRAGANA: Final = re.compile(r"[\u3040-\u309f]")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9*`])|(?<=[。！？])")
_BLOCK_START: Final = re.compile(r"\s*(?:#|[-*•>|]\s|\d+[.)]\s)")
_PROMPT_LINE: Final = re.compile(r"^\s*(?:\$|>>>)\s+\S")
"""A command after a shell or Python prompt ("$ ./bootstrap"): a block of its own, so the
line after it (a PDF keeps no blank line around code) is no part of the command."""
ROW: Final = re.compile(r"^ {0,3}(?:\|.*\||(?![$#>]|\.\.\.)\S.*? \| \S.*)\s*$")
"""A table row as the extractors give it: ``| a | b |`` (Markdown) or ``a | b`` (HTML):
a block of its own, so a row is one sentence (an indented line is code, not a row)."""
_SPACES: Final = re.compile(r"\s+")
_FENCE_LINE: Final = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n`]*(?:\n|\Z)", re.MULTILINE)
"""A code fence's own line: the extractor marks code with it (HTML has none); no quote
holds it."""
_FENCE_WORD: Final = re.compile(r"(?:`{3,}|~{3,})[\w+-]*")
"""A fence as a word of a quote (a model's quote of code, its lines joined): no part of it."""
_GLYPH: Final = re.compile(r"^[ \t]*(?:[-*+\u2022\u25aa\u25e6\u2023]|\d{1,3}[.)])[ \t]+")
"""A list item's glyph or number as the quote would start with it."""
_PERMALINK_END: Final = re.compile(r"[ \t]*[\u00b6\u00a7](?=\n|\Z)", re.MULTILINE)
"""A permalink sign at a line's end (Sphinx's and MkDocs' "¶")."""


def unfenced(text: str) -> str:
    """``text`` without its fence lines (``_FENCE_LINE``) nor line-end permalink signs:
    the characters quotes are taken from and checked against."""
    if "```" in text or "~~~" in text:
        text = _FENCE_LINE.sub("", text)
    if "\u00b6" in text or "\u00a7" in text:
        text = _PERMALINK_END.sub("", text)
    return text


def quote_of(text: str, start: int, end: int) -> str:
    """The verbatim quote of ``text[start:end]``: its characters less what only presents
    them (a leading list glyph, code fence lines, a permalink sign), trimmed; it occurs in
    ``unfenced(text)`` (``quote_in``)."""
    piece = text[start:end]
    glyph = _GLYPH.match(piece)
    if glyph is not None and start + glyph.end() < end:
        piece = piece[glyph.end() :]
    return unfenced(piece).strip()


def quote_in(quote: str, text: str) -> bool:
    """Whether ``quote`` is verbatim in ``text``: the same characters, in order, once the
    presentational marks ``unfenced`` drops are left out of both."""
    return bool(quote) and (quote in text or unfenced(quote) in unfenced(text))


def normalise(text: str) -> str:
    """NFKC, lower case, whitespace collapsed: how quotes are compared."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def _latin(word: str) -> str | None:
    if len(word) < 2 and not word.isdigit():
        return None
    if word in _STOP:
        return None
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _bigrams(run: str) -> Iterator[str]:
    if len(run) == 1:
        if not _HIRAGANA.search(run):
            yield run
        return
    for i in range(len(run) - 1):
        pair = run[i : i + 2]
        if not _HIRAGANA.search(pair):
            yield pair


def _symbols(text: str) -> Iterator[str]:
    """Option names and symbols whole (``--force-all``, ``$@``, ``xdg_config_home``):
    an option keeps its case, the rest is lower case (as the index has them)."""
    for match in _SYMBOL.finditer(text):
        found = match.group()
        yield found if found.startswith("-") else found.replace("{", "").replace("}", "").lower()


def _tokens(text: str) -> Iterator[str]:
    text = unicodedata.normalize("NFKC", text)
    if "-" in text or "$" in text or "_" in text:
        yield from _symbols(text)
    text = text.lower()
    position = 0
    for match in _CJK.finditer(text):
        yield from _latin_tokens(text[position : match.start()])
        segmented = japanese_words(match.group())
        yield from segmented if segmented is not None else _bigrams(match.group())
        position = match.end()
    yield from _latin_tokens(text[position:])


def _latin_tokens(text: str) -> Iterator[str]:
    for match in _WORD.finditer(text):
        word = _latin(match.group().strip(".").lower())
        if word:
            yield word


def terms(text: str) -> list[str]:
    """The distinct terms of ``text``, in order of first appearance."""
    return list(dict.fromkeys(_tokens(text)))


def coverage(query_terms: Iterable[str], text: str) -> float:
    """The share of ``query_terms`` that occur in ``text`` (0-1)."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    return len(wanted & set(_tokens(text))) / len(wanted)


class Sentence:
    """A sentence of a source: its exact text and where it is."""

    __slots__ = ("end", "start", "text")

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text = text
        """The sentence, exactly as in the source (stripped of surrounding whitespace)."""
        self.start = start
        """Offset of its first character in the source."""
        self.end = end
        """Offset after its last character."""


def _blocks(text: str, lines: bool = False) -> Iterator[tuple[int, int]]:
    """Paragraphs, headings and list items as (start, end) offsets; ``lines``: every line
    is a block of its own (text extracted from HTML, where a paragraph is one line and a
    line break is a list item, a table row or a ``<br>``)."""
    start: int | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        blank = not line.strip()
        row = ROW.match(line) is not None or _PROMPT_LINE.match(line) is not None
        if start is not None and (blank or lines or row or _BLOCK_START.match(line)):
            yield start, position
            start = None
        if not blank and start is None:
            start = position
        position += len(line)
        if start is not None and (row or line.lstrip().startswith("#")):
            yield start, position
            start = None
    if start is not None:
        yield start, position


def sentences(text: str, *, lines: bool = False) -> list[Sentence]:
    """``text`` split into sentences (English and Japanese endings, paragraphs, headings
    and list items; ``lines``: each line too, see ``_blocks``); each one's text is
    ``text[start:end]``."""
    found: list[Sentence] = []
    for block_start, block_end in _blocks(text, lines):
        position = block_start
        block = text[block_start:block_end]
        for match in [*_SENTENCE_END.finditer(block), None]:
            stop = block_start + (match.start() if match is not None else len(block))
            piece = text[position:stop]
            stripped = piece.strip()
            if stripped:
                start = position + piece.index(stripped)
                found.append(Sentence(stripped, start, start + len(stripped)))
            if match is not None:
                position = block_start + match.end()
    return found


def support(claim: str, text: str, *, lines: bool = False) -> tuple[float, Sentence | None]:
    """The best sentence of ``text`` for ``claim`` and the share of the claim's terms
    it holds (a claim of two sentences can draw on two neighbouring sentences)."""
    wanted = set(terms(claim))
    if not wanted:
        return 0.0, None
    found = sentences(text, lines=lines)
    owns = [set(_tokens(sentence.text)) for sentence in found]
    best: tuple[float, Sentence | None] = (0.0, None)
    for sentence, own in zip(found, owns, strict=True):
        score = len(wanted & own) / len(wanted)
        if score > best[0]:
            best = (score, sentence)
    if best[0] < SUPPORT_THRESHOLD:
        for index in range(len(found) - 1):
            paired = len(wanted & (owns[index] | owns[index + 1])) / len(wanted)
            if paired >= best[0] + 0.2:
                first, second = found[index], found[index + 1]
                best = (paired, Sentence(text[first.start : second.end], first.start, second.end))
    return round(best[0], 4), best[1]


def locate(quote: str, text: str) -> str | None:
    """``quote`` as it occurs in ``text`` (case and runs of whitespace may differ; fence
    lines and permalink signs left out, ``unfenced``), or ``None``. Quotes under three words and 12 characters (6 for CJK) never count: they
    would prove nothing."""
    words = [w for w in quote.strip().strip("\"'“”「」").split() if not _FENCE_WORD.fullmatch(w)]
    joined = " ".join(words)
    cjk = _CJK.search(joined) is not None
    if len(joined) < (6 if cjk else 12) or (len(words) < 3 and not cjk):
        return None
    pattern = r"\s+".join(re.escape(word) for word in words)
    match = re.search(pattern, unfenced(text), re.IGNORECASE)
    return match.group() if match else None


def verbatim(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text`` word for word (see ``locate``)."""
    return locate(quote, text) is not None
