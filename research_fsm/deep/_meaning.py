"""Meaning beside words: how close a passage or a sentence is to the question, by the
embedding model of ``documents._vectors`` (none installed: words alone, and every score
here is the lexical one unchanged).

- **Hybrid retrieval**: the passages BM25 finds and those nearest the question's vector,
  merged by reciprocal-rank fusion (``fuse``), so a passage that says it in other words
  ("Use binary search to find the commit that introduced a bug" for "which commit broke my
  code") is a candidate.
- **Scores**: a passage's score is its lexical one plus ``WEIGHT`` times how far its
  closest sentence's similarity to the question exceeds ``FLOOR``; a sentence's, when the
  answering ones are chosen, plus ``UNIT_WEIGHT`` times its own (``blend``). Measured on
  the dev sets of ``benchmarks.answers`` (and a set of questions in other words over the
  Rust error index), a static model's similarity does not separate answerable questions
  from unanswerable ones (the best sentences of unanswerable ones reach 0.6): meaning adds
  at most a quarter, it reorders and rescues near misses, and it never answers alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..documents import similarities

if TYPE_CHECKING:
    from ..documents import Passage

__all__ = ["FLOOR", "RRF_K", "UNIT_WEIGHT", "WEIGHT", "blend", "closest", "fuse", "similarities"]

RRF_K: Final = 60
"""Reciprocal-rank fusion's constant: a passage's fused score is the sum of
``1 / (RRF_K + rank)`` over the rankings it is in."""
FLOOR: Final = 0.5
"""Similarity (cosine) below which meaning adds nothing."""
WEIGHT: Final = 0.5
"""What each unit of similarity above ``FLOOR`` adds to a passage's lexical score."""
UNIT_WEIGHT: Final = 0.5
"""What it adds to a sentence's (a unit's) score, when choosing the answering ones."""


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


def blend(lexical: float, similarity: float | None, weight: float = WEIGHT) -> float:
    """A lexical score lifted by meaning: ``weight`` per unit of similarity over ``FLOOR``."""
    if similarity is None:
        return lexical
    return round(lexical + weight * max(0.0, similarity - FLOOR), 4)
