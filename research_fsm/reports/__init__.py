"""Company reports: a researcher, three parallel specialists, a synthesiser and a
quality loop on the engine, saved as Markdown (and PDF) in English or Japanese."""

from ._graph import build_report_graph
from ._model import Fact, Quality, ReportState, Section, Source
from ._store import ReportEntry, ReportStoreError, list_reports, slug

__all__ = [
    "Fact",
    "Quality",
    "ReportEntry",
    "ReportState",
    "ReportStoreError",
    "Section",
    "Source",
    "build_report_graph",
    "list_reports",
    "slug",
]
