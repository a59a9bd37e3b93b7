"""The deep-research workflow's state and the models it is made of."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._moved import renamed
from ..common.files import utc_now
from ..common.models import Language
from ..common.models import Source as SharedSource
from ..engine import add, append
from ..llm import Usage

__all__ = [
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_K",
    "MAX_LOOPS",
    "MAX_SEARCH_ATTEMPTS",
    "Analysis",
    "Claim",
    "ClaimCheck",
    "DeepSource",
    "DeepState",
    "Draft",
    "Language",
    "Mode",
    "QueryRecord",
    "QuotedFact",
    "Relevance",
    "SectionName",
    "Verification",
]


Mode = Literal["web", "docs"]
SectionName = Literal["summary", "key_points", "steps", "caveats"]

DEFAULT_TOP_K: Final = 3
"""Sources analysed in depth per round (one parallel branch each)."""
DEFAULT_THRESHOLD: Final = 0.8
"""Share of supported claims below which verification searches again for the gaps."""
MAX_SEARCH_ATTEMPTS: Final = 2
"""Searches per round: the enhanced query, then one broadened query."""
MAX_LOOPS: Final = 2
"""Verification rounds at most (the second one is final, whatever its ratio)."""

_CONFIG = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class QueryRecord(BaseModel):
    """A query the session searched with."""

    model_config = _CONFIG

    query: str
    """The text sent to the search."""
    round: int
    """0 for the first research round, 1 after the first verification, ..."""
    attempt: int
    """1 for the enhanced query, 2 for the broadened one."""
    broadened: bool = False
    """Whether this is the broadened retry (any of the terms instead of all)."""
    purpose: Literal["topic", "gaps"] = "topic"
    """``topic`` for the user's topic, ``gaps`` for claims verification could not support."""
    method: Literal["rules", "llm"] = "rules"
    """Who wrote it."""


class DeepSource(SharedSource):
    """A web page or a passage of a local document that was retrieved in this session
    (the apps' shared ``Source``, with its ``S#`` id, where it is and the text retrieved).

    ``text`` is exactly what was retrieved: every quote is checked against it."""

    id: str
    """``S1``, ``S2``, ... in retrieval order; stable for the whole session."""
    kind: Literal["web", "file"]
    """A web page or a passage of a local file."""
    locator: str
    """The URL, or the file's path relative to the documents folder."""
    position: str | None = None
    """Where in the file: ``lines 10-24`` or ``page 3`` (files only)."""
    heading: str | None = None
    """The heading path the passage sits under, outermost first (files only), if any."""
    text: str
    """The retrieved text (page content or passage)."""
    snippet: str = ""
    """The search's query-focused extract (Tavily's ``content``) when ``text`` is the
    whole page; what relevance is judged on, with the title."""
    score: float = 0.0
    """The search's own relevance score (Tavily's score or BM25)."""
    similarity: float | None = None
    """How close the passage is in meaning to the question (cosine of the embedding model's
    vectors), when documents are searched with a model."""
    rank: int = 0
    """1-based position in its search's results."""
    query: str = ""
    """The query that retrieved it."""

    def cite(self) -> str:
        """``title — locator (position)`` for the Sources section."""
        where = f"{self.locator}, {self.position}" if self.position else self.locator
        return f"{self.title} — {where}" if self.title else where


class Relevance(BaseModel):
    """The relevance filter's verdict on one retrieved source."""

    model_config = _CONFIG

    source: str
    """The source's ``S#`` id."""
    score: float = Field(ge=0.0, le=1.0)
    """0-1; kept when at or above the filter's cut-off."""
    relevant: bool
    """Whether it was kept."""
    reason: str = ""
    """Why (term coverage and rank offline; Claude's reason with keys)."""


class QuotedFact(BaseModel):
    """One thing a source says, with the exact words it says it in (what the deep analysis
    of a source finds; a company report's facts are ``research_fsm.reports.ReportFact``)."""

    model_config = _CONFIG

    kind: Literal["step", "finding", "caveat"]
    """A step to take, a finding, or a caveat (breaking change, limitation, warning)."""
    statement: str
    """The fact in a sentence."""
    quote: str
    """Words copied verbatim from the source's text."""
    score: float = 0.0
    """How well it answers the question (offline rules; 0 when Claude found it)."""


class Analysis(BaseModel):
    """What the deep analysis of one source found (one parallel branch)."""

    model_config = _CONFIG

    source: str
    """The analysed source's ``S#`` id."""
    facts: list[QuotedFact] = Field(default_factory=list)
    """Its facts, each with a verbatim quote (quotes not found in the text are dropped)."""
    dropped: int = 0
    """Facts dropped because their quote is not in the source."""
    error: str | None = None
    """Why the analysis failed (the other branches' work stays)."""
    method: Literal["rules", "llm"] = "rules"
    """Who analysed it."""
    round: int = 0
    """The research round it was made in."""


class Claim(BaseModel):
    """One sentence or bullet of the draft, with the sources it cites."""

    model_config = _CONFIG

    id: str
    """``C1``, ``C2``, ... in draft order."""
    section: SectionName
    """Where it goes in the report."""
    text: str
    """The sentence, without its ``[S#]`` markers."""
    sources: list[str] = Field(default_factory=list)
    """The ``S#`` ids it cites."""


class Draft(BaseModel):
    """The synthesis: claims grouped by section."""

    model_config = _CONFIG

    claims: list[Claim] = Field(default_factory=list)
    """All claims in order."""
    method: Literal["rules", "llm"] = "rules"
    """Who wrote it."""

    def section(self, name: SectionName) -> list[Claim]:
        """The claims of one section, in order."""
        return [claim for claim in self.claims if claim.section == name]


