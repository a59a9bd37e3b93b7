"""Company reports: a researcher, three parallel specialists, a synthesiser and a
quality loop on the engine, saved as Markdown (and PDF) in English or Japanese.

``ReportRunner`` runs them (``ResearchAssistant.report`` delegates to it); reports
are saved under ``reports_home()`` and listed by ``list_reports``."""

from ..common.files import ReportStoreError
from ._agent_table import AGENTS
from ._api import CompanyNotFound, InvalidReportRequest, Report, ReportProgress, ReportRunner
from ._graph import build_report_graph
from ._model import Fact, Quality, ReportState, Section, Source
from ._store import ReportEntry, list_reports, reports_home, slug

__all__ = [
    "AGENTS",
    "CompanyNotFound",
    "Fact",
    "InvalidReportRequest",
    "Quality",
    "Report",
    "ReportEntry",
    "ReportProgress",
    "ReportRunner",
    "ReportState",
    "ReportStoreError",
    "Section",
    "Source",
    "build_report_graph",
    "list_reports",
    "reports_home",
    "slug",
]
