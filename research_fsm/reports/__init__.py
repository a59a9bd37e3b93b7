"""Company reports: a researcher, three parallel specialists, a synthesiser and a
quality loop on the engine, saved as Markdown (and PDF) in English or Japanese.

``ReportRunner`` runs them (``ResearchAssistant.report`` delegates to it); reports
are saved under ``reports_home()`` and listed by ``list_reports``."""

from typing import Any

from .._moved import renamed
from ..common.files import ReportStoreError
from ._agent_table import AGENTS
from ._api import CompanyNotFound, InvalidReportRequest, Report, ReportProgress, ReportRunner
from ._graph import build_report_graph
from ._model import _RENAMED, Quality, ReportFact, ReportSource, ReportState, Section
from ._store import ReportEntry, list_reports, reports_home, slug

__all__ = [
    "AGENTS",
    "CompanyNotFound",
    "InvalidReportRequest",
    "Quality",
    "Report",
    "ReportEntry",
    "ReportFact",
    "ReportProgress",
    "ReportRunner",
    "ReportSource",
    "ReportState",
    "ReportStoreError",
    "Section",
    "build_report_graph",
    "list_reports",
    "reports_home",
    "slug",
]


def __getattr__(name: str) -> Any:
    # Fact and Source: renamed ReportFact and ReportSource (the deep-research app has
    # facts and sources of its own; the shared Source is research_fsm.common.models')
    return renamed(__name__, name, _RENAMED)
