"""A long run of text with no blank line (a PDF page, a man page) is cut into passages at a
line that ends a sentence or starts a list item, never inside a word or mid-sentence when a
better place is near."""

from __future__ import annotations

import random

from research_fsm.documents._passages import MAX_CHARS, split


def _page(seed: int) -> str:
    """A PDF-like page: wrapped lines, sentences running over line ends, bullet items."""
    rng = random.Random(seed)
    words = [
        "the",
        "output",
        "is",
        "piped",
        "through",
        "a",
        "driver",
        "which",
        "produces",
        "larger",
        "files",
        "and",
        "metadata",
    ]
    lines: list[str] = []
    for _ in range(120):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30)))
        wrapped = [sentence[i : i + 70] for i in range(0, len(sentence), 70)]
        if rng.random() < 0.7:  # most are list items with no full stop, as in a PDF's lists
            wrapped[0] = "• " + wrapped[0]
        else:
            wrapped[-1] += "."
        lines += wrapped
    return "\n".join(lines)


def test_no_passage_of_a_long_page_ends_inside_a_word() -> None:
    """Every cut falls between words, and no passage is longer than ``MAX_CHARS``."""
    for seed in range(20):
        text = _page(seed)
        for span in split(text, [0]):
            assert span.end - span.start <= MAX_CHARS
            if span.end < len(text):
                assert not (text[span.end - 1].isalnum() and text[span.end].isalnum())


def test_a_long_page_is_cut_after_a_sentence_or_before_an_item() -> None:
    """A passage ends with a full stop or just before a bullet, as a reader would cut it."""
    for seed in range(20):
        text = _page(seed)
        for span in split(text, [0])[:-1]:
            ends_sentence = text[span.start : span.end].rstrip().endswith(".")
            item_follows = text[span.end :].lstrip().startswith("•")
            assert ends_sentence or item_follows, text[span.end - 40 : span.end + 10]


def test_a_word_longer_than_half_a_passage_is_still_cut() -> None:
    """Text with no space at all (a base64 blob) still becomes passages of bounded size."""
    text = "x" * (MAX_CHARS * 3 + 7)
    spans = split(text, [0])
    assert sum(span.end - span.start for span in spans) == len(text)
    assert max(span.end - span.start for span in spans) <= MAX_CHARS
