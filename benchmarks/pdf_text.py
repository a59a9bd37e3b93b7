"""PDF text extraction: pdfium (``pypdfium2``) against pypdf, on real manuals.

``python -m benchmarks.pdf_text [--fetch] [--limit 60] [--out PATH]`` extracts every PDF
of each set with both engines (``research_fsm.documents._pdf``, one process, one file
after another) and prints, per set and engine: pages per second, and the text's
faults per 1,000 words: words split by a space ("e xecute": two neighbours that make a
word when joined, one of them no word), words run together ("invokedinaseparate": no
word, but a chain of words), characters that should never be in text (ligature
characters, U+FFFD, U+FFFE, private-use glyphs, control characters); and where the
true text is known, the share of its words found (recall).

The sets (``--fetch`` gets them with ``apt-get download``, from Debian's registry):

- ``groff``: the PDFs the Debian ``groff`` package ships (typeset by groff's gropdf);
- ``groff-man``: the ``groff`` package's own manual pages typeset here with
  ``groff -man -Tpdf`` (needs groff's gropdf), their true text from ``-Tutf8``;
- ``latex``: PDFs of ``texlive-latex-base-doc`` (pdfTeX), every n-th up to ``--limit``;
- ``reportlab``: the kind of PDF the tests make (reportlab paragraphs), true text known.

A word list (``/usr/share/dict/words``, Debian's ``wamerican``) is needed for the split
and run-together counts; without it they are left out, saying so.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import logging
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PACKAGES = ("groff", "texlive-latex-base-doc")
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "research-fsm-pdf-bench"
WORDS = Path("/usr/share/dict/words")
_WORD = re.compile(r"[^\W\d_]+")
_BAD = re.compile("[\ufb00-\ufb06\ufffd\ufffe\ue000-\uf8ff\x00-\x08\x0b-\x1f]")


def fetch(cache: Path) -> Path:
    """The Debian packages downloaded and unpacked under ``cache``; the unpacked root."""
    root = cache / "root"
    if root.exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=cache, check=True)
    for deb in sorted(cache.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def groff_set(root: Path, out: Path) -> list[tuple[Path, str | None]]:
    """The groff package's shipped PDFs (gzipped in the package)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for packed in sorted(root.glob("usr/share/doc/groff-base/**/*.pdf.gz")):
        target = out / packed.name.removesuffix(".gz")
        target.write_bytes(gzip.decompress(packed.read_bytes()))
        files.append((target, None))
    return files


def groff_man_set(root: Path, out: Path) -> list[tuple[Path, str | None]]:
    """The groff package's manual pages typeset as PDF here, with their true text."""
    if shutil.which("groff") is None or shutil.which("gropdf") is None:
        print("groff-man: left out (groff's gropdf is not installed: apt-get install groff)")
        return []
    out.mkdir(parents=True, exist_ok=True)
    files: list[tuple[Path, str | None]] = []
    for page in sorted(root.glob("usr/share/man/man[157]/*.gz")):
        source = gzip.decompress(page.read_bytes())
        pdf = subprocess.run(
            ["groff", "-man", "-Tpdf"], input=source, capture_output=True, check=False
        )
        text = subprocess.run(
            ["groff", "-man", "-Tutf8", "-rHY=0", "-P-cbou"],
            input=source,
            capture_output=True,
            check=False,
        )
        if pdf.returncode or text.returncode or not pdf.stdout.startswith(b"%PDF"):
            continue
        target = out / (page.name.removesuffix(".gz") + ".pdf")
        target.write_bytes(pdf.stdout)
        files.append((target, text.stdout.decode("utf-8", "replace")))
    return files


def latex_set(root: Path, limit: int) -> list[tuple[Path, str | None]]:
    """Every n-th PDF of texlive-latex-base-doc, ``limit`` at most."""
    pdfs = sorted(root.glob("usr/share/doc/texlive-doc/**/*.pdf"))
    step = max(1, len(pdfs) // limit) if limit else 1
    return [(path, None) for path in pdfs[::step][: limit or None]]


def reportlab_set(out: Path) -> list[tuple[Path, str | None]]:
    """Paragraphs of this repository's docs set by reportlab (as the tests make PDFs)."""
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    out.mkdir(parents=True, exist_ok=True)
    style = getSampleStyleSheet()["BodyText"]
    files: list[tuple[Path, str | None]] = []
    docs = Path(__file__).resolve().parents[1] / "docs"
    for source in sorted(docs.glob("*.md"))[:10]:
        words = " ".join(_WORD.findall(source.read_text(encoding="utf-8")))
        paragraphs = [words[at : at + 1500] for at in range(0, min(len(words), 30_000), 1500)]
        target = out / f"{source.stem}.pdf"
        SimpleDocTemplate(str(target)).build([Paragraph(p, style) for p in paragraphs])
        files.append((target, " ".join(paragraphs)))
    return files


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _chain(word: str, vocabulary: set[str]) -> bool:
    """Whether ``word`` is two or more vocabulary words joined (each of 2+ letters, or
    "a")."""
    reach = [False] * (len(word) + 1)
    reach[0] = True
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - 24), end):
            piece = word[start:end]
            if reach[start] and (piece in vocabulary) and (len(piece) > 1 or piece == "a"):
                if start == 0 and end == len(word):
                    continue  # the whole word: not a chain
                reach[end] = True
                break
    return reach[len(word)]


