"""The report node: the verified draft as a ``Document`` for the report writer (Summary,
Key points, Steps, Caveats, Methodology, Sources, Verification, Metadata; English or
Japanese), written as ``report.md`` / ``report.pdf`` into the session folder.

Only claims the last verification supported reach the body; the others are listed,
flagged, under Verification. URLs that this session did not retrieve are removed from
every text the report prints, so a citation can only point at something retrieved."""

from __future__ import annotations

import asyncio
import re
from typing import Any, Final

from ..common.files import utc_now
from ..common.writer import (
    DocSection,
    Document,
    bullets,
    code,
    md_escape,
    md_url,
    paragraph,
    table,
    to_markdown,
    to_pdf,
)
from ..engine import NodeContext
from ..llm import Usage, models_text
from ._cite import renumbered, sources_json
from ._labels import label
from ._model import Claim, DeepSource, DeepState, Verification
from ._nodes import draft_markdown, verification_json
from ._search import HEADING_PATH
from ._session import write_stage

__all__ = ["TRAILING", "ReportWriter", "compose", "retrieved_urls", "scrub"]

_URL: Final = re.compile(r"https?://[^\s<>\"'\])]+")
TRAILING: Final = ".,;:`*_~"
"""What may follow a URL without being part of it: punctuation, and the marks of the code
span or emphasis around it (a code span's closing backtick, quoted as the document has it)."""
_SECTIONS: Final = ("summary", "key_points", "steps", "caveats")
CLOSEST: Final = 3
"""Sources listed as the closest, under the bar, when the documents do not answer."""


def scrub(text: str, allowed: set[str]) -> str:
    """``text`` with every URL not in ``allowed`` replaced by ``(link removed)``."""
    return _URL.sub(
        lambda m: m.group() if m.group().rstrip(TRAILING) in allowed else "(link removed)", text
    )


def retrieved_urls(state: DeepState) -> set[str]:
    """The URLs a report may show: the web pages retrieved, and the addresses written in
    the user's own documents that were retrieved (quoted as the document has them)."""
    allowed = {s.locator for s in state.sources if s.kind == "web"}
    for source in state.sources:
        if source.kind == "file":
            allowed.update(m.group().rstrip(TRAILING) for m in _URL.finditer(source.text))
    return allowed


def _final(state: DeepState) -> Verification | None:
    return state.verifications[-1] if state.verifications else None


def supported_claims(state: DeepState) -> list[Claim]:
    """The draft's claims the last verification supported."""
    final = _final(state)
    if state.draft is None or final is None:
        return []
    ok = {check.claim for check in final.checks if check.supported}
    return [claim for claim in state.draft.claims if claim.id in ok]


def _line(claim: Claim, state: DeepState, allowed: set[str]) -> str:
    cites = "".join(f"[{sid}]" for sid in claim.sources if state.source(sid) is not None)
    prose = claim.text.split("\n", 1)[0]
    return f"{md_escape(scrub(prose, allowed))} {cites}".strip()


def _code_of(claim: Claim, allowed: set[str]) -> list[str]:
    """The code lines of a claim that is a step with its command (its lines after the
    first), URLs not retrieved removed; none for a claim of prose."""
    return [scrub(line, allowed) for line in claim.text.split("\n")[1:] if line.strip()]


def _claim_blocks(claims: list[Claim], name: str, state: DeepState, allowed: set[str]) -> list[Any]:
    """The section's claims: a paragraph (the summary) or bullets, each step's code as a
    code block after the claim that introduces it."""
    blocks: list[Any] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            blocks.append(paragraph(" ".join(pending)) if name == "summary" else bullets(pending))
            pending.clear()

    for claim in claims:
        pending.append(_line(claim, state, allowed))
        lines = _code_of(claim, allowed)
        if lines:
            flush()
            blocks.append(code(lines))
    flush()
    return blocks


def _body(state: DeepState, lang: str, allowed: set[str]) -> list[DocSection]:
    claims = supported_claims(state)
    if state.outcome in ("no_sources", "no_relevant") or not claims:
        key = (
            state.outcome if state.outcome in ("no_sources", "no_relevant") else "nothing_verified"
        )
        text = label(lang, key).format(topic=md_escape(state.topic))
        blocks = [paragraph(text)]
        if state.outcome == "no_relevant":
            blocks += _closest(state, lang, allowed)
        return [DocSection(label(lang, "summary"), blocks)]
    sections = []
    for name in _SECTIONS:
        mine = [c for c in claims if c.section == name]
        if not mine:
            continue
        sections.append(DocSection(label(lang, name), _claim_blocks(mine, name, state, allowed)))
    return sections


