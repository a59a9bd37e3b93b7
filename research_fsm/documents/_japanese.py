"""Japanese words for the index and the answerer: a run of kana and kanji segmented by
Sudachi (``sudachipy`` with ``sudachidict-core``, the ``ja`` extra) into its content
words, each in its normalised dictionary form, so "消して", "消した" and "消す" are one
term, "まとめて" is "纏める", "サーバ" and "ｻｰﾊﾞｰ" are "サーバ".

Why Sudachi: its dictionary ships inside the ``sudachidict-core`` wheel (nothing is
downloaded at run time), its *normalised form* folds okurigana, kana/kanji spellings and
half-width katakana to one form, and on the project's Japanese documentation it found
more of the expected facts than bigrams or MeCab with ``unidic-lite`` (which splits
"メンテナー" into "メンテ" + "ナー"); see ``docs/deep-research.md``.

What is kept: nouns, verbs, adjectives and adjectival nouns, less the light words that
carry the sentence's grammar, not its subject ("する", "ある", "こと", "もの", "ため").
Particles, auxiliaries, punctuation and pronouns are dropped. A katakana word of four or
more characters loses a final long-vowel mark ("メンテナー" is "メンテナ"; "キー" stays),
the JIS convention both spellings fold to.

Without the package, each run becomes its overlapping character bigrams (bigrams with
hiragana, mostly particles and endings, dropped from queries), as before; a warning says
so once. The index records which segmentation built it and is rebuilt when it changes.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Final

__all__ = [
    "JA_EXTRA_HINT",
    "SEGMENTER_ENV",
    "long_vowel",
    "segmentation",
    "segmenter_available",
    "words",
]

SEGMENTER_ENV: Final = "RESEARCH_FSM_JA_SEGMENTER"
"""``bigrams``: index and search Japanese as character bigrams even with Sudachi
installed (to compare the two)."""
JA_EXTRA_HINT: Final = "pip install 'research-fsm[ja]' (sudachipy with sudachidict-core)"
_KATAKANA_WORD: Final = re.compile(r"[\u30a0-\u30ffー]{3,}ー")
_KANJI: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々]")
_CONTENT: Final = frozenset({"名詞", "動詞", "形容詞", "形状詞"})
"""Parts of speech kept: nouns, verbs, adjectives, adjectival nouns."""
_LIGHT_TEXT: Final = """為る 有る 居る 成る 出来る 言う 行う 思う 見る 来る 呉れる 貰う 遣る 置く
    仕舞う 因る よる 良い いい 物 事 為 時 所 様 方 中 上 下 前 後 際 場合 等 他 以上 以下 通り 訳 筈 積もり
    者 ほか など ため とき こと もの よう ところ"""
_LIGHT: Final = frozenset(_LIGHT_TEXT.split())
"""Content words that carry grammar, not a subject: "する", "こと", "ため", "場合"."""
_lock = threading.Lock()
_warned = False


def long_vowel(word: str) -> str:
    """``word`` without the final long-vowel mark of a katakana word of four or more
    characters ("メンテナー" -> "メンテナ", "サーバー" -> "サーバ"; "キー" stays)."""
    if len(word) >= 4 and _KATAKANA_WORD.fullmatch(word):
        return word[:-1]
    return word


def segmenter_available() -> bool:
    """Whether Sudachi and its core dictionary are installed (the ``ja`` extra)."""
    return (
        importlib.util.find_spec("sudachipy") is not None
        and importlib.util.find_spec("sudachidict_core") is not None
    )


@functools.cache
def segmentation() -> str:
    """Which segmentation Japanese gets here: ``sudachi-<version>-core-<version>-A``, or
    ``bigrams`` (the index records it: another one rebuilds the index)."""
    chosen = os.environ.get(SEGMENTER_ENV, "").strip().lower()
    if chosen == "bigrams" or not segmenter_available():
        return "bigrams"
    from importlib import metadata

    suffix = chosen if chosen in ("words", "unigrams") else "kanji"
    try:
        return (
            f"sudachi-{metadata.version('sudachipy')}-core-"
            f"{metadata.version('sudachidict-core')}-A-r{RULES}-{suffix}"
        )
    except metadata.PackageNotFoundError:  # importable without metadata: a source tree
        return f"sudachi-A-r{RULES}-{suffix}"


@functools.cache
def _tokenizer() -> Callable[[str], Any] | None:
    global _warned
    if segmentation() == "bigrams":
        with _lock:
            if not _warned and not os.environ.get(SEGMENTER_ENV):
                import structlog  # only now: a worker process starts without it

                _warned = True
                structlog.get_logger(__name__).warning(
                    "Japanese is searched as character bigrams: no word segmenter installed",
                    install=JA_EXTRA_HINT,
                )
        return None
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").tokenizer(SplitMode.A)
    return tokenizer.tokenize  # type: ignore[no-any-return]


RULES: Final = 2
"""The version of the rules that pick the content words (part of ``segmentation``: an
index built by other rules is rebuilt)."""
MAX_PIECE: Final = 4096
"""Characters given to Sudachi at once (it refuses more than 48 KB; a run this long is
no prose, and is cut anywhere)."""
CACHED_RUN: Final = 64
"""Runs up to this long are remembered (the same short runs come back all the time)."""


@functools.lru_cache(maxsize=65536)
def _cached(run: str) -> tuple[str, ...]:
    return _segment(run)


def _segment(run: str) -> tuple[str, ...]:
    tokenize = _tokenizer()
    assert tokenize is not None
    found: list[str] = []
    kanji = not segmentation().endswith("words")
    unigrams = segmentation().endswith("unigrams")
    for start in range(0, len(run), MAX_PIECE):
        with _lock:  # one Sudachi tokenizer is not safe to share between threads
            try:
                morphemes = [
                    (m.normalized_form(), m.part_of_speech(), m.surface())
                    for m in tokenize(run[start : start + MAX_PIECE])
                ]
            except Exception:  # Sudachi refused the text: it has no words then
                continue
        for at, (form, pos, surface) in enumerate(morphemes):
            before = morphemes[at - 1][1] if at else ("",)
            after = morphemes[at + 1][1] if at + 1 < len(morphemes) else ("", "", "")
            if pos[0] not in _CONTENT or _grammar(surface, pos, before, after):
                continue
            word = long_vowel(unicodedata.normalize("NFKC", form).lower())
            if word and word not in _LIGHT:
                found += _kanji(word, unigrams) if kanji else [word]
    return tuple(found)


def _grammar(surface: str, pos: Sequence[str], before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether a content word's part of speech (and its neighbours') says it carries the
    sentence's grammar, not its subject:

    * a verb that can be an auxiliary, right after a verb or a て (使って|いる,
      し|始める); alone it is a verb of its own (誰が|始めた: 始める); an adjective or
      adjectival noun that can be an auxiliary (無い, 良い);
    * an adverbial noun of one kanji or of kana: time and manner (いま, 今, とき), as
      "now" and "when" are stop words (one of kanji names a thing: 時刻, 期間);
    * a numeral and the counter after it (何|台, 一|回): a quantity asked or said, not
      a thing (a document says 複数 or 一度)."""
    if pos[1] in ("非自立可能", "助動詞語幹") and pos[0] != "名詞":
        after_verb = before[0] in ("動詞", "助動詞") or tuple(before[:2]) == ("助詞", "接続助詞")
        return pos[0] != "動詞" or after_verb
    if pos[0] == "名詞" and pos[2] == "副詞可能":
        return len(surface) == 1 or not _KANJI.search(surface)
    if pos[1] == "数詞":
        return (after[0] == "名詞" and after[2] == "助数詞可能") or after[2] == "助数詞"
    return pos[2] == "助数詞可能" and before[:2] == ("名詞", "数詞")


def _kanji(word: str, unigrams: bool = False) -> list[str]:
    """A word as its terms when kanji count on their own: a word of kanji is itself and
    each of its kanji ("削除": 削除 削 除); a word of kanji and kana (a verb, an adjective)
    only its kanji ("消す": 消, "要る": 要, so they meet "消去" and "不要"); a word of
    kana is itself."""
    chars = _KANJI.findall(word)
    if not chars:
        return [word]
    if len(chars) == len(word):
        return [word, *chars] if len(word) > 1 and not unigrams else chars
    return chars


def words(run: str) -> tuple[str, ...] | None:
    """The content words of a run of Japanese (normalised dictionary forms), or ``None``
    when no segmenter is installed (the caller falls back to bigrams)."""
    if _tokenizer() is None:
        return None
    return _cached(run) if len(run) <= CACHED_RUN else _segment(run)
