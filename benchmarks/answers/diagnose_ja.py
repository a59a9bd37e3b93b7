"""``python -m benchmarks.answers.diagnose_ja [--set ja] [--index-dir DIR]``: where each
expected fact of the documentation sets' Japanese dev questions is lost.

Each question is researched offline as ``python -m benchmarks.answers`` does, then every
expected fact is put at the first stage it did not pass:

* ``not indexed``: no passage of the index holds it (the extractor lost it, or it is cut
  between two passages);
* ``not retrieved``: no passage that holds it was among the session's candidates (its
  rank in the search's pool of ``POOL``, matching all the question's terms, then any, is
  shown: ``-`` when outside it);
* ``below cut-off``: a candidate holds it but scored under ``RELEVANCE_CUTOFF``;
* ``not chosen``: a kept passage holds it, no verified claim does;
* ``found``.

The question's salient terms (as ``parse_question`` gives them) and their weights are
printed beside it. For the dev part only: never run it on the held-out part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from research_fsm.deep._answer import parse_question
from research_fsm.deep._rules import RELEVANCE_CUTOFF
from research_fsm.deep._search import POOL, DocumentSearch
from research_fsm.documents import EMBEDDER_ENV, DocumentIndex

from .__main__ import fact_in, run, set_questions
from ._docsets import ensure, load_sets

STAGES = ("not indexed", "not retrieved", "below cut-off", "not chosen", "found")


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def _holds(fact: dict[str, Any], text: str) -> bool:
    return any(fact_in(alt, text) for alt in fact["any"])


def _stage(fact: dict[str, Any], folder: Path, indexed: list[tuple[str, str]]) -> str:
    if not any(_holds(fact, text) for _, text in indexed):
        return "not indexed"
    sources = {s["id"]: s for s in _load(folder / "search_results.json")}
    verdicts = {v["source"]: v for v in _load(folder / "relevance.json")}
    holding = [sid for sid, s in sources.items() if _holds(fact, s["text"])]
    if not holding:
        return "not retrieved"
    if not any(verdicts.get(sid, {}).get("relevant") for sid in holding):
        return "below cut-off"
    checks: list[dict[str, Any]] = []
    if (folder / "verification.json").exists():
        checks = _load(folder / "verification.json")["history"][-1]["checks"]
    if any(c["supported"] and _holds(fact, c["text"]) for c in checks):
        return "found"
    return "not chosen"


async def _ranks(
    questions: list[dict[str, Any]], corpus: Path, cache: Path
) -> dict[str, dict[str, Any]]:
    """Per question: its terms and weights, and per fact the rank of the first passage
    holding it in the search's own ranking (all terms, then any)."""
    out: dict[str, dict[str, Any]] = {}
    async with await DocumentIndex.open(corpus, cache_dir=cache) as index:
        search = DocumentSearch(index)
        names = await index.names()
        for q in questions:
            parsed = parse_question(q["question"], names)
            weights, _ = await search.term_weights(q["question"])
            ranks = []
            for fact in q["facts"]:
                found = []
                for broadened in (False, True):
                    pool = await search.search(q["question"], limit=POOL, broadened=broadened)
                    rank = next((i for i, p in enumerate(pool, 1) if _holds(fact, p.text)), None)
                    found.append("-" if rank is None else str(rank))
                ranks.append("/".join(found))
            out[q["id"]] = {
                "kind": parsed.kind,
                "terms": {parsed.words[t]: round(weights.get(t, 0.0), 2) for t in parsed.terms},
                "ranks": ranks,
            }
    return out


def _passages(cache: Path) -> list[tuple[str, str]]:
    [path] = [p for p in cache.glob("*.sqlite")]
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT files.path, passages.text FROM passages JOIN files ON files.id = file_id"
        ).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def main(argv: list[str] | None = None) -> int:
    """Run the dev questions of one set and print where each expected fact is lost."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.answers.diagnose_ja")
    parser.add_argument("--set", default="ja")
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.embedder is not None:
        os.environ[EMBEDDER_ENV] = args.embedder
    questions = [q for q in set_questions("dev") if q["set"] == args.set]
    corpus = ensure(load_sets()[args.set], offline=True)
    with tempfile.TemporaryDirectory(prefix="diagnose-") as temp:
        home = (args.index_dir or Path(temp)) / args.set
        results = asyncio.run(run(questions, corpus, home))
        indexed = _passages(home / "indexes")
        ranks = asyncio.run(_ranks(questions, corpus, home / "indexes"))
        rows = []
        for q, r in zip(questions, results, strict=True):
            folder = Path(r["session"])
            stages = [_stage(fact, folder, indexed) for fact in q["facts"]]
            rows.append({"id": q["id"], "stages": stages, **ranks[q["id"]], "result": r})
    counts = {stage: 0 for stage in STAGES}
    for row in rows:
        q = next(q for q in questions if q["id"] == row["id"])
        answered = "answered" if row["result"]["answered"] else "refused"
        print(
            f"{row['id']} {row['kind']:8} {answered:8} best {row['result']['best_passage']:.2f}"
            f"  {q['question']}"
        )
        print(f"    terms {row['terms']}")
        for fact, stage, rank in zip(q["facts"], row["stages"], row["ranks"], strict=True):
            counts[stage] += 1
            print(f"    {stage:14} rank(all/any) {rank:6} {fact['any'][0]}")
    print()
    print("| stage | facts |")
    print("|---|---|")
    for stage, count in counts.items():
        print(f"| {stage} | {count} |")
    print(f"(cut-off {RELEVANCE_CUTOFF})")
    if args.out is not None:
        for row in rows:
            row["result"].pop("session", None)
        args.out.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
