"""``python -m benchmarks.answers [--quick] [--split dev|heldout|all] [--out PATH]``:
offline deep research over the READMEs of installed packages, scored against questions
whose facts a person looked up (``questions.json``, file and line for each fact).

Prints and writes (JSON) per question and overall:

* **facts found**: expected facts present in the report's verified claims;
* **citation precision**: verified claims whose cited passage is from a file the answer
  is in and holds the claim's evidence verbatim;
* **quotes verbatim**: evidence quotes found word for word in the cited source's text
  (and, informative, in the original file with its spacing normalised);
* **refusals**: unanswerable questions refused (must be all), answerable ones refused;
* **grounding**: ``grounding_problems`` of each session (no URL or file not retrieved);
* **time**: median seconds per question with the index built.

``--quick`` runs six questions (two of each kind) for CI's smoke test. ``--questions
PATH`` reads another question file; its ``packages`` (when given) make the corpus, e.g.
``generalisation.json``: five questions on packages the dev set does not use, checked by
reading their files and never tuned for. ``--docs DIR`` takes a folder as the corpus
instead, for a question file written for it: ``rust_errors.json``, twelve questions on the
Rust compiler's error index (HTML pages), with ``--docs "$(rustc --print
sysroot)/share/doc/rust/html/error_codes"``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from research_fsm.deep import DeepRunner, grounding_problems, quote_in
from research_fsm.engine import MemoryCheckpointStore

from ._corpus import PACKAGES, build_corpus

HERE = Path(__file__).resolve().parent
QUICK_IDS = ("d01", "d09", "d19", "d21", "d23", "d25")
GOALS = {
    "facts_found": 0.8,
    "citation_precision": 1.0,
    "quotes_verbatim": 1.0,
    "unanswerable_refused": 1.0,
    "answerable_refused_max": 0.05,
    "median_seconds_max": 2.0,
}


def _flat(text: str) -> str:
    return " ".join(text.replace("\\", "").replace("`", "").split()).lower()


def load_questions(
    split: str, quick: bool, path: Path = HERE / "questions.json"
) -> list[dict[str, Any]]:
    """The questions of ``split`` (``all``: every split), or the quick six."""
    questions = json.loads(path.read_text(encoding="utf-8"))["questions"]
    if quick:
        return [q for q in questions if q["id"] in QUICK_IDS]
    return [q for q in questions if split == "all" or q["split"] == split]


def stale_facts(questions: list[dict[str, Any]], corpus: Path) -> list[str]:
    """Facts no longer on their recorded line (another version of a package installed)."""
    stale = []
    for question in questions:
        for fact in question["facts"]:
            lines = (corpus / fact["file"]).read_text(encoding="utf-8").split("\n")
            line = _flat(lines[fact["line"] - 1]) if fact["line"] <= len(lines) else ""
            if not any(_flat(alt) in line for alt in fact["any"]):
                stale.append(f"{question['id']}: {fact['file']}:{fact['line']}")
    return stale


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def score(question: dict[str, Any], folder: Path, corpus: Path) -> dict[str, Any]:
    """One finished session scored against its question."""
    sources = {s["id"]: s for s in _load(folder / "search_results.json")}
    checks: list[dict[str, Any]] = []
    if (folder / "verification.json").exists():
        checks = _load(folder / "verification.json")["history"][-1]["checks"]
    claims = [c for c in checks if c["supported"]]
    files = {f["file"] for f in [*question["facts"], *question.get("also", [])]}
    found = [
        any(_flat(alt) in _flat(c["text"]) for c in claims for alt in fact["any"])
        for fact in question["facts"]
    ]
    precise = verbatim = original = 0
    for claim in claims:
        source = sources[claim["source"]]
        quote = claim["evidence"] or ""
        in_source = quote_in(quote, source["text"])
        verbatim += in_source
        raw = (corpus / source["locator"]).read_text(encoding="utf-8")
        original += " ".join(quote.split()) in " ".join(raw.split())
        precise += in_source and source["locator"] in files
    verdicts = _load(folder / "relevance.json") if (folder / "relevance.json").exists() else []
    return {
        "best_passage": max((v["score"] for v in verdicts), default=0.0),
        "claims": len(claims),
        "answered": bool(claims),
        "facts": len(found),
        "facts_found": sum(found),
        "precise": precise,
        "verbatim": verbatim,
        "verbatim_original": original,
        "grounding": grounding_problems(folder),
        "summary": " ".join(c["text"] for c in claims[:2])[:300],
        "cited_files": sorted({sources[c["source"]]["locator"] for c in claims}),
    }


async def run(questions: list[dict[str, Any]], corpus: Path, home: Path) -> list[dict[str, Any]]:
    """Each question researched offline (index built first), scored."""
    runner = DeepRunner(
        llm=None,
        store=MemoryCheckpointStore(),
        root=home / "sessions",
        web=None,
        index_dir=home / "indexes",
    )
    results = []
    try:
        await runner.documents(str(corpus.resolve()))
        for question in questions:
            started = time.perf_counter()
            report = await runner.research(question["question"], docs=corpus)
            seconds = time.perf_counter() - started
            assert report.folder is not None
            scored = score(question, report.folder, corpus)
            scored |= {
                "id": question["id"],
                "split": question["split"],
                "kind": question["kind"],
                "question": question["question"],
                "status": report.status,
                "seconds": round(seconds, 3),
                "session": str(report.folder),
            }
            results.append(scored)
    finally:
        await runner.aclose()
    return results


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures over ``results``."""
    answerable = [r for r in results if r["kind"] != "unanswerable"]
    unanswerable = [r for r in results if r["kind"] == "unanswerable"]
    claims = sum(r["claims"] for r in results)
    facts = sum(r["facts"] for r in answerable)

    def ratio(part: float, whole: float) -> float:
        return round(part / whole, 4) if whole else 1.0

    return {
        "questions": len(results),
        "facts_found": ratio(sum(r["facts_found"] for r in answerable), facts),
        "citation_precision": ratio(sum(r["precise"] for r in results), claims),
        "quotes_verbatim": ratio(sum(r["verbatim"] for r in results), claims),
        "quotes_verbatim_original_file": ratio(
            sum(r["verbatim_original"] for r in results), claims
        ),
        "unanswerable_refused": ratio(
            sum(not r["answered"] for r in unanswerable), len(unanswerable)
        ),
        "answerable_refused": ratio(sum(not r["answered"] for r in answerable), len(answerable)),
        "grounding_problems": sum(len(r["grounding"]) for r in results),
        "median_seconds": round(statistics.median(r["seconds"] for r in results), 3)
        if results
        else 0.0,
    }


