"""Grounding over every report the report tests produce (English and Japanese).

After each test of this folder, every saved report under the test's ``tmp_path``
(library and CLI alike) is checked: every number of its content sections (summary,
financial, market, products) appears in a finding or is a labelled computation from
findings; every ``[S#]`` resolves to ``sources.json``; every URL it shows (and every
URL a fact cites) was retrieved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")
CONTENT_SECTIONS = 4
"""Summary, financial, market, products: the sections written from the findings."""


def numbers(text: str) -> set[str]:
    """The numbers of ``text``, thousands separators dropped."""
    return {match.replace(",", "") for match in NUMBER.findall(text)}


def grounding_problems(folder: Path) -> list[str]:
    """What is not grounded in the report saved in ``folder`` (empty: all grounded)."""
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    listed = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    facts: list[dict[str, Any]] = meta["facts"]
    ids = {entry["id"] for entry in listed}
    urls = {entry["url"] for entry in listed}
    problems = [
        f"citation [{c}] not in sources.json"
        for c in sorted(set(re.findall(r"\[(S\d+)\]", markdown)) - ids)
    ]
    links = set(re.findall(r"<(https?://[^\s<>]+)>", markdown))
    bare = re.sub(r"<https?://[^\s<>]+>", " ", markdown)
    shown = links | set(re.findall(r"https?://[^\s>)]+", bare))
    problems += [f"URL {u} was not retrieved" for u in sorted(shown - urls)]
    problems += [f"source {e['id']} has no retrieval time" for e in listed if not e["retrieved_at"]]
    keys = {fact["key"] for fact in facts}
    allowed = numbers(str(meta["company"]))
    for fact in facts:
        problems += [
            f"fact {fact['key']} cites {u}, not retrieved" for u in fact["urls"] if u not in urls
        ]
        if fact["computed_from"] and not set(fact["computed_from"]) <= keys:
            problems.append(f"computed {fact['key']} from facts the report lacks")
            continue
        allowed |= numbers(fact["value"])
    sections = re.split(r"^## ", markdown, flags=re.M)[1 : 1 + CONTENT_SECTIONS]
    for section in sections:
        for line in section.splitlines()[1:]:
            line = re.sub(r"\[S\d+\]", "", line)
            problems += [
                f"number {n} in {line!r} is in no finding" for n in sorted(numbers(line) - allowed)
            ]
    computed = [fact for fact in facts if fact["computed_from"]]
    for fact in computed:
        shown = [ln for ln in markdown.splitlines() if ln.startswith("- ") and fact["value"] in ln]
        problems += [
            f"computed {fact['value']} not labelled: {ln!r}" for ln in shown if "_(" not in ln
        ]
    return problems


@pytest.fixture(autouse=True)
def grounded_reports(tmp_path: Path) -> Iterator[list[Path]]:
    """After the test: every report saved under ``tmp_path`` is grounded (the list
    holds the folders checked)."""
    checked: list[Path] = []
    yield checked
    for meta in sorted(tmp_path.rglob("meta.json")):
        problems = grounding_problems(meta.parent)
        assert [] == problems, meta.parent
        checked.append(meta.parent)
