"""``python -m benchmarks.japanese --docs DIR [--questions FILE] [--out PATH]``: Japanese
questions answered offline with Japanese segmented by Sudachi (the ``ja`` extra) and as
character bigrams (``RESEARCH_FSM_JA_SEGMENTER=bigrams``), each in a process of its own
with a fresh index: facts found, refusals, median seconds per question, index time.

The questions are ``benchmarks/answers``'s format (default ``japanese_dev.json``, over
``python -m benchmarks.answers.japanese_corpus DIR``: Debian's ``aptitude-doc-ja`` and
``debian-faq-ja`` with ``examples/notes``). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODES = ("bigrams", "words", "kanji")


async def _one(questions_path: Path, split: str, docs: Path, home: Path) -> dict[str, Any]:
    from research_fsm.documents import DocumentIndex, segmentation

    from .answers.__main__ import load_questions, run, totals

    started = time.perf_counter()
    index = await DocumentIndex.open(docs, cache_dir=home / "indexes")
    seconds = time.perf_counter() - started
    files = index.stats.files
    await index.aclose()
    questions = load_questions(split, False, questions_path)
    results = await run(questions, docs, home)
    for result in results:
        result.pop("session")
    figures = totals(results)
    figures |= {"index_seconds": round(seconds, 2), "files": files}
    return {"segmentation": segmentation(), "figures": figures, "questions": results}


def _child(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="ja-bench-") as temp:
        out = asyncio.run(_one(args.questions, args.split, args.docs.resolve(), Path(temp)))
    print(json.dumps(out, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Both modes, each in a child process; the table and the JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.japanese")
    parser.add_argument("--docs", type=Path, required=True, help="the Japanese documents")
    parser.add_argument("--questions", type=Path, default=HERE / "answers/japanese_dev.json")
    parser.add_argument("--split", default="all")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path("japanese.json"))
    args = parser.parse_args(argv)
    if args.mode:
        return _child(args)
    runs: dict[str, Any] = {}
    for mode in MODES:
        env = dict(os.environ)
        env["RESEARCH_FSM_JA_SEGMENTER"] = mode
        command = [sys.executable, "-m", "benchmarks.japanese", "--mode", mode]
        command += ["--docs", str(args.docs), "--questions", str(args.questions)]
        command += ["--split", args.split]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        "| segmentation | questions | facts found | answerable refused | unanswerable refused"
        " | citation precision | quotes verbatim | median s | index s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for mode, result in runs.items():
        f = result["figures"]
        print(
            f"| {mode} ({result['segmentation']}) | {f['questions']} | {f['facts_found']:.0%} | "
            f"{f['answerable_refused']:.0%} | {f['unanswerable_refused']:.0%} | "
            f"{f['citation_precision']:.0%} | {f['quotes_verbatim']:.0%} | "
            f"{f['median_seconds']:.2f} | {f['index_seconds']:.2f} |"
        )
    for mode, result in runs.items():
        print(f"\n{mode}:")
        for r in result["questions"]:
            mark = "refused" if not r["answered"] else f"{r['facts_found']}/{r['facts']} facts"
            print(f"  {r['id']} [{r['kind'][:6]}] {mark:10} {r['question']}")
            if r["answered"]:
                print(f"      -> {r['summary'][:140]}")
    args.out.write_text(json.dumps(runs, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
