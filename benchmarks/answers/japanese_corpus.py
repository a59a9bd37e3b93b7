"""``python -m benchmarks.answers.japanese_corpus DIR``: the folder ``japanese_dev.json``
is written for, copied from Debian's installed ``aptitude-doc-ja`` (``aptitude/``) and
``debian-faq-ja`` (``faq/``, without its images) and the project's ``examples/notes``
(``notes/``). Install them first: ``apt-get install aptitude-doc-ja debian-faq-ja``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SOURCES = {
    "aptitude": Path("/usr/share/doc/aptitude/html/ja"),
    "faq": Path("/usr/share/doc/debian/FAQ/ja"),
    "notes": Path(__file__).resolve().parents[2] / "examples" / "notes",
}


def build(folder: Path) -> None:
    """Copy the three sources into ``folder`` (which must not exist yet)."""
    missing = [str(path) for path in SOURCES.values() if not path.is_dir()]
    if missing:
        raise SystemExit(
            f"not installed: {', '.join(missing)} (apt-get install aptitude-doc-ja debian-faq-ja)"
        )
    for name, source in SOURCES.items():
        shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("images"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m benchmarks.answers.japanese_corpus DIR")
    build(Path(sys.argv[1]))
