"""``python -m benchmarks.answers.diagnose [--set all] [--index-dir DIR]``: where each
expected fact of the documentation sets' dev questions is lost.

Each question is researched offline as ``benchmarks.answers`` does it; each of its facts is
then put at the first stage that lost it:

* ``extraction``: no indexed passage holds it (the text is damaged, or the fact straddles
  two passages: ``split`` says which when the file's whole text holds it);
* ``retrieval``: no source the session retrieved holds it;
* ``refused``: it was retrieved, but the question was refused (no passage over the cut-off);
* ``relevance``: retrieved and the question answered, but the passage holding it was judged
  not relevant or not among the ``top_k`` analysed;
* ``choice``: its passage was analysed, but no chosen unit (fact) holds it;
* ``draft``: a chosen unit holds it, but the draft left it out (under the floor, a cap);
* ``verify``: drafted, but its claim was not supported;
* ``found``: in a verified claim.

Beside it, retrieval recall at k (5, 20, 50): whether the question's search (hybrid:
words and meaning fused and ranked as ``DocumentSearch`` does), words alone (BM25, all
terms then any), and meaning alone (nearest vectors) put a passage holding the fact in the
first k. Prints a table by stage and set, one of recall, and writes JSON (``--out``).
The dev part only: the held-out part is never read here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from research_fsm.deep import DeepRunner
from research_fsm.deep._answer import parse_question
from research_fsm.documents import EMBEDDER_ENV
from research_fsm.engine import MemoryCheckpointStore

from .__main__ import fact_in, set_questions
from ._docsets import SetUnavailable, ensure, load_sets

STAGES = ("extraction", "retrieval", "refused", "relevance", "choice", "draft", "verify", "found")
KS = (5, 20, 50)


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _holds(fact: dict[str, Any], text: str) -> bool:
    return any(fact_in(alt, text) for alt in fact["any"])


def _rank(fact: dict[str, Any], texts: list[str]) -> int | None:
    """The 1-based rank of the first text holding the fact."""
    return next((i for i, text in enumerate(texts, 1) if _holds(fact, text)), None)


def stage_of(fact: dict[str, Any], folder: Path, in_passages: bool) -> str:
    """The first stage of the session in ``folder`` that lost ``fact``."""
    if not in_passages:
        return "extraction"
    sources = _load(folder / "search_results.json") or []
    holding = {s["id"] for s in sources if _holds(fact, s["text"])}
    if not holding:
        return "retrieval"
    checks = (_load(folder / "verification.json") or {"history": [{"checks": []}]})["history"][-1][
        "checks"
    ]
    if not checks:
        return "refused"
    if any(c["supported"] and _holds(fact, c["text"]) for c in checks):
        return "found"
    analyses = _load(folder / "evidence.json") or []
    analysed = {a["source"] for a in analyses}
    if not holding & analysed:
        return "relevance"
    statements = [
        f["statement"] for a in analyses if a["source"] in holding for f in a.get("facts", [])
    ]
    if not any(_holds(fact, s) for s in statements):
        return "choice"
    if not any(_holds(fact, c["text"]) for c in checks):
        return "draft"
    return "verify"


async def diagnose_set(
    name: str, questions: list[dict[str, Any]], corpus: Path, home: Path
) -> list[dict[str, Any]]:
    """Every fact of ``questions`` over one set: its stage and its recall ranks."""
    runner = DeepRunner(
        llm=None,
        store=MemoryCheckpointStore(),
        root=home / "sessions",
        web=None,
        index_dir=home / "indexes",
    )
    rows: list[dict[str, Any]] = []
    try:
        search = await runner.documents(str(corpus.resolve()))
        index = search.index
        passages = await asyncio.to_thread(
            lambda: [r[0] for r in index._db.execute("SELECT text FROM passages")]
        )
        files = await asyncio.to_thread(
            lambda: dict(index._db.execute("SELECT path, text FROM files").fetchall())
        )
        names = await index.names()
        top = max(KS)
        for question in questions:
            report = await runner.research(question["question"], docs=corpus)
            assert report.folder is not None
            hybrid = [
                f.text
                for f in await search.search(question["question"], limit=top, broadened=False)
            ]
            parsed = parse_question(question["question"], names)
            words = " ".join(parsed.words[t] for t in parsed.terms) or question["question"]
            lexical = [p.text for p in await index.search(words, limit=top, match="all")]
            lexical += [p.text for p in await index.search(words, limit=top, match="any")]
            nearest = [p.text for p in await index.nearest(question["question"], limit=top)]
            for number, fact in enumerate(question["facts"]):
                in_passages = any(_holds(fact, text) for text in passages)
                rows.append(
                    {
                        "set": name,
                        "id": question["id"],
                        "fact": number,
                        "question": question["question"],
                        "wanted": fact["any"][0],
                        "file": fact["file"],
                        "stage": stage_of(fact, report.folder, in_passages),
                        "split": not in_passages and _holds(fact, files.get(fact["file"], "")),
                        "hybrid": _rank(fact, hybrid),
                        "lexical": _rank(fact, lexical[:top]),
                        "nearest": _rank(fact, nearest),
                    }
                )
    finally:
        await runner.aclose()
    return rows


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def tables(rows: list[dict[str, Any]]) -> str:
    """The stage table (facts per stage, per set and overall) and the recall table."""
    sets = sorted({r["set"] for r in rows})
    out = ["| set | facts | " + " | ".join(STAGES) + " |", "|---" * (len(STAGES) + 2) + "|"]
    for name in [*sets, "all"]:
        part = [r for r in rows if name == "all" or r["set"] == name]
        counts = Counter(r["stage"] for r in part)
        cells = [f"{counts[s]} ({_pct(counts[s], len(part))})" for s in STAGES]
        out.append(f"| {name} | {len(part)} | " + " | ".join(cells) + " |")
    out += [
        "",
        "recall@k (facts with a passage holding them in the first k; extraction losses count as misses):",
    ]
    header = " | ".join(f"{kind}@{k}" for kind in ("hybrid", "lexical", "nearest") for k in KS)
    out += [f"| set | facts | {header} |", "|---" * (3 * len(KS) + 2) + "|"]
    for name in [*sets, "all"]:
        part = [r for r in rows if name == "all" or r["set"] == name]
        cells = [
            _pct(sum(1 for r in part if r[kind] is not None and r[kind] <= k), len(part))
            for kind in ("hybrid", "lexical", "nearest")
            for k in KS
        ]
        out.append(f"| {name} | {len(part)} | " + " | ".join(cells) + " |")
    split = sum(r["split"] for r in rows)
    out.append(
        f"\nextraction losses whose file's text holds the fact (split by passage cuts): {split}"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Diagnose the dev part of the chosen sets; print the tables, write the rows."""
    from ._candidates import register_candidates

    parser = argparse.ArgumentParser(prog="python -m benchmarks.answers.diagnose")
    parser.add_argument("--set", default="all", help="'all' or set names separated by commas")
    parser.add_argument(
        "--index-dir", type=Path, default=None, help="each set's index in DIR/<set>"
    )
    parser.add_argument("--embedder", default=None, help="minilm, wordllama or none")
    parser.add_argument("--out", type=Path, default=Path("diagnosis.json"))
    args = parser.parse_args(argv)
    if args.embedder is not None:
        register_candidates()
        os.environ[EMBEDDER_ENV] = args.embedder
    sets = load_sets()
    names = list(sets) if args.set == "all" else [n.strip() for n in args.set.split(",")]
    questions = [q for q in set_questions("dev") if q["kind"] != "unanswerable"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="diagnose-") as temp:
        for name in names:
            try:
                corpus = ensure(sets[name], offline=True)
            except SetUnavailable as error:
                print(f"skipped: {error}", file=sys.stderr)
                continue
            home = args.index_dir / name if args.index_dir is not None else Path(temp) / name
            chosen = [q for q in questions if q["set"] == name]
            rows += asyncio.run(diagnose_set(name, chosen, corpus, home))
    print(tables(rows))
    args.out.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