def meets(figures: dict[str, Any]) -> bool:
    """Whether ``figures`` reach every goal."""
    return (
        figures["facts_found"] >= GOALS["facts_found"]
        and figures["citation_precision"] >= GOALS["citation_precision"]
        and figures["quotes_verbatim"] >= GOALS["quotes_verbatim"]
        and figures["unanswerable_refused"] >= GOALS["unanswerable_refused"]
        and figures["answerable_refused"] <= GOALS["answerable_refused_max"]
        and figures["median_seconds"] < GOALS["median_seconds_max"]
        and figures["grounding_problems"] == 0
    )


def _print(results: list[dict[str, Any]], figures: dict[str, dict[str, Any]]) -> None:
    for r in results:
        mark = "refused" if not r["answered"] else f"{r['facts_found']}/{r['facts']} facts"
        print(
            f"{r['id']} [{r['kind']:12}] {mark:10} {r['seconds']:5.2f}s "
            f"best {r['best_passage']:.2f}  {r['question']}"
        )
        if r["answered"]:
            print(f"      -> {r['summary'][:160]}  ({', '.join(r['cited_files'])})")
        for problem in r["grounding"]:
            print(f"      !! {problem}")
    print()
    print(
        "| split | questions | facts found | citation precision | quotes verbatim |"
        " unanswerable refused | answerable refused | median s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['questions']} | {f['facts_found']:.0%} | "
            f"{f['citation_precision']:.0%} | {f['quotes_verbatim']:.0%} | "
            f"{f['unanswerable_refused']:.0%} | {f['answerable_refused']:.0%} | "
            f"{f['median_seconds']:.2f} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation; exit status 1 when ``--check`` is given and a goal is missed."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.answers")
    parser.add_argument("--quick", action="store_true", help="six questions (CI smoke test)")
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="all")
    parser.add_argument(
        "--questions", type=Path, default=HERE / "questions.json", help="question file"
    )
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        help="a folder of documents as the corpus (for a question file written for it)",
    )
    parser.add_argument("--out", type=Path, default=Path("answers.json"))
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    questions = load_questions(args.split, args.quick, args.questions)
    packages = json.loads(args.questions.read_text(encoding="utf-8")).get("packages", PACKAGES)
    with tempfile.TemporaryDirectory(prefix="answers-") as temp:
        base = Path(temp)
        if args.docs is not None:
            if not args.docs.is_dir():
                parser.error(f"--docs {str(args.docs)!r} is not a folder")
            corpus, versions = args.docs.resolve(), {"folder": str(args.docs.resolve())}
        else:
            corpus = base / "corpus"
            versions = build_corpus(corpus, tuple(packages))
        stale = stale_facts(questions, corpus)
        results = asyncio.run(run(questions, corpus, base / "home"))
        for r in results:
            r.pop("session")
    groups = {"all": results}
    for split in dict.fromkeys(r["split"] for r in results):
        part = [r for r in results if r["split"] == split]
        if part and len(part) != len(results):
            groups[split] = part
    figures = {name: totals(part) for name, part in groups.items()}
    _print(results, figures)
    if stale:
        print(f"\nfacts not on their recorded line (other package versions?): {stale}")
    payload = {
        "corpus": versions,
        "stale_facts": stale,
        "goals": GOALS,
        "figures": figures,
        "met": meets(figures["all"]),
        "questions": results,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwritten to {args.out}; goals met: {payload['met']}")
    return 1 if args.check and not payload["met"] else 0


if __name__ == "__main__":
    sys.exit(main())
