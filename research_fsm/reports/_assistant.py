"""The report methods of ``ResearchAssistant`` (kept apart to keep modules small)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._home import default_home
from ..engine import CheckpointStore
from ..llm import LLM
from ..sources import CompanyIndex, DataSource
from ._api import InvalidReportRequest, Report, ReportProgress, ReportRunner

__all__ = ["ReportsMixin", "reports_home"]


def reports_home() -> Path:
    """``$RESEARCH_FSM_HOME/reports`` (the same home as the conversations)."""
    return default_home() / "reports"


class ReportsMixin:
    """``report``, ``stream_report`` and ``continue_report``."""

    source: DataSource
    llm: LLM | None
    store: CheckpointStore
    _reports: ReportRunner | None

    if TYPE_CHECKING:

        async def _index(self) -> CompanyIndex: ...

        @staticmethod
        def _check(text: object) -> str: ...

    # -- reports -----------------------------------------------------------------

    async def report_runner(self) -> ReportRunner:
        """The compiled report workflow (built on first use, sharing source, LLM and store)."""
        if self._reports is None:
            index = await self._index()
            self._reports = ReportRunner(
                source=self.source, index=index, llm=self.llm, store=self.store,
                root=reports_home(), describe=getattr(self.source, "describe", None),
            )  # fmt: skip
        return self._reports

    async def report(
        self, company: str, *, language: Literal["en", "ja"] = "en",
        formats: tuple[str, ...] = ("md",), out: Path | None = None,
    ) -> Report:  # fmt: skip
        """Research ``company`` and save a report (see ``research_fsm.reports``)."""
        async for event in self.stream_report(company, language=language, formats=formats, out=out):
            if isinstance(event, Report):
                return event
        raise AssertionError("a report run ends with a Report")  # pragma: no cover

    async def stream_report(
        self, company: str, *, language: Literal["en", "ja"] = "en",
        formats: tuple[str, ...] = ("md",), out: Path | None = None,
        thread_id: str | None = None,
    ) -> AsyncIterator[ReportProgress | Report]:  # fmt: skip
        """``ReportProgress`` per agent as it starts and finishes (the three specialists
        at once), then the ``Report``. ``thread_id`` names the run (default: a new one)."""
        runner = await self.report_runner()
        value, thread = runner.start(company, language, formats, out)
        async for event in runner.events(value, thread_id or thread, None):
            yield event

    async def continue_report(
        self, thread_id: str, *, answer: str | None = None
    ) -> AsyncIterator[ReportProgress | Report]:
        """Continue a report run: answer its question back, or, after a crash, run
        what had not finished (finished specialists are not run again)."""
        runner = await self.report_runner()
        snapshot = await runner.app.get_state(thread_id)
        if snapshot is None:
            raise InvalidReportRequest(f"there is no report `{thread_id}`")
        token = snapshot.suspension.token if snapshot.suspension is not None else None
        if token is not None and answer is None:
            raise InvalidReportRequest(f"report `{thread_id}` waits for an answer: which company?")
        payload = {"answer": self._check(answer)} if answer is not None else None
        async for event in runner.events(payload, thread_id, token):
            yield event
