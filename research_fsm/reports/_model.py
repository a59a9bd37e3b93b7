"""The report workflow's state and the models it is made of."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._moved import renamed
from ..common.files import utc_now
from ..common.models import Language
from ..common.models import Source as SharedSource
from ..engine import add, append
from ..llm import Usage

__all__ = [
    "SECTIONS",
    "Language",
    "Quality",
    "ReportFact",
    "ReportSource",
    "ReportState",
    "Section",
    "SpecialistName",
]

SpecialistName = Literal["financial", "market", "product"]
SECTIONS: tuple[SpecialistName, ...] = ("financial", "market", "product")
"""The specialists, in the order the report shows their sections."""

_CONFIG = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class ReportSource(SharedSource):
    """A source a report's agents actually retrieved (the apps' shared ``Source``, with its
    URL and agent); ``[S#]`` ids are given when the report is written. Formerly
    ``research_fsm.reports.Source`` (deprecated alias)."""

    url: str
    """Absolute URL."""
    agent: str
    """The agent that retrieved it."""
    dataset: str | None = None
    """For a source that a bundled offline data set cites (nothing was fetched for the
    report): that data set, e.g. ``"pytickersymbols 1.17.5"``."""


class ReportFact(BaseModel):
    """One finding of a report's specialist: a labelled value (a figure, an industry, a
    product) with the URLs that state it, or the facts it is computed from. Formerly
    ``research_fsm.reports.Fact`` (deprecated alias); a deep-research session's facts
    are ``research_fsm.deep.QuotedFact``."""

    model_config = _CONFIG

    key: str
    """Stable key, e.g. ``"revenue"`` or ``"net_margin"`` (the writer's label lookup)."""
    value: str
    """The value as the source writes it, or the computed figure."""
    urls: list[str] = Field(default_factory=list)
    """URLs of the retrieved sources that state it."""
    computed_from: list[str] = Field(default_factory=list)
    """For a computed figure: the keys of the facts it is computed from."""
    label: str | None = None
    """A label for keys the writer does not know (facts extracted by Claude)."""
    periods: list[str] = Field(default_factory=list)
    """For a figure computed from figures of different fiscal years: the year of each
    (in ``computed_from`` order), so that the report labels the mix."""


class Section(BaseModel):
    """What one specialist produced."""

    model_config = _CONFIG

    status: Literal["ok", "unavailable"] = "ok"
    """``unavailable`` when the specialist failed; the report says so."""
    facts: list[ReportFact] = Field(default_factory=list)
    """The findings, in the order the report lists them."""
    text: str | None = None
    """Free text the specialist adds (e.g. the peer ranking sentence)."""
    missing: list[str] = Field(default_factory=list)
    """Keys of what it looked for and did not find."""
    error: str | None = None
    """Why it is unavailable."""


class Quality(BaseModel):
    """The quality check's verdict."""

    model_config = _CONFIG

    score: int = Field(ge=0, le=100)
    """0-100."""
    breakdown: dict[str, int] = Field(default_factory=dict)
    """Points per part (financial, market, product, sources)."""
    maximum: dict[str, int] = Field(default_factory=dict)
    """The most each part can get."""
    missing: list[str] = Field(default_factory=list)
    """What the report lacks, for the next iteration and the Methodology section."""
    method: Literal["rules", "llm", "combined"] = "rules"
    """Who scored it: the rules, or ``combined`` (the mean of the rules' score and Claude's)."""
    rule_score: int | None = None
    """For a combined score: the rules' coverage score, 0-100."""
    llm_score: int | None = None
    """For a combined score: Claude's score, 0-100 (the sum of ``criteria``)."""
    criteria: dict[str, int] = Field(default_factory=dict)
    """Claude's points per criterion of design 004: completeness (of 40), accuracy (of 30),
    depth (of 30)."""


class ReportState(BaseModel):
    """The report graph's state (one thread per report)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    query: str = ""
    """The company as the user wrote it."""
    company: str | None = None
    """The company resolved from ``query``."""
    not_found: str | None = None
    """Set when no company matches: the sentence to tell the user."""
    language: Language = "en"
    """The report's language."""
    formats: list[str] = Field(default_factory=lambda: ["md"])
    """What to write: ``md`` and optionally ``pdf``."""
    out_dir: str | None = None
    """Where report folders go (default ``$RESEARCH_FSM_HOME/reports``)."""
    profile: dict[str, object] = Field(default_factory=dict)
    """The researcher's raw material (directory profile, or web findings)."""
    sources: Annotated[list[ReportSource], append] = Field(default_factory=list)
    """Every source retrieved, by any agent (deduplicated by URL when written)."""
    financial: Section | None = None
    """The financial specialist's section."""
    market: Section | None = None
    """The market specialist's section."""
    product: Section | None = None
    """The product specialist's section."""
    summary: str = ""
    """The synthesiser's summary."""
    quality: Quality | None = None
    """The latest quality verdict."""
    iteration: int = 0
    """Research iterations run."""
    gaps: list[str] = Field(default_factory=list)
    """What the quality check asked the next iteration to find."""
    usage: Annotated[dict[str, Usage], add] = Field(default_factory=dict)
    """LLM usage per agent."""
    timings: Annotated[dict[str, float], add] = Field(default_factory=dict)
    """Seconds spent per agent (summed over iterations)."""
    data_source: str = ""
    """The data source's name."""
    model: str | None = None
    """The LLM's model, or ``None`` offline."""
    models: dict[str, str] = Field(default_factory=dict)
    """The agents whose model is not ``model`` (``RESEARCH_FSM_MODEL_<AGENT>``) -> theirs."""
    started_at: str = Field(default_factory=utc_now)
    """When the report was started."""
    saved_to: str | None = None
    """The report's folder once saved."""
    files: list[str] = Field(default_factory=list)
    """The files written."""
    notes: Annotated[list[str], append] = Field(default_factory=list)
    """Things that went wrong and how they were handled (shown under Methodology)."""


_RENAMED = {
    "Fact": (ReportFact, "use research_fsm.reports.ReportFact"),
    "Source": (ReportSource, "use research_fsm.reports.ReportSource"),
}
"""The models' former names (deprecated; the deep-research app's are ``QuotedFact`` and
``DeepSource``, the shared base ``research_fsm.common.models.Source``)."""


def __getattr__(name: str) -> Any:
    return renamed(__name__, name, _RENAMED)
