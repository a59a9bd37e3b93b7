"""Grounded by construction, checked after the fact: ``grounding_problems(folder)`` reads a
session folder and lists every way its report is not grounded in what was retrieved.

- every ``[S#]`` in ``report.md`` is a source of ``search_results.json``;
- every URL in the report was retrieved (a web page, or written in a retrieved passage of
  the user's documents); every file name it shows is a retrieved file or is written in a
  retrieved passage;
- every piece of evidence in ``verification.json`` occurs verbatim in its source, which
  the claim cites; every quote the report shows as evidence occurs in its source;
- the Verification section's counts are ``verification.json``'s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from ..common.writer import md_url
from ._labels import label
from ._report import TRAILING, scrub
from ._text import quote_in, unfenced

__all__ = ["grounding_problems"]

_CITE: Final = re.compile(r"\[(S\d+)\]")
_URL: Final = re.compile(r"https?://[^\s<>\"'\])\u201c\u201d\u2018\u2019\u00ab\u00bb]+")
"""A URL as written; typographic quotes around it (the evidence's “…”) are not part of it."""
_FILE: Final = re.compile(r"[\w./-]+\.(?:md|txt|html?|pdf)\b", re.IGNORECASE)
_EVIDENCE: Final = re.compile(r"^- (C\d+) \[(S\d+)\]: “(.*)”$", re.MULTILINE)
_ESCAPE: Final = re.compile(r"\\(.)")
_AUTOLINK: Final = re.compile(r"(?<!\\)<https?://[^<>\s\\]*>")


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _count(markdown: str, name: str) -> str | None:
    match = re.search(rf"^\| {re.escape(name)} \| ([^|]+) \|$", markdown, re.MULTILINE)
    return match.group(1).strip() if match else None


def _report_problems(markdown: str, sources: dict[str, dict[str, Any]]) -> list[str]:
    problems = [
        f"report cites [{sid}], which was not retrieved"
        for sid in dict.fromkeys(_CITE.findall(markdown))
        if sid not in sources
    ]
    urls = {s["locator"] for s in sources.values() if s["kind"] == "web"}
    quoted = " ".join(s["text"] for s in sources.values() if s["kind"] == "file")
    urls |= {url.rstrip(TRAILING) for url in _URL.findall(quoted)}
    links = {md_url(u): u for u in urls}
    for link in dict.fromkeys(_AUTOLINK.findall(markdown)):
        if link not in links:
            problems.append(f"report links {link}, which was not retrieved")
    plain = _ESCAPE.sub(r"\1", _AUTOLINK.sub(" ", markdown))
    for url in dict.fromkeys(_URL.findall(plain)):
        if url.rstrip(TRAILING) not in urls:
            problems.append(f"report shows the URL {url}, which was not retrieved")
    files = {s["locator"] for s in sources.values() if s["kind"] == "file"}
    names = files | {f.rsplit("/", 1)[-1] for f in files}
    hosts = {u.split("/")[2] for u in urls if u.count("/") >= 2}
    for name in dict.fromkeys(_FILE.findall(plain)):
        inside_url = any(name in u for u in urls) or name.split("/")[0] in hosts
        if name not in names and not inside_url and name not in quoted:
            problems.append(f"report shows the file {name}, which was not retrieved")
    for claim, sid, quote in _EVIDENCE.findall(markdown):
        text = unfenced(sources.get(sid, {}).get("text", ""))
        shown = _flat(_ESCAPE.sub(r"\1", quote))
        if shown not in _flat(text) and shown not in _flat(scrub(text, urls)):
            problems.append(f"report's evidence for {claim} is not in {sid}")
    return problems


def _verification_problems(
    markdown: str, verification: dict[str, Any], sources: dict[str, dict[str, Any]], lang: str
) -> list[str]:
    problems = []
    for entry in verification["history"]:
        for check in entry["checks"]:
            if not check["supported"]:
                continue
            sid, evidence = check["source"], check["evidence"] or ""
            if sid not in check["sources"]:
                problems.append(
                    f"{check['claim']}'s evidence is from {sid}, which it does not cite"
                )
            if not quote_in(evidence, sources.get(sid, {}).get("text", "")):
                problems.append(f"{check['claim']}'s evidence does not occur verbatim in {sid}")
    wanted = {
        "v_checked": verification["claims"],
        "v_supported": verification["supported"],
        "v_unsupported": verification["unsupported"],
        "v_rounds": verification["rounds"],
    }
    for key, value in wanted.items():
        shown = _count(markdown, label(lang, key))
        if shown != str(value):
            problems.append(f"report shows {label(lang, key)} = {shown}, verification.json {value}")
    return problems


def grounding_problems(folder: str | Path) -> list[str]:
    """Everything in the session at ``folder`` that is not grounded (empty: grounded)."""
    base = Path(folder)
    try:
        markdown = (base / "report.md").read_text(encoding="utf-8")
        sources = {s["id"]: s for s in _load(base / "search_results.json")}
        session = _load(base / "session.json")
    except FileNotFoundError as exc:
        return [f"missing {Path(exc.filename or '?').name}"]
    problems = _report_problems(markdown, sources)
    verification_path = base / "verification.json"
    if verification_path.exists():
        verification = _load(verification_path)
        lang = str(session.get("language", "en"))
        problems += _verification_problems(markdown, verification, sources, lang)
    elif _CITE.search(markdown):
        problems.append("report cites sources but nothing was verified")
    return problems
