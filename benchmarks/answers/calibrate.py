"""``python -m benchmarks.answers.calibrate [--part dev] [--index-dir DIR] [--out F]``:
how well each way of ranking passages finds the passage that holds a question's answer,
and the blend of words and meaning (``research_fsm.deep._meaning``) fitted on it.

For every question of the documentation sets' part, the passages the offline answerer
would weigh (the full-text index's best, matching all the question's terms and then any,
and the nearest by the embedding model) are each described by their words' score
(``passage_score``) and their similarity to the question (the stored passage vector). A
passage *answers* when it holds one of the question's expected facts.

It prints, per ranking, how often an answering passage is first and in the first eight
(the candidates a session judges), and for the blend ``words + WEIGHT x (similarity -
FLOOR)`` the grid's best pair: the one that refuses every unanswerable question (no
candidate at ``ANSWER_CUTOFF``) while refusing the fewest answerable ones, ties broken by
answering passages among the analysed ones (the first ``top_k``), then in the first
eight. The fit is for the dev part only: never run it on the held-out part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from research_fsm.deep._answer import ANSWER_CUTOFF, one_line_blocks, parse_question, passage_score
from research_fsm.deep._meaning import applies, fuse
from research_fsm.deep._model import DEFAULT_TOP_K
from research_fsm.deep._search import POOL, DocumentSearch, _stem_of
from research_fsm.documents import EMBEDDER_ENV, DocumentIndex

from .__main__ import fact_in, set_questions
from ._docsets import ensure, load_sets

TOP: int = 8
"""Candidates a session judges per search (``_nodes.SEARCH_LIMIT``)."""
ANALYSED: int = DEFAULT_TOP_K
"""Candidates a session analyses (the default ``top_k``): where a fact must rank to be
claimed."""


async def _features(
    name: str, questions: list[dict[str, Any]], corpus: Path, index_dir: Path
) -> list[dict[str, Any]]:
    rows = []
    async with await DocumentIndex.open(corpus, cache_dir=index_dir) as index:
        search = DocumentSearch(index)
        names = await index.names()
        for q in questions:
            text = q["question"]
            parsed = parse_question(text, names)
            words = " ".join(parsed.words[t] for t in parsed.terms) or text
            exact = await index.search(words, limit=POOL, match="all")
            loose = await index.search(words, limit=POOL, match="any")
            near = await index.nearest(text, limit=POOL) if applies(text) else []
            pool = fuse(exact, loose, near)
            weights, _ = await search.term_weights(text)
            close = await index.similarity(text, pool) if near else None
            cands = []
            for order, p in enumerate(pool):
                context = " ".join([p.title, *p.headings, _stem_of(p.path)])
                lex, _, _ = passage_score(
                    parsed,
                    p.text,
                    context,
                    weights,
                    headings=p.headings,
                    lines=one_line_blocks(p.path),
                )
                holds = any(
                    fact_in(alt, p.text)
                    for fact in q["facts"]
                    if fact["file"] == p.path
                    for alt in fact["any"]
                )
                cands.append(
                    {
                        "lex": round(lex, 4),
                        "cos": close[order] if close is not None else None,
                        "exact": p in exact,
                        "rrf": order,
                        "holds": holds,
                    }
                )
            rows.append(
                {"id": q["id"], "set": name, "kind": q["kind"], "lang": q["lang"], "cands": cands}
            )
    return rows


def _blend(c: dict[str, Any], weight: float, floor: float) -> float:
    if c["cos"] is None:
        return float(c["lex"])
    return float(c["lex"]) + weight * (float(c["cos"]) - floor)


def evaluate(rows: list[dict[str, Any]], weight: float, floor: float) -> dict[str, float]:
    """Ranking and refusal figures of the blend ``(weight, floor)`` (0, 0: words alone)."""
    first = analysed = top = answerable = refused = unanswered_answered = unanswerable = 0
    for row in rows:
        ranked = sorted(row["cands"], key=lambda c: -_blend(c, weight, floor))[:TOP]
        answers = bool(ranked) and _blend(ranked[0], weight, floor) >= ANSWER_CUTOFF
        if row["kind"] == "unanswerable":
            unanswerable += 1
            unanswered_answered += answers
            continue
        answerable += 1
        refused += not answers
        first += bool(ranked) and ranked[0]["holds"]
        analysed += any(c["holds"] for c in ranked[:ANALYSED])
        top += any(c["holds"] for c in ranked)
    return {
        "first": round(first / max(answerable, 1), 3),
        "in_analysed": round(analysed / max(answerable, 1), 3),
        "in_top": round(top / max(answerable, 1), 3),
        "answerable_refused": round(refused / max(answerable, 1), 3),
        "unanswerable_answered": round(unanswered_answered / max(unanswerable, 1), 3),
    }


def fit(rows: list[dict[str, Any]]) -> tuple[float, float, dict[str, float]]:
    """The grid's best ``(weight, floor)``: every unanswerable question refused, then the
    fewest answerable ones refused, then the most answering passages among those analysed
    (the first ``ANALYSED``), then in the first eight."""
    best: tuple[tuple[float, ...], float, float, dict[str, float]] | None = None
    for weight in [x / 10 for x in range(0, 81, 2)]:
        for floor in [x / 100 for x in range(0, 81, 2)]:
            got = evaluate(rows, weight, floor)
            key = (
                got["unanswerable_answered"],
                got["answerable_refused"],
                -got["in_analysed"],
                -got["in_top"],
            )
            if best is None or key < best[0]:
                best = (key, weight, floor, got)
    assert best is not None
    return best[1], best[2], best[3]


def main(argv: list[str] | None = None) -> int:
    """Collect the features, print the rankings' figures and the fitted blend."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.answers.calibrate")
    parser.add_argument("--part", choices=("dev",), default="dev")
    parser.add_argument("--set", default="all")
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("calibration.json"))
    parser.add_argument("--features", type=Path, default=None, help="reuse a features file")
    args = parser.parse_args(argv)
    if args.features is not None:
        rows = json.loads(args.features.read_text(encoding="utf-8"))["rows"]
    else:
        sets = load_sets()
        names = list(sets) if args.set == "all" else args.set.split(",")
        questions = set_questions(args.part)
        rows = []
        with tempfile.TemporaryDirectory() as temp:
            for name in names:
                corpus = ensure(sets[name], offline=True)
                base = args.index_dir / name if args.index_dir else Path(temp) / name
                chosen = [q for q in questions if q["set"] == name]
                rows += asyncio.run(_features(name, chosen, corpus, base / "indexes"))
    english = [r for r in rows if r["lang"] == "en"]
    report: dict[str, Any] = {"embedder": os.environ.get(EMBEDDER_ENV, "")}
    for label, part in (("all", rows), ("en", english)):
        report[f"words alone / {label}"] = evaluate(part, 0.0, 0.0)
    weight, floor, got = fit(rows)
    report["fitted"] = {"weight": weight, "floor": floor, **got}
    report["fitted / en"] = evaluate(english, weight, floor)
    for key, value in report.items():
        print(f"{key}: {value}")
    args.out.write_text(json.dumps(report | {"rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
