"""Local documents at scale: index a 1,000-file / 20 MB folder, query it, reopen it.

``python -m benchmarks.documents [--quick]`` prints a table; ``measure(quick)`` is what
figure 11 reports. The corpus is generated (deterministic): Markdown, text and HTML
files of ~20 KB, paragraphs of sentences over a 6,000-word vocabulary in which some
words are rare (so queries have something to rank).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.documents")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_FILES} files instead of {FILES}"
    )
    args = parser.parse_args()
    from ._common import quiet_logging

    quiet_logging()
    result = measure(args.quick)
    print("| measure | value |\n| --- | --- |")
    for key, value in result.items():
        print(f"| {key} | {value:,.3f} |")


if __name__ == "__main__":
    main()