def _closest(state: DeepState, lang: str, allowed: set[str]) -> list[Any]:
    """The best-scoring sources of a question the documents do not answer, each with its
    share of the question's key terms: under the bar for an answer, never said to be "not
    about it" (a reader may find the answer there); never cited, no claim is made."""
    ranked = sorted(state.relevance, key=lambda v: -v.score)[:CLOSEST]
    lines = [
        f"{_cite(source, allowed)} ({label(lang, 'not_about').format(score=verdict.score)})"
        for verdict in ranked
        if (source := state.source(verdict.source)) is not None
    ]
    return [paragraph(label(lang, "closest")), bullets(lines)] if lines else []


def _models(state: DeepState) -> str:
    """The model, and each stage that asked its own (``RESEARCH_FSM_MODEL_<AGENT>``)."""
    return models_text(state.model or "", state.models, used=state.usage)


def _methodology(state: DeepState, lang: str, allowed: set[str]) -> DocSection:
    relevant = sum(1 for v in state.relevance if v.relevant)
    failed = [a for a in state.analyses if a.error is not None]
    items = [
        label(lang, "m_source").format(backend=state.searched_with),
        label(lang, "m_counts").format(
            retrieved=len(state.sources),
            relevant=relevant,
            analysed=len(state.analyses) - len(failed),
            failed=len(failed),
        ),
        label(lang, "m_method").format(
            who=f"Claude ({md_escape(_models(state))})" if state.model else label(lang, "rules")
        ),
        label(lang, "m_verify").format(threshold=f"{state.threshold:.0%}"),
    ]
    if not state.model:
        items.append(label(lang, "m_verbatim"))
    items += [
        label(lang, "m_query_any" if q.broadened and state.mode == "docs" else "m_query").format(
            n=i, query=md_escape(scrub(q.query, allowed))
        )
        for i, q in enumerate(state.queries, 1)
    ]
    items += [md_escape(scrub(note, allowed)) for note in dict.fromkeys(state.notes)]
    items += [
        label(lang, "m_failed").format(sid=a.source, error=md_escape(scrub(a.error or "", allowed)))
        for a in failed
    ]
    return DocSection(label(lang, "methodology"), [bullets(items)])


def _cite(source: DeepSource, allowed: set[str]) -> str:
    """``title — locator § heading path, position``: a web locator as an autolink, every
    text inert."""
    where = md_url(source.locator) if source.kind == "web" else md_escape(source.locator)
    path = (source.heading or "").split(HEADING_PATH)
    if path[0] == source.title:
        path = path[1:]  # the document's own title heading is already shown as its title
    if path and path[0] and source.kind == "file":
        where += f" § {md_escape(scrub(HEADING_PATH.join(path), allowed))}"
    if source.position:
        where += f", {md_escape(source.position)}"
    title = md_escape(scrub(source.title, allowed))
    return f"{title} — {where}" if title else where


def _sources(state: DeepState, lang: str, allowed: set[str]) -> DocSection:
    cited = dict.fromkeys(sid for c in supported_claims(state) for sid in c.sources)
    lines = [f"[{s.id}] {_cite(s, allowed)}" for sid in cited if (s := state.source(sid))]
    if not lines:
        return DocSection(label(lang, "sources"), [paragraph(label(lang, "no_source_used"))])
    return DocSection(label(lang, "sources"), [bullets(lines)])


