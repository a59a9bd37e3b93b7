"""The report graph: researcher -> [financial, market, product] -> synthesizer ->
quality -> (save | researcher), on the engine's parallel branches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Final

from ..common.files import utc_now, write_file
from ..common.writer import to_markdown, to_pdf
from ..engine import END, START, NodeContext, StateGraph
from ..llm import LLM
from ..sources import CompanyIndex, DataSource
from ._compose import compose, sources_json
from ._model import SECTIONS, ReportState, Section
from ._quality import MAX_ITERATIONS, QUALITY_TARGET, QualityCheck, Synthesizer, all_facts
from ._research import Describe, Researcher
from ._specialists import Specialist
from ._store import new_report_dir

__all__ = ["NODE_TIMEOUT_SECONDS", "build_report_graph", "quality_router", "research_router"]

NODE_TIMEOUT_SECONDS: Final = 120.0
"""No report agent step may take longer than this."""


def research_router(state: ReportState) -> str | list[str]:
    """The three specialists at once, or END when no company was found."""
    if state.not_found is not None:
        return "not_found"
    return list(SECTIONS)


def quality_router(repeatable: bool) -> Any:
    """save when the score reaches the target, after ``MAX_ITERATIONS``, or when
    another round cannot change anything (a source that ignores feedback); else research."""

    def route(state: ReportState) -> str:
        score = state.quality.score if state.quality else 0
        if score >= QUALITY_TARGET or state.iteration >= MAX_ITERATIONS or not repeatable:
            return "save"
        return "iterate"

    return route


async def recover(state: ReportState, ctx: NodeContext) -> dict[str, Any]:
    """A specialist failed unexpectedly (a bug, a timeout): its section is marked
    unavailable; the finished siblings' work stays."""
    error = ctx.error
    assert error is not None
    name = error.node
    update: dict[str, Any] = {
        "notes": [f"{name}: {error.exc_type}: {error.message}"],
        name: Section(status="unavailable", error=f"{error.exc_type}: {error.message}"),
    }
    return update


def _files(state: ReportState, root: Path, generated_at: str) -> tuple[Path, list[str]]:
    """Write the report's files (blocking: run in a thread)."""
    folder = new_report_dir(root, state.company or state.query)
    doc = compose(state, generated_at)
    markdown = to_markdown(doc)
    written = []
    write_file(folder / "report.md", markdown.encode("utf-8"))
    written.append(str(folder / "report.md"))
    if "pdf" in state.formats:
        write_file(folder / "report.pdf", to_pdf(doc))
        written.append(str(folder / "report.pdf"))
    payload = json.dumps(sources_json(state), ensure_ascii=False, indent=2)
    write_file(folder / "sources.json", payload.encode("utf-8"))
    written.append(str(folder / "sources.json"))
    meta = {
        "company": state.company,
        "generated_at": generated_at,
        "language": state.language,
        "score": state.quality.score if state.quality else None,
        "iterations": state.iteration,
        "facts": [fact.model_dump(mode="json") for fact in all_facts(state)],
    }
    write_file(folder / "meta.json", json.dumps(meta, ensure_ascii=False).encode("utf-8"))
    return folder, written


class Saver:
    """Writes report.md, report.pdf (when asked) and sources.json off the event loop."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def run(self, state: ReportState, ctx: NodeContext) -> dict[str, Any]:
        root = Path(state.out_dir) if state.out_dir else self.root
        folder, written = await asyncio.to_thread(_files, state, root, utc_now())
        return {"saved_to": str(folder), "files": written}


def build_report_graph(
    *,
    source: DataSource,
    index: CompanyIndex,
    llm: LLM | None,
    root: Path,
    describe: Describe | None = None,
) -> StateGraph[ReportState]:
    """The report workflow, not yet compiled; reports are saved under ``root``."""
    web = "Directory" not in source.name
    graph = StateGraph(ReportState)
    researcher = Researcher(source, index, describe, web=web)
    graph.add_node("researcher", researcher, timeout=NODE_TIMEOUT_SECONDS)
    for name in SECTIONS:
        graph.add_node(
            name, Specialist(name, source, llm), timeout=NODE_TIMEOUT_SECONDS, on_error="recover"
        )
    graph.add_node("recover", recover)
    graph.add_node("synthesizer", Synthesizer(llm), timeout=NODE_TIMEOUT_SECONDS)
    graph.add_node("quality", QualityCheck(llm), timeout=NODE_TIMEOUT_SECONDS)
    graph.add_node("save", Saver(root))
    graph.add_edge(START, "researcher")
    targets = {name: name for name in SECTIONS} | {"not_found": END}
    graph.add_router("researcher", research_router, targets, join="synthesizer")
    graph.add_edge(list(SECTIONS), "synthesizer")
    graph.add_edge("recover", "synthesizer")
    graph.add_edge("synthesizer", "quality")
    graph.add_router(
        "quality", quality_router(source.reads_feedback), {"save": "save", "iterate": "researcher"}
    )
    graph.add_edge("save", END)
    return graph
