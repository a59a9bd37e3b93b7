"""A finished report state as a ``Document``: [S#] numbering, sections, metadata."""

from __future__ import annotations

from typing import Any

from ..common.writer import (
    DocSection,
    Document,
    bullets,
    drop_urls,
    md_escape,
    md_url,
    paragraph,
    table,
)
from ..llm import Usage, models_text
from ._labels import fact_label, missing_label, text
from ._model import SECTIONS, ReportFact, ReportSource, ReportState, Section

__all__ = ["compose", "numbered_sources", "sources_json"]


def numbered_sources(state: ReportState) -> list[ReportSource]:
    """The retrieved sources without repeats (by URL), in retrieval order: ``[S1]`` first."""
    unique: dict[str, ReportSource] = {}
    for source in state.sources:
        unique.setdefault(source.url, source)
    return list(unique.values())


def sources_json(state: ReportState) -> list[dict[str, Any]]:
    """The content of ``sources.json``."""
    return [
        {"id": f"S{i}", **source.model_dump()}
        for i, source in enumerate(numbered_sources(state), start=1)
    ]


def _cite(fact: ReportFact, ids: dict[str, str]) -> str:
    refs = "".join(f"[{ids[url]}]" for url in fact.urls if url in ids)
    return f" {refs}" if refs else ""


def _fact_line(fact: ReportFact, lang: str, ids: dict[str, str]) -> str:
    label = md_escape(fact_label(lang, fact.key, fact.label))
    value = md_escape(fact.value)
    line = f"**{label}**: {value}{_cite(fact, ids)}"
    if fact.computed_from:
        names = [fact_label(lang, key) for key in fact.computed_from]
        if len(fact.periods) == len(names):  # figures of different years: say which
            names = [f"{name} ({period})" for name, period in zip(names, fact.periods, strict=True)]
        parts = text(lang, "list_sep").join(names)
        phrase = "computed_mixed" if fact.periods else "computed"
        line += f" _({text(lang, phrase, parts=parts)})_"
    return line


def _section(name: str, section: Section | None, lang: str, ids: dict[str, str]) -> DocSection:
    title = text(lang, name)
    if section is not None and section.status == "unavailable":
        error = md_escape(section.error or "unknown error")
        return DocSection(title, [paragraph(text(lang, "unavailable", agent=name, error=error))])
    if section is None or not section.facts:
        return DocSection(title, [paragraph(text(lang, "none_found"))])
    blocks = [bullets([_fact_line(fact, lang, ids) for fact in section.facts])]
    if section.missing:
        missing = text(lang, "list_sep").join(fact_label(lang, key) for key in section.missing)
        blocks.append(paragraph(f"_{text(lang, 'missing')}: {missing}_"))
    return DocSection(title, blocks)


def _models(state: ReportState) -> str:
    """The model, and each agent that asked its own (``RESEARCH_FSM_MODEL_<AGENT>``)."""
    return models_text(state.model or "", state.models, used=state.usage)


def _methodology(state: ReportState, lang: str) -> DocSection:
    missing = state.quality.missing if state.quality else []
    labels = [missing_label(lang, item) for item in missing]
    sep = text(lang, "list_sep") if lang == "ja" else "; "
    blocks = [
        paragraph(text(lang, "method_agents")),
        paragraph(text(lang, "method_source", source=md_escape(state.data_source))),
        paragraph(text(lang, "method_iterations", iterations=state.iteration)),
        paragraph(
            text(lang, "method_model", models=md_escape(_models(state)))
            if state.model
            else text(lang, "model_none")
        ),
        paragraph(
            text(lang, "method_missing", items=md_escape(sep.join(labels)))
            if missing
            else text(lang, "method_nothing_missing")
        ),
    ]
    if state.notes:
        blocks.append(bullets([md_escape(note) for note in dict.fromkeys(state.notes)]))
    return DocSection(text(lang, "methodology"), blocks)


def _verification(state: ReportState, lang: str) -> DocSection:
    quality = state.quality
    blocks = []
    if quality is not None:
        method = text(lang, quality.method)
        blocks.append(paragraph(text(lang, "score", score=quality.score, method=method)))
        parts = [
            text(
                lang,
                "breakdown",
                part=text(lang, "part_sources" if part == "sources" else part),
                points=points,
                maximum=quality.maximum.get(part, points),
            )
            for part, points in quality.breakdown.items()
        ]
        blocks.append(bullets(parts))
        if quality.method == "combined" and quality.criteria:
            blocks.append(
                paragraph(
                    text(
                        lang,
                        "combined_parts",
                        rules=quality.rule_score,
                        llm=quality.llm_score,
                        completeness=quality.criteria.get("completeness", 0),
                        accuracy=quality.criteria.get("accuracy", 0),
                        depth=quality.criteria.get("depth", 0),
                    )
                )
            )
        else:
            blocks.append(paragraph(text(lang, "score_meaning")))
    sources = numbered_sources(state)
    if not sources:
        grounding = "grounding_none"
    elif all(source.dataset for source in sources):
        grounding = "grounding_offline"
    else:
        grounding = "grounding"
    blocks.append(paragraph(text(lang, grounding)))
    return DocSection(text(lang, "verification"), blocks)


def _metadata(state: ReportState, lang: str, generated_at: str) -> DocSection:
    total = sum(state.usage.values(), Usage())
    rows: list[tuple[str, ...]] = [("", "")]
    rows = [
        (text(lang, "generated_at"), generated_at),
        (text(lang, "data_source"), md_escape(state.data_source)),
        (
            text(lang, "model"),
            md_escape(_models(state)) if state.model else text(lang, "model_none"),
        ),
        (text(lang, "cost"), f"{total.cost_text('US$')} ({total.calls} calls)"),
        (text(lang, "language"), state.language),
    ]
    for agent, usage in sorted(state.usage.items()):
        rows.append((f"{text(lang, 'cost')}: {agent}", usage.cost_text("US$")))
    return DocSection(text(lang, "metadata"), [table([("", ""), *rows])])


def _when(source: ReportSource, lang: str) -> str:
    """ "retrieved <time>", or where an offline source comes from (nothing was fetched)."""
    if source.dataset:
        return text(lang, "bundled", dataset=md_escape(source.dataset))
    return f"{text(lang, 'retrieved')} {source.retrieved_at}"


def compose(state: ReportState, generated_at: str) -> Document:
    """The report of a finished run."""
    lang = state.language
    sources = numbered_sources(state)
    ids = {source.url: f"S{i}" for i, source in enumerate(sources, start=1)}
    company = md_escape(state.company or state.query)
    sections = [DocSection(text(lang, "summary"), [paragraph(md_escape(state.summary))])]
    sections += [_section(name, getattr(state, name), lang, ids) for name in SECTIONS]
    sections.append(_methodology(state, lang))
    listed = [
        f"[{ids[s.url]}] {md_escape(drop_urls(s.title))} — {md_url(s.url)} ({_when(s, lang)})"
        for s in sources
    ]
    sections.append(DocSection(text(lang, "sources"), [bullets(listed)]))
    sections.append(_verification(state, lang))
    sections.append(_metadata(state, lang, generated_at))
    return Document(text(lang, "title", company=company), lang, sections)