def _verification(state: DeepState, lang: str, allowed: set[str]) -> DocSection:
    final = _final(state)
    if final is None:
        return DocSection(label(lang, "verification"), [paragraph(label(lang, "not_verified"))])
    rows: list[tuple[str, ...]] = [
        (label(lang, "v_measure"), label(lang, "v_value")),
        (label(lang, "v_checked"), str(final.total)),
        (label(lang, "v_supported"), str(final.supported)),
        (label(lang, "v_unsupported"), str(final.total - final.supported)),
        (label(lang, "v_ratio"), f"{final.ratio:.0%}"),
        (label(lang, "v_threshold"), f"{final.threshold:.0%}"),
        (label(lang, "v_rounds"), str(len(state.verifications))),
    ]
    blocks = [table(rows)]
    evidence = [
        f"{c.claim} [{c.source}]: “{md_escape(scrub(c.evidence or '', allowed))}”"
        for c in final.checks
        if c.supported
    ]
    if evidence:
        blocks += [paragraph(f"**{label(lang, 'v_evidence')}**"), bullets(evidence)]
    flagged = [
        f"{c.claim}: {md_escape(scrub(c.text, allowed))} — {md_escape(c.reason)}"
        for c in final.checks
        if not c.supported
    ]
    if flagged:
        blocks += [paragraph(f"**{label(lang, 'v_flagged')}**"), bullets(flagged)]
    return DocSection(label(lang, "verification"), blocks)


def _metadata(state: DeepState, lang: str, generated_at: str, session_id: str) -> DocSection:
    calls = sum(u.calls for u in state.usage.values())
    cost = sum(state.usage.values(), Usage()).cost_text()
    rows: list[tuple[str, ...]] = [
        (label(lang, "v_measure"), label(lang, "v_value")),
        (label(lang, "md_topic"), md_escape(state.topic)),
        (label(lang, "md_session"), session_id),
        (label(lang, "md_generated"), generated_at),
        (label(lang, "md_language"), state.language),
        (
            label(lang, "md_model"),
            md_escape(_models(state)) if state.model else label(lang, "rules"),
        ),
        (label(lang, "md_calls"), f"{calls} ({cost})"),
    ]
    return DocSection(label(lang, "metadata"), [table(rows)])


def compose(state: DeepState, generated_at: str, session_id: str) -> Document:
    """The report as a ``Document``."""
    lang = state.language
    allowed = retrieved_urls(state)
    sections = _body(state, lang, allowed)
    sections += [
        _methodology(state, lang, allowed),
        _sources(state, lang, allowed),
        _verification(state, lang, allowed),
        _metadata(state, lang, generated_at, session_id),
    ]
    title = label(lang, "title").format(topic=md_escape(state.topic))
    return Document(title=title, language=lang, sections=sections)


class ReportWriter:
    """Writes report.md (and report.pdf) into the session folder and marks it finished."""

    async def run(self, state: DeepState, ctx: NodeContext) -> dict[str, Any]:
        generated_at = utc_now()
        outcome = state.outcome if state.outcome != "running" else "ok"
        final = renumbered(state.model_copy(update={"outcome": outcome}))
        doc = compose(final, generated_at, ctx.thread_id)
        files: dict[str, Any] = {"report.md": to_markdown(doc)}
        files |= numbered_stages(final, renumbered=final is not state)
        if "pdf" in state.formats:
            files["report.pdf"] = await asyncio.to_thread(to_pdf, doc)
        meta = session_meta(final, ctx.thread_id)
        meta |= {"status": "completed" if outcome == "ok" else outcome, "finished_at": generated_at}
        files["session.json"] = meta
        await write_stage(state.session_dir, files)
        written = [f"{state.session_dir}/{name}" for name in files if name.startswith("report.")]
        return {"outcome": outcome, "files": written}


def numbered_stages(state: DeepState, *, renumbered: bool) -> dict[str, Any]:
    """``sources.json``, and the stage files that name sources rewritten with the
    report's numbers when the sources were renumbered."""
    files: dict[str, Any] = {"sources.json": sources_json(state)}
    if not renumbered:
        return files
    files["search_results.json"] = [s.model_dump() for s in state.sources]
    files["relevance.json"] = [v.model_dump() for v in state.relevance]
    if state.analyses:
        files["evidence.json"] = [a.model_dump() for a in state.analyses]
    if state.draft is not None:
        files["draft.md"] = draft_markdown(state.draft, state.language)
    if state.verifications:
        files["verification.json"] = verification_json(state.verifications)
    return files


def session_meta(state: DeepState, session_id: str) -> dict[str, Any]:
    """``session.json``'s fields (status ``running`` until the report is written)."""
    return {
        "id": session_id,
        "topic": state.topic,
        "language": state.language,
        "mode": state.mode,
        "docs": state.docs,
        "formats": state.formats,
        "top_k": state.top_k,
        "threshold": state.threshold,
        "model": state.model,
        "models": state.models,
        "created_at": state.started_at,
        "status": "running",
    }
