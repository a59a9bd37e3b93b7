"""Local documents at scale: index a 1,000-file / 20 MB folder, query it, reopen it.

``python -m benchmarks.documents [--quick]`` prints a table; ``measure(quick)`` is what
figure 11 reports. The corpus is generated (deterministic): Markdown, text and HTML
files of ~20 KB, paragraphs of sentences over a 6,000-word vocabulary in which some
words are rare (so queries have something to rank).

``python -m benchmarks.documents --search [--main DIR]``: search time on a folder of one
Markdown file of 1, 8 and 32 MB (with ``--main``, that checkout too, up to 8 MB): flat
when a search reads passages, not whole documents.

``python -m benchmarks.documents --pdf DIR [--main DIR]``: the PDFs under ``DIR`` indexed
as ``--html`` indexes its pages, paired with the other checkout.

``python -m benchmarks.documents --html [--main DIR] [--files 500] [--out PATH]``:
indexing a folder of documentation pages as Sphinx, MkDocs and GitHub render them
(``_sphinx_pages``), paired in one run with another checkout (default ``../main`` of
this repository's parent, e.g. the main branch): each checkout indexes the same folder
cold (new index) and reopens it unchanged, in a process of its own, alternating which
goes first. Files per second, MB/s, CPU seconds (the process and its workers) and the
reopen time, as a table and JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._sphinx_pages import make_pages

FILES = 1_000
FILE_BYTES = 20_000
QUICK_FILES = 60
QUERIES = 50


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(7_000)}
    return sorted(words)[:6_000]


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    # a Zipf-like choice: low indexes are common, high ones rare
    words = [
        vocab[min(int(rng.paretovariate(0.9)) - 1, len(vocab) - 1)]
        for _ in range(rng.randint(8, 18))
    ]
    return " ".join(words).capitalize() + "."


def _document(rng: random.Random, vocab: list[str], kind: str, index: int) -> str:
    paragraphs: list[str] = []
    size = 0
    while size < FILE_BYTES:
        paragraph = " ".join(_sentence(rng, vocab) for _ in range(rng.randint(3, 7)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    title = f"Document {index}: {' '.join(rng.sample(vocab[:500], 3))}"
    if kind == "html":
        body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
        return (
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>\n{body}</body></html>"
        )
    if kind == "md":
        return f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"
    return title + "\n\n" + "\n\n".join(paragraphs) + "\n"


def make_corpus(folder: Path, files: int, seed: int = 7) -> tuple[int, list[str]]:
    """Write ``files`` documents; return the bytes written and some query words."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    kinds = ("md", "txt", "html")
    for i in range(files):
        kind = kinds[i % 3]
        text = _document(rng, vocab, kind, i)
        (folder / f"doc-{i:04d}.{kind}").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total, vocab


async def _measure(root: Path, files: int) -> dict[str, float]:
    from research_fsm.documents import DocumentIndex

    folder, cache = root / "corpus", root / "cache"
    size, vocab = make_corpus(folder, files)
    rng = random.Random(11)
    started = time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=cache)
    cold = time.perf_counter() - started
    timings: dict[str, list[float]] = {"all": [], "any": []}
    for _ in range(QUERIES):
        words = " ".join(rng.sample(vocab[20:400], 2))
        for match in ("all", "any"):
            t0 = time.perf_counter()
            await index.search(words, limit=8, match=match)  # type: ignore[arg-type]
            timings[match].append(time.perf_counter() - t0)
    passages = index.stats.passages
    await index.aclose()
    started = time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=cache)
    warm = time.perf_counter() - started
    reused = index.stats.reused
    await index.aclose()
    target = folder / "doc-0000.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    started = time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=cache)
    changed = time.perf_counter() - started
    read_again = index.stats.read
    await index.aclose()
    if reused != files or read_again != 1:
        raise AssertionError(f"reuse broken: reused {reused}/{files}, re-read {read_again}")
    return {
        "files": float(files),
        "corpus_mb": round(size / 1_048_576, 1),
        "passages": float(passages),
        "cold_index_s": cold,
        "query_all_ms": statistics.median(timings["all"]) * 1e3,
        "query_any_ms": statistics.median(timings["any"]) * 1e3,
        "warm_reopen_s": warm,
        "one_file_changed_s": changed,
    }


def measure(quick: bool) -> dict[str, float]:
    """Index time, query time and reopen time for the generated corpus."""
    with tempfile.TemporaryDirectory(prefix="bench-docs-") as tmp:
        return asyncio.run(_measure(Path(tmp), QUICK_FILES if quick else FILES))


