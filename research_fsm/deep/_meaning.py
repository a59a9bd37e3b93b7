"""Meaning beside words: how close a passage or a sentence is to the question, by the
embedding model of ``documents._vectors`` (none installed: words alone, and every score
here is the lexical one unchanged).

- **Hybrid retrieval**: the passages BM25 finds and those nearest the question's vector,
  merged by reciprocal-rank fusion (``fuse``), so a passage that says it in other words
  ("Use binary search to find the commit that introduced a bug" for "which commit broke my
  code") is a candidate.
- **Scores**: a passage's score is its lexical one plus ``WEIGHT`` times how far its
  closest sentence's similarity to the question exceeds ``FLOOR`` (``blend``).
- **Not**: the answering sentences are chosen by their words alone, and a question in
  Japanese or Chinese is searched by words alone (``applies``). Measured on the dev part
  of ``benchmarks.answers`` (125 questions over seven documentation sets), lifting sentences
  by meaning lost facts (21% -> 17% found) and the model's Llama 2 vocabulary spells
  Japanese byte by byte (its questions lost a third of their facts); without both, facts
  found stay level (22% -> 21%) and citations are more precise (59% -> 64%). A static model's similarity does not separate
  answerable questions from unanswerable ones (their best sentences reach 0.6): meaning
  adds at most a quarter, it reorders and rescues near misses, it never answers alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..documents import CJK, similarities

if TYPE_CHECKING:
    from ..documents import Passage

__all__ = ["FLOOR", "RRF_K", "WEIGHT", "applies", "blend", "closest", "fuse", "similarities"]

RRF_K: Final = 60
"""Reciprocal-rank fusion's constant: a passage's fused score is the sum of
``1 / (RRF_K + rank)`` over the rankings it is in."""
FLOOR: Final = 0.5
"""Similarity (cosine) below which meaning adds nothing."""
WEIGHT: Final = 0.5
"""What each unit of similarity above ``FLOOR`` adds to a passage's lexical score."""


def applies(question: str) -> bool:
    """Whether meaning is used for ``question``: not for one in Japanese or Chinese (the
    model's Llama 2 vocabulary spells most of their characters byte by byte)."""
    return CJK.search(question) is None


def fuse(*rankings: Sequence[Passage]) -> list[Passage]:
    """The passages of every ranking once (the first copy kept), by reciprocal-rank fusion."""
    scores: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking, 1):
            key = (passage.path, passage.start)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, passage)
    order = sorted(scores, key=lambda key: -scores[key])
    return [first[key] for key in order]


def closest(question: str, statements: Sequence[str]) -> float | None:
    """The greatest similarity of ``statements`` (a passage's units) to ``question``;
    ``None`` without a model (or without statements)."""
    found = similarities(question, statements)
    return max(found) if found else None


def blend(lexical: float, similarity: float | None) -> float:
    """A lexical score lifted by meaning: ``WEIGHT`` per unit of similarity over ``FLOOR``."""
    if similarity is None:
        return lexical
    return round(lexical + WEIGHT * max(0.0, similarity - FLOOR), 4)
