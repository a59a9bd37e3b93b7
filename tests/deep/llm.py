"""Scripted Claude replies for deep research that read the prompt like Claude would:
rate every ``<source>``, quote its first sentences, verify claims honestly."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from research_fsm.common.fence import unescape
from research_fsm.deep._text import sentences, terms
from research_fsm.llm import ScriptedLLM

SOURCE = re.compile(r'<source id="(S\d+)"[^>]*>\n(.*?)\n</source>', re.S)
TOPIC_FENCE = re.compile(r"<topic>\n(.*?)\n</topic>", re.S)
CLAIM = re.compile(r"^(C\d+): (.*) \(cites (.*)\)$", re.M)


def blocks(prompt: str) -> dict[str, str]:
    """``S#`` -> text of every source block in ``prompt``."""
    return dict(SOURCE.findall(prompt))


def rate(prompt: str) -> dict[str, Any]:
    """0.9 for sources mentioning Spring, 0.1 for the others."""
    return {
        "results": [
            {
                "id": sid,
                "score": 0.9 if "spring" in text.lower() else 0.1,
                "reason": "on topic" if "spring" in text.lower() else "off topic",
            }
            for sid, text in blocks(prompt).items()
        ]
    }


def analyse(prompt: str) -> dict[str, Any]:
    """The source's first two sentences as findings, quoted exactly."""
    ((_, text),) = blocks(prompt).items()
    found = [s.text for s in sentences(text)][:2]
    return {"facts": [{"kind": "finding", "statement": s, "quote": s} for s in found]}


def verify(prompt: str) -> dict[str, Any]:
    """For each claim, the sentence of a cited source holding most of its terms (>= 60%)."""
    sources = blocks(prompt)
    quotes = []
    for cid, text, cites in CLAIM.findall(prompt):
        wanted = set(terms(text))
        best: tuple[float, str | None, str | None] = (0.0, None, None)
        for sid in [c.strip() for c in cites.split(",")]:
            for sentence in sentences(sources.get(sid, "")):
                score = len(wanted & set(terms(sentence.text))) / max(len(wanted), 1)
                if score > best[0]:
                    best = (score, sentence.text, sid)
        ok = best[0] >= 0.6
        quotes.append(
            {"claim": cid, "source": best[2] if ok else None, "quote": best[1] if ok else None}
        )
    return {"quotes": quotes}


def query(prompt: str) -> dict[str, Any]:
    """The topic line, or the first gap when there are gaps."""
    lines = prompt.splitlines()
    gaps = [unescape(line[2:]) for line in lines if line.startswith("- ")]
    topic = TOPIC_FENCE.search(prompt)
    return {"query": gaps[0] if gaps else unescape(topic.group(1) if topic else lines[0])}


def claude(
    drafts: list[str], *, many: int = 20, analysis: Callable[[str], Any] = analyse
) -> ScriptedLLM:
    """A scripted Claude: honest query/relevance/analysis/verification, ``drafts`` in turn."""
    return ScriptedLLM(
        {
            "query_parser": [query] * many,
            "relevance_filter": [rate] * many,
            "deep_analysis": [analysis] * many,
            "synthesis": list(drafts),
            "verification": [verify] * many,
        },
        model="claude-test",
    )