HTML_FILES = 500
_RUNNER = """
import asyncio, json, logging, resource, sys, time
from pathlib import Path
import structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
from research_fsm.documents import DocumentIndex

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

async def main(folder, cache):
    c0, t0 = cpu(), time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=Path(cache))
    cold, cold_cpu = time.perf_counter() - t0, cpu() - c0
    stats = index.stats
    await index.aclose()
    t0 = time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=Path(cache))
    warm = time.perf_counter() - t0
    reused = index.stats.reused
    await index.aclose()
    print(json.dumps({"cold_s": cold, "cold_cpu_s": cold_cpu, "warm_s": warm,
        "files": stats.files, "passages": stats.passages, "reused": reused,
        "skipped": len(index.skipped)}))

if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _index_with(checkout: Path, folder: Path, cache: Path) -> dict[str, Any]:
    """Index ``folder`` with the code of ``checkout`` in a process of its own."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(folder), str(cache)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"indexing with {checkout} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_html(files: int, main: Path, rounds: int = 1) -> dict[str, Any]:
    """Paired: this checkout and ``main`` index the same generated HTML folder."""
    with tempfile.TemporaryDirectory(prefix="bench-html-") as tmp:
        folder = Path(tmp) / "pages"
        size = make_pages(folder, files)
        return measure_folder(folder, files, size, main, rounds)


def measure_pdf(source: Path, main: Path, rounds: int = 1) -> dict[str, Any]:
    """Paired: this checkout and ``main`` index the PDFs found under ``source`` (copied
    into one folder)."""
    with tempfile.TemporaryDirectory(prefix="bench-pdf-") as tmp:
        folder = Path(tmp) / "pdfs"
        folder.mkdir()
        size = 0
        for number, pdf in enumerate(sorted(source.rglob("*.pdf"))):
            data = pdf.read_bytes()
            (folder / f"{number:04d}-{pdf.name}").write_bytes(data)
            size += len(data)
        files = len(list(folder.iterdir()))
        if not files:
            raise SystemExit(f"no PDF under {source}")
        return measure_folder(folder, files, size, main, rounds)


