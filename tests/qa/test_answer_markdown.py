"""Profile answers are real Markdown: every field of every bundled company is its own
list item (English and Japanese), so no renderer runs the fields together."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("markdown_it", reason="markdown-it-py is not installed")

from markdown_it import MarkdownIt

from research_fsm.qa.agents._synthesis import compose_answer
from research_fsm.qa.state import ResearchState
from research_fsm.sources import DirectorySource
from research_fsm.sources._directory import profile_findings
from research_fsm.sources._profiles import load_profiles

FIELDS = ("overview", "stock_info", "key_people")
_MD = MarkdownIt("commonmark")
_LABEL = re.compile(r"^([A-Z][A-Za-z ]{1,30}): ")


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """Each paragraph and list item of ``markdown``: (kind, its text without markup,
    a line break as ``\\n``)."""
    out: list[tuple[str, str]] = []
    items = 0
    for token in _MD.parse(markdown):
        items += {"list_item_open": 1, "list_item_close": -1}.get(token.type, 0)
        if token.type == "inline":
            parts = [
                child.content if child.type == "text" else "\n"
                for child in token.children or []
                if child.type in ("text", "softbreak", "hardbreak")
            ]
            out.append(("li" if items else "p", "".join(parts).strip()))
    return out


async def _problems(step: int) -> dict[str, list[str]]:
    """Per company (every ``step``-th of the directory): the profile lines that are not
    list items of its answer, and the answer's blocks that span lines."""
    source = DirectorySource()
    problems: dict[str, list[str]] = {}
    profiles = load_profiles()
    assert len(profiles) > 1500
    for profile in profiles[::step]:
        findings = profile_findings(profile, await source.peers(profile.name))
        state = ResearchState(research_findings=findings, confidence_score=9)
        blocks = _blocks(compose_answer(state))
        items = {text for kind, text in blocks if kind == "li"}
        found = []
        for name in FIELDS:
            for line in (getattr(findings, name) or "").split("\n"):
                if _LABEL.match(line) and line not in items:
                    found.append(f"not an item: {line!r}")
        found += [f"lines run together: {text!r}" for _, text in blocks if "\n" in text]
        if found:
            problems[profile.name] = found
    return problems


async def test_profile_fields_are_list_items_in_a_sample() -> None:
    """In every 25th bundled company's answer each ``Label: value`` line of its profile is
    one list item, and no paragraph or item spans two lines (which a renderer joins
    into one run-on line)."""
    assert {} == await _problems(25)


@pytest.mark.slow
async def test_every_profile_field_is_its_own_list_item() -> None:
    """The same for every bundled company."""
    assert {} == await _problems(1)


def test_a_japanese_profile_is_a_list_too() -> None:
    """The Japanese answer lists its localised fields (``業種：``) one item each."""
    profile = next(p for p in load_profiles() if p.name == "Toyota")
    state = ResearchState(
        research_findings=profile_findings(profile), confidence_score=9, language="ja"
    )
    items = [text for kind, text in _blocks(compose_answer(state)) if kind == "li"]
    assert ["業種： Automotive", "国： Japan"] == items[:2]
