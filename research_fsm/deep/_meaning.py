"""Meaning beside words: how close a passage or a sentence is to the question, by the
embedding model of ``documents._vectors`` (none installed: words alone, and every score
here is the lexical one unchanged).

- **Hybrid retrieval**: the passages BM25 finds and those nearest the question's vector,
  merged by reciprocal-rank fusion (``fuse``), so a passage that says it in other words
  ("Use binary search to find the commit that introduced a bug" for "which commit broke my
  code") is a candidate.
- **Scores**: a passage's or a unit's score is its lexical one plus ``WEIGHT`` times how
  far its similarity to the question exceeds ``FLOOR`` (``blend``): similar meaning lifts
  a passage that covers few of the question's words over the cut-off, an unrelated one
  gains nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..documents import passage_text, similarities

if TYPE_CHECKING:
    from ..documents import Passage

__all__ = ["FLOOR", "RRF_K", "WEIGHT", "blend", "closest", "fuse", "passage_text", "similarities"]

RRF_K: Final = 60
"""Reciprocal-rank fusion's constant: a passage's fused score is the sum of
``1 / (RRF_K + rank)`` over the rankings it is in."""
FLOOR: Final = 0.5
"""Similarity (cosine) below which meaning adds nothing."""
WEIGHT: Final = 0.5
"""What each unit of similarity above ``FLOOR`` adds to a lexical score."""


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