def measure_folder(
    folder: Path, files: int, size: int, main: Path, rounds: int = 1
) -> dict[str, Any]:
    """Paired: this checkout and ``main`` index ``folder`` (``files`` files, ``size``
    bytes) cold and reopen it unchanged, each in a process of its own, ``rounds`` times,
    alternating which goes first."""
    here = Path(__file__).resolve().parents[1]
    runs: dict[str, list[dict[str, Any]]] = {"main": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        for number in range(rounds):
            order = [("main", main), ("this", here)]
            for name, checkout in order if number % 2 == 0 else order[::-1]:
                cache = Path(tmp) / f"cache-{name}-{number}"
                runs[name].append(_index_with(checkout, folder, cache))
    summary: dict[str, Any] = {"files": files, "mb": round(size / 1_048_576, 2), "rounds": rounds}
    for name, results in runs.items():
        cold = statistics.median(r["cold_s"] for r in results)
        summary[name] = {
            "cold_s": round(cold, 2),
            "files_per_s": round(files / cold, 1),
            "mb_per_s": round(size / 1_048_576 / cold, 2),
            "cold_cpu_s": round(statistics.median(r["cold_cpu_s"] for r in results), 2),
            "warm_reopen_s": round(statistics.median(r["warm_s"] for r in results), 3),
            "passages": results[0]["passages"],
            "skipped": results[0]["skipped"],
        }
    summary["speedup_files_per_s"] = round(
        summary["this"]["files_per_s"] / summary["main"]["files_per_s"], 2
    )
    summary["speedup_cpu"] = round(summary["main"]["cold_cpu_s"] / summary["this"]["cold_cpu_s"], 2)
    summary["cores"] = os.cpu_count()
    summary["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return summary


SEARCH_SIZES_MB = ((1, 1), (8, 1), (32, 1), (1, 32))
"""(MB a file, files): one file of 1, 8 and 32 MB, and the 32 MB in 32 files."""
MAIN_SEARCH_MB = 8
"""The largest file searched with ``--main`` (its searches grow with the file's size)."""
_SEARCH_RUNNER = """
import asyncio, json, logging, statistics, sys, time
from pathlib import Path
import structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
from research_fsm.documents import DocumentIndex

async def main(folder, cache, queries, repeat):
    t0 = time.perf_counter()
    index = await DocumentIndex.open(folder, cache_dir=Path(cache))
    indexed = time.perf_counter() - t0
    await index.search(queries[0], limit=10, match="any")  # the index's pages read once
    medians, matches = [], []
    for query in queries:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await index.search(query, limit=10, match="any")
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times) * 1e3)
        total, counts = await index.frequencies(query.split())
        matches.append(max(counts.values()))
    await index.aclose()
    print(json.dumps({"median_ms": medians, "matching": matches, "index_s": indexed,
        "passages": index.stats.passages, "files": index.stats.files}))

if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])))
"""


def _one_file(
    folder: Path, megabytes: int, vocab: list[str], rng: random.Random, files: int = 1
) -> None:
    """``files`` Markdown files of ``megabytes`` MB each: sections of paragraphs of
    generated text."""
    folder.mkdir(parents=True)
    for number in range(files):
        target, size, parts = megabytes * 1_048_576, 0, ["# One large document\n"]
        while size < target:
            paragraph = " ".join(_sentence(rng, vocab) for _ in range(rng.randint(3, 7)))
            if rng.random() < 0.05:
                paragraph = f"## Section {len(parts)}\n\n{paragraph}"
            parts.append(paragraph)
            size += len(paragraph) + 2
        text = "\n\n".join(parts) + "\n"
        (folder / f"large-{number:02d}.md").write_text(text, encoding="utf-8")


def measure_search(main: Path | None, repeat: int = 5) -> dict[str, Any]:
    """Median search time (``limit=10``) of each query on a folder of one file of 1, 8
    and 32 MB, and of 32 files of 1 MB, with this checkout and, up to
    ``MAIN_SEARCH_MB``, with ``main``. The queries' words are common (a third of the
    passages match), less common and rare: a search's cost follows the passages that
    match, whatever the size of their files."""
    here = Path(__file__).resolve().parents[1]
    rng = random.Random(5)
    vocab = _vocabulary(rng)
    queries = [vocab[2], vocab[40], f"{vocab[300]} {vocab[900]}"]
    result: dict[str, Any] = {"queries": queries, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        for megabytes, files in SEARCH_SIZES_MB:
            folder = Path(tmp) / f"mb-{megabytes}-{files}"
            _one_file(folder, megabytes, vocab, random.Random(megabytes), files)
            row: dict[str, Any] = {}
            checkouts = [("this", here)]
            if main is not None and megabytes <= MAIN_SEARCH_MB and files == 1:
                checkouts.append(("main", main))
            for name, checkout in checkouts:
                done = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _SEARCH_RUNNER,
                        str(folder),
                        str(Path(tmp) / f"cache-{name}-{megabytes}-{files}"),
                        json.dumps(queries),
                        str(repeat if name == "this" else 1),
                    ],
                    cwd=checkout,
                    env=dict(os.environ, PYTHONPATH=str(checkout)),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"searching with {checkout} failed:\n{done.stderr[-2000:]}")
                row[name] = json.loads(done.stdout.strip().splitlines()[-1])
            result["sizes"][f"{files} x {megabytes} MB"] = row
    return result


def _search_table(result: dict[str, Any]) -> str:
    queries = result["queries"]
    head = " | ".join(f"q{n + 1} ms (matching)" for n in range(len(queries)))
    rows = [
        f"| files | passages | checkout | {head} |",
        "| --- | --- | --- |" + " --- |" * len(queries),
    ]
    for size, row in result["sizes"].items():
        for name in ("this", "main"):
            if name not in row:
                continue
            r = row[name]
            cells = " | ".join(
                f"{ms:.1f} ({hits:,})"
                for ms, hits in zip(r["median_ms"], r["matching"], strict=True)
            )
            rows.append(f"| {size} | {r['passages']:,} | {name} | {cells} |")
    rows.append(f"\nq1..q{len(queries)} (any term, 10 best): {queries}")
    return "\n".join(rows)


def _html_table(result: dict[str, Any], kind: str = "HTML") -> str:
    rows = [
        "| checkout | files/s | MB/s | cold index s | CPU s | unchanged reopen s | passages |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in ("main", "this"):
        r = result[name]
        rows.append(
            f"| {name} | {r['files_per_s']} | {r['mb_per_s']} | {r['cold_s']} | "
            f"{r['cold_cpu_s']} | {r['warm_reopen_s']} | {r['passages']:,} |"
        )
    rows.append(
        f"\n{result['files']} {kind} files, {result['mb']} MB; files/s x{result['speedup_files_per_s']}"
        f", CPU x{result['speedup_cpu']}; {result['cores']} cores, load {result['load_average']}"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.documents")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_FILES} files instead of {FILES}"
    )
    parser.add_argument(
        "--html", action="store_true", help="index an HTML folder, paired with --main"
    )
    parser.add_argument(
        "--pdf", type=Path, default=None, help="index the PDFs under this folder, paired"
    )
    parser.add_argument(
        "--search", action="store_true", help="search time on one 1, 8 and 32 MB file"
    )
    parser.add_argument("--main", type=Path, default=None, help="the checkout to compare with")
    parser.add_argument("--files", type=int, default=HTML_FILES, help="HTML pages (--html)")
    parser.add_argument("--rounds", type=int, default=1, help="paired runs (--html)")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    args = parser.parse_args()
    from ._common import quiet_logging

    quiet_logging()
    here = Path(__file__).resolve().parents[1]
    main_checkout = (args.main or here.parent.parent / "main").resolve()
    if args.search:
        search_result = measure_search(args.main.resolve() if args.main else None)
        print(_search_table(search_result))
        if args.out:
            args.out.write_text(json.dumps(search_result, indent=2) + "\n", encoding="utf-8")
        return
    if args.pdf:
        pdf_result = measure_pdf(args.pdf, main_checkout, args.rounds)
        print(_html_table(pdf_result, "PDF"))
        if args.out:
            args.out.write_text(json.dumps(pdf_result, indent=2) + "\n", encoding="utf-8")
        return
    if args.html:
        html_result = measure_html(args.files, main_checkout, args.rounds)
        print(_html_table(html_result))
        if args.out:
            args.out.write_text(json.dumps(html_result, indent=2) + "\n", encoding="utf-8")
        return
    result = measure(args.quick)
    print("| measure | value |\n| --- | --- |")
    for key, value in result.items():
        print(f"| {key} | {value:,.3f} |")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
