"""Search terms for the index: lower-case words, and CJK runs as words or bigrams.

FTS5's ``unicode61`` tokenizer keeps a run of Japanese or Chinese characters as one
token, so "移行手順を確認" could only be found whole. Each run is rewritten before
indexing, and queries the same way: as its content words in dictionary form when a
Japanese segmenter is installed (``_japanese``: "移行 手順 確認"), else as its character
bigrams ("移行 行手 手順 ..."), which find any two-character word without a dictionary."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from ._japanese import words as japanese_words
from ._symbols import SYMBOL, token

__all__ = ["CJK", "STOP_WORDS", "cjk_bigrams", "cjk_terms", "has_cjk", "query_terms"]

CJK: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]+"
)
"""A run of kana, CJK ideographs, Hangul or half-width katakana."""
_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
_HIRAGANA: Final = re.compile(r"[\u3040-\u309f]")
_STOP_TEXT: Final = """a an and are as at be by for from how in is it of on or the to what
    with about does do can this that these those which who why when where was were will"""
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())
"""English words left out of queries (they would make "all terms" searches miss)."""


_CJK_LEADS: Final = tuple(bytes([lead]) for lead in range(0xE3, 0xF0))
"""The first bytes of the UTF-8 of U+3000-U+FFFF, where every ``CJK`` character is."""


def has_cjk(text: str) -> bool:
    """Whether ``text`` has a ``CJK`` character: the regular expression only runs on text
    whose UTF-8 holds a byte that starts one (a few ``memchr`` calls rule out the rest)."""
    if text.isascii():
        return False
    data = text.encode("utf-8", "surrogatepass")
    if not any(lead in data for lead in _CJK_LEADS):
        return False
    return CJK.search(text) is not None


def _pairs(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_bigrams(text: str) -> str:
    """``text`` with every CJK run replaced by its bigrams, separated by spaces."""
    if not has_cjk(text):
        return text
    return CJK.sub(lambda m: " " + " ".join(_pairs(m.group())) + " ", text)


def _run_terms(run: str) -> str:
    segmented = japanese_words(unicodedata.normalize("NFKC", run).lower())
    return " ".join(segmented if segmented is not None else _pairs(run))


_KANJI: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005]")


def _query_run_terms(run: str) -> str:
    """A query's CJK run as its terms; one kanji alone is a term as it is (the segmenter
    gives a word's kanji as terms: "消す" is 消, which alone it would read as no word)."""
    if len(run) == 1 and _KANJI.match(run) and japanese_words("") is not None:
        return run
    return _run_terms(run)


def cjk_terms(text: str) -> str:
    """``text`` with every CJK run replaced by its terms (content words when a segmenter
    is installed, else bigrams), separated by spaces: what the index stores."""
    if not has_cjk(text):
        return text
    text = unicodedata.normalize("NFKC", text)  # full-width letters and digits too
    return CJK.sub(lambda m: " " + _run_terms(m.group()) + " ", text)


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query: words (stop words dropped) and CJK terms (content
    words; or bigrams, those with hiragana dropped: particles and endings); an option
    name or symbol (``--force-all``, ``$@``) is one term (``_symbols``)."""
    found: list[str] = []
    text = unicodedata.normalize("NFKC", query) if has_cjk(query) else query
    segmented = has_cjk(text) and japanese_words("") is not None
    if "-" in text or "$" in text or "_" in text:
        text = SYMBOL.sub(lambda m: f" {token(m.group())} ", text)
    if has_cjk(text):
        text = CJK.sub(lambda m: " " + _query_run_terms(m.group()) + " ", text)
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        if not segmented and CJK.fullmatch(word) and len(word) <= 2 and _HIRAGANA.search(word):
            continue
        found.append(word)
    return list(dict.fromkeys(found))