def faults(text: str, vocabulary: set[str] | None) -> dict[str, int]:
    """Split words, words run together and bad characters in ``text``."""
    words = _words(text)
    counts = {"words": len(words), "bad_chars": len(_BAD.findall(text))}
    if vocabulary is None:
        return counts

    def known(word: str) -> bool:
        return word in vocabulary and (len(word) > 1 or word in ("a", "i"))

    split = sum(
        1
        for a, b in itertools.pairwise(words)
        if (not known(a) or not known(b)) and a + b in vocabulary and len(a + b) >= 4
    )
    run = sum(1 for w in words if len(w) >= 8 and w not in vocabulary and _chain(w, vocabulary))
    counts.update(split=split, run_together=run)
    return counts


def _recall(text: str, truth: str) -> tuple[int, int]:
    found, true = Counter(_words(text)), Counter(_words(truth))
    return sum((found & true).values()), sum(true.values())


def measure(sets: dict[str, list[tuple[Path, str | None]]]) -> dict[str, Any]:
    """Both engines on every file of every set."""
    from research_fsm.documents._pdf import pdf_text

    vocabulary = (
        {w.strip().lower() for w in WORDS.read_text(encoding="utf-8", errors="replace").split()}
        if WORDS.exists()
        else None
    )
    if vocabulary is None:
        print(f"no word list at {WORDS} (apt-get install wamerican): split/run counts left out")
    result: dict[str, Any] = {}
    for name, files in sets.items():
        if not files:
            continue
        row: dict[str, Any] = {}
        for engine in ("pypdf", "pdfium"):
            totals: Counter[str] = Counter()
            seconds = 0.0
            for path, truth in files:
                data = path.read_bytes()
                started = time.perf_counter()
                read = pdf_text(data, path.name, engine)
                seconds += time.perf_counter() - started
                if isinstance(read, str):
                    totals["unreadable"] += 1
                    continue
                totals["pages"] += len(read.pages or [])
                totals.update(faults(read.text, vocabulary))
                if truth is not None:
                    hit, of = _recall(read.text, truth)
                    totals["true_found"] += hit
                    totals["true_words"] += of
            per_k = max(totals["words"], 1) / 1000
            row[engine] = {
                "files": len(files),
                "pages": totals["pages"],
                "seconds": round(seconds, 2),
                "pages_per_s": round(totals["pages"] / seconds, 1) if seconds else None,
                "words": totals["words"],
                "split_per_1k": round(totals["split"] / per_k, 2) if vocabulary else None,
                "run_together_per_1k": round(totals["run_together"] / per_k, 2)
                if vocabulary
                else None,
                "bad_chars": totals["bad_chars"],
                "recall": round(totals["true_found"] / totals["true_words"], 4)
                if totals["true_words"]
                else None,
                "unreadable": totals["unreadable"],
            }
        row["speedup"] = round(row["pypdf"]["seconds"] / max(row["pdfium"]["seconds"], 1e-9), 1)
        result[name] = row
    return result


def table(result: dict[str, Any]) -> str:
    """The result as a Markdown table."""
    lines = [
        "| set | engine | files | pages | s | pages/s | split /1k words | run-together /1k"
        " | bad chars | true words found |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result.items():
        for engine in ("pypdf", "pdfium"):
            r = row[engine]
            recall = "-" if r["recall"] is None else f"{r['recall']:.1%}"
            lines.append(
                f"| {name} | {engine} | {r['files']} | {r['pages']} | {r['seconds']} |"
                f" {r['pages_per_s']} | {r['split_per_1k']} | {r['run_together_per_1k']} |"
                f" {r['bad_chars']} | {recall} |"
            )
        lines.append(f"| {name} | speed-up | | | x{row['speedup']} | | | | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pdf_text")
    parser.add_argument("--fetch", action="store_true", help="download the Debian packages")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where they go")
    parser.add_argument("--limit", type=int, default=60, help="LaTeX PDFs at most (0: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its notes on damaged dictionaries
    root = args.cache / "root"
    if args.fetch:
        root = fetch(args.cache)
    sets: dict[str, list[tuple[Path, str | None]]] = {}
    if root.exists():
        sets["groff"] = groff_set(root, args.cache / "groff")
        sets["groff-man"] = groff_man_set(root, args.cache / "groff-man")
        sets["latex"] = latex_set(root, args.limit)
    else:
        print(f"no packages under {root}: run with --fetch for the Debian sets")
    sets["reportlab"] = reportlab_set(args.cache / "reportlab")
    result = measure(sets)
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()


__all__ = ["faults", "fetch", "main", "measure", "table"]
