"""Search terms: the quick check for Japanese and Chinese text agrees with the CJK
pattern it stands in front of."""

from __future__ import annotations

import random

import pytest

from research_fsm.documents._terms import CJK, cjk_bigrams, has_cjk


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ASCII",
        "em \u2014 dash \u2019 quote",
        "\u303f\u2fff",
        "\u3040",
        "移行",
        "한국어",
        "ｶﾅ",
        "😀",
    ],
)
def test_has_cjk_agrees_with_the_pattern(text: str) -> None:
    """Each range's edges and the characters just outside them."""
    assert (CJK.search(text) is not None) == has_cjk(text)


def test_has_cjk_agrees_on_random_mixtures() -> None:
    """Random strings over ASCII, punctuation, kana, ideographs, Hangul and emoji."""
    rng = random.Random(7)
    points = [*range(32, 127), *range(0x2000, 0x2100), *range(0x3000, 0x3100)]
    points += [*range(0x4DB0, 0x4E10), *range(0xABF0, 0xAC05), *range(0xFF60, 0xFFA0), 0x1F600]
    texts = [
        "".join(chr(rng.choice(points)) for _ in range(rng.randint(0, 8))) for _ in range(5000)
    ]
    assert [CJK.search(t) is not None for t in texts] == [has_cjk(t) for t in texts]


def test_text_without_cjk_is_returned_as_it_is() -> None:
    """No rewrite (the same object) when there is nothing to pair."""
    text = "Spring Boot \u2014 \u2018three\u2019"
    assert cjk_bigrams(text) is text
    assert " 移行 行手 手順 順を を確 確認 " == cjk_bigrams("移行手順を確認")
