"""Japanese questions as the offline rules see them: the words of a question's form
(「〜するには？」, 「〜は何？」, 「違いは？」) and the kind of answer each form asks for.

The forms are matched on the question's text; the form words are the dictionary forms
the segmenter gives (``documents.japanese_words``: 「違いは？」 is 違い, 「やり方」 is
遣り方), left out of the salient terms as "how do I" is in English: a passage need not
say 方法 to say how.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

__all__ = [
    "JA_COMPARE",
    "JA_FILLERS",
    "JA_SIDE_SPLIT",
    "asks",
    "japanese_kind",
    "spelled_by_kanji",
    "without_form",
]

JapaneseKind = Literal["howto", "define", "value", "compare", "yesno"]

_FILLER_WORDS: Final = """方法 仕方 遣り方 やり方 手順 何 なに 違い 違う 異なる 比較 差 差異 意味
    教える 知る 分かる 分る 判る 使える 注意 注意点 気 付ける 点 ポイント 良い 可能 どちら
    どれ どの 如何 説明 理由 原因 解決 直す 直る 起きる 起こる 件 具体 的 一番 最も 簡単 コマンド"""
JA_FILLERS: Final = frozenset(_FILLER_WORDS.split())
"""Dictionary forms of a question's form words (方法, 何, 違い, 注意 as in 「注意する
ことは？」), not of its subject."""

_END: Final = r"\s*(?:です|でしょう|ます)?か?[?？。!！]*\s*$"
JA_COMPARE: Final = re.compile(r"違い|違う|異な[るり]|比較|差異|どちらが|どう違")
"""A comparison: 「A と B の違いは？」, 「A と B は何が違う？」."""
JA_SIDE_SPLIT: Final = re.compile(r"と(?![はがも]?\s*$)|や|、|,|\b(?:and|or|vs\.?|versus)\b")
"""Between the sides of a comparison."""
_HOWTO: Final = re.compile(
    r"(?:する|やる|行う|できる|出来る|には)(?:には|ためには|方法|手順)"
    r"|には" + _END + r"|方法|やり方|仕方|手順|どうやって|どうすれば|どうしたら|どのようにして"
    r"|どのように(?:すれば|したら|して)|コマンドは|コマンドを(?:教え|知り)|どうやる|する(?:の)?は"
    + _END
    + r"|[^\s\W\d]たい(?:んだけど|のですが|けど)?"
    + _END
    + r"|どうす(?:る|んの|るの)"
    + _END
)
"""「〜するには？」, 「〜の方法」, 「どうやって〜」, 「〜するコマンドは？」, 「〜したい」 (what one
wants done: how to do it), 「〜にはどうする？」."""
_DEFINE: Final = re.compile(
    r"(?<![こも])とは"
    + _END
    + r"|とは(?:何|なに|なん)|って(?:何|なに|なん)(?![番個件回秒分日度文])|は(?:何|なに|なん)(?:のこと)?"
    + _END
    + r"|の意味|どういう意味|何を(?:する|します|している)|何のため|なぜ|なんで|どうして|原因"
)
"""「〜とは？」, 「〜は何？」, 「〜って何？」, 「〜の意味は？」, 「なぜ〜？」."""
_VALUE: Final = re.compile(
    r"いくつ|何個|何件|何回|何秒|何分|何日|何バイト|何番|何文字|どれ|どの|どこ|いつ|誰|だれ"
    r"|デフォルト|既定|初期値|上限|下限|最大|最小|何[がを]"
)
"""「いくつ」, 「どれ」, 「デフォルトは」: a value, a name or a number."""
_YESNO: Final = re.compile(
    r"(?:ます|です|できます|あります|でしょう)か[?？。]*\s*$|[るいた]の[?？]\s*$"
)


def japanese_kind(text: str) -> JapaneseKind | None:
    """The kind of answer a Japanese question asks for, or ``None`` (general)."""
    if JA_COMPARE.search(text):
        return "compare"
    if _HOWTO.search(text):
        return "howto"
    if _DEFINE.search(text):
        return "define"
    if _VALUE.search(text):
        return "value"
    if _YESNO.search(text):
        return "yesno"
    return None


_FORM: Final = re.compile(
    r"(?:は|って|とは)?(?:何が|どこが|どう)違[うい]\S*|の?違いは\S*|の?違い\S*"
    r"|(?:する|やる|行う)?(?:には|ためには)(?:どう(?:すれば|したら)(?:いい|よい)?)?[?？]?\s*$"
    r"|(?:の|する)?(?:方法|やり方|仕方|手順)(?:は|を教えて)?\S*"
    r"|どうやって|どうすれば(?:いい|よい)?|どうしたら(?:いい|よい)?|どのようにして|どのように"
    r"|(?<![こも])とは(?:何|なに|なん)?\S*$|って(?:何|なに|なん)\S*$|は(?:何|なに|なん)(?:のこと)?\S*$"
    r"|(?:する|した)?こと[はが]?[?？]?\s*$|の意味\S*|どういう意味\S*|教えて\S*"
)
"""The words of a Japanese question's form (「の違いは？」, 「するには？」, 「とは？」,
「どうやって」), cut before its terms are taken: whatever the segmentation, what is left
is the question's subject."""


_OBLIGATION: Final = re.compile(
    r"(な(?:いと|くては|くちゃ|きゃ|ければ))(?:ダメ|だめ|駄目|いけない|ならない|まずい)\S*$"
)
"""「〜ないとダメ？」, 「〜なければならない？」: whether one must; the verb before it keeps
its ending (cut there, 「残さ」 reads as another word)."""


def without_form(text: str) -> str:
    """``text`` without the words of its question form."""
    return _FORM.sub(" ", _OBLIGATION.sub(r"\1 ", text))


_ASKS: Final = re.compile(r"(?:[?？]|(?:ます|です|でしょう|ません)か[。]?)\s*$")
_JAPANESE: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def asks(statement: str) -> bool:
    """Whether a Japanese sentence is itself a question (an FAQ's heading, 「〜する方法は?」):
    it asks, it answers nothing."""
    return _JAPANESE.search(statement) is not None and _ASKS.search(statement) is not None


_KANJI: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々]")


def spelled_by_kanji(term: str, terms: Iterable[str]) -> bool:
    """Whether ``term`` is a word of two or more kanji each of which is also one of
    ``terms`` (the segmentation gives a word's kanji beside it): where the documents never
    use the word (全部), its kanji (全, 部) can stand for it."""
    chars = _KANJI.findall(term)
    return len(chars) >= 2 and len(chars) == len(term) and set(chars) <= set(terms)