class ClaimCheck(BaseModel):
    """Verification of one claim against the passage it cites."""

    model_config = _CONFIG

    claim: str
    """The claim's ``C#`` id."""
    text: str
    """The claim."""
    sources: list[str] = Field(default_factory=list)
    """What it cites."""
    supported: bool
    """Whether the evidence holds."""
    evidence: str | None = None
    """The supporting words, verbatim from ``source``'s text."""
    source: str | None = None
    """The cited source holding ``evidence``."""
    score: float = 0.0
    """Lexical support (share of the claim's terms in the evidence sentence), 0-1."""
    method: Literal["lexical", "quote"] = "lexical"
    """``lexical`` offline; ``quote`` when Claude proposed the evidence."""
    reason: str = ""
    """Why it is (not) supported."""


class Verification(BaseModel):
    """One verification round."""

    model_config = _CONFIG

    round: int
    """1 for the first round."""
    checks: list[ClaimCheck] = Field(default_factory=list)
    """One per claim."""
    threshold: float
    """The ratio the round had to reach."""

    @property
    def supported(self) -> int:
        """Claims supported."""
        return sum(1 for check in self.checks if check.supported)

    @property
    def total(self) -> int:
        """Claims checked."""
        return len(self.checks)

    @property
    def ratio(self) -> float:
        """Supported / checked (1.0 when there was nothing to check)."""
        return round(self.supported / self.total, 4) if self.checks else 1.0

    @property
    def passed(self) -> bool:
        """Whether the ratio reached the threshold."""
        return self.ratio >= self.threshold


class DeepState(BaseModel):
    """The deep-research graph's state (one thread per session)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    topic: str = ""
    """The topic as the user wrote it."""
    language: Language = "en"
    """The report's language."""
    formats: list[str] = Field(default_factory=lambda: ["md"])
    """``md`` and optionally ``pdf``."""
    mode: Mode = "docs"
    """Where sources come from."""
    docs: str | None = None
    """The documents folder (``docs`` mode)."""
    session_dir: str = ""
    """The session's folder of stage files."""
    top_k: int = DEFAULT_TOP_K
    """Sources analysed per round."""
    threshold: float = DEFAULT_THRESHOLD
    """Verification's supported-ratio threshold."""
    model: str | None = None
    """The LLM's model, or ``None`` offline."""
    models: dict[str, str] = Field(default_factory=dict)
    """The stages whose model is not ``model`` (``RESEARCH_FSM_MODEL_<AGENT>``) -> theirs."""
    queries: Annotated[list[QueryRecord], append] = Field(default_factory=list)
    """Every query searched with, in order."""
    terms: list[str] = Field(default_factory=list)
    """The topic's key terms (relevance is measured on them)."""
    weights: dict[str, float] = Field(default_factory=dict)
    """The question's salient terms' weights (inverse document frequency in the documents'
    index; empty: every term weighs 1)."""
    names: list[str] = Field(default_factory=list)
    """The question's terms that name a document of the folder (a product, a package)."""
    meaning: str | None = None
    """The embedding model the documents were also searched with (``None``: words alone);
    the rules then score passages and sentences by meaning too."""
    attempts: int = 0
    """Searches made in the current round."""
    searched_with: str = ""
    """The search's name (``TopicSearch.name``), shown under Methodology."""
    sources: Annotated[list[DeepSource], append] = Field(default_factory=list)
    """Every source retrieved, in ``S#`` order."""
    candidates: list[str] = Field(default_factory=list)
    """The ``S#`` ids the current round's searches found (relevance filter input)."""
    relevance: Annotated[list[Relevance], append] = Field(default_factory=list)
    """Every relevance verdict."""
    analyses: Annotated[list[Analysis], append] = Field(default_factory=list)
    """One per analysed source (parallel branches append in order)."""
    draft: Draft | None = None
    """The latest draft."""
    draft_round: int = -1
    """The research round the latest draft was written in."""
    verifications: Annotated[list[Verification], append] = Field(default_factory=list)
    """Every verification round."""
    gaps: list[str] = Field(default_factory=list)
    """Claims the last verification could not support (the next round searches for them)."""
    outcome: Literal["running", "ok", "no_sources", "no_relevant"] = "running"
    """``no_sources`` / ``no_relevant`` end the session with an honest report."""
    usage: Annotated[dict[str, Usage], add] = Field(default_factory=dict)
    """LLM usage per stage."""
    timings: Annotated[dict[str, float], add] = Field(default_factory=dict)
    """Seconds of work per stage, summed over rounds and, for ``deep_analysis``, over
    the parallel analyses (so more than the phase's wall time)."""
    notes: Annotated[list[str], append] = Field(default_factory=list)
    """What went wrong and how it was handled (shown under Methodology)."""
    started_at: str = Field(default_factory=utc_now)
    """When the session started."""
    files: list[str] = Field(default_factory=list)
    """The report files written."""

    @property
    def round(self) -> int:
        """The research round: 0, then 1 after the first verification, ..."""
        return len(self.verifications)

    def source(self, sid: str) -> DeepSource | None:
        """The source with id ``sid``."""
        for source in self.sources:
            if source.id == sid:
                return source
        return None


_RENAMED = {
    "Fact": (QuotedFact, "use research_fsm.deep.QuotedFact"),
    "Source": (DeepSource, "use research_fsm.deep.DeepSource"),
}
"""The models' former names in this module (deprecated)."""


def __getattr__(name: str) -> Any:
    return renamed(__name__, name, _RENAMED)
