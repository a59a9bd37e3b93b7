"""Models and the protocol shared by every research data source."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ResearchError
from ._peers import PeerRanking
from ._ref import CompanyRef

INTENTS: Final[tuple[str, ...]] = (
    "overview",
    "news",
    "stock",
    "leadership",
    "products",
    "competitors",
    "comparison",
    "financials",
    "strategy",
)
"""What a user can ask about a company; ``SearchContext.intent`` is one of these."""

TOPICS: Final[tuple[str, ...]] = (
    "overview",
    "news",
    "share_price",
    "financials",
    "leadership",
    "products",
    "strategy",
    "competitors",
)
"""What findings can cover; an intent asks for some of these (see the intents of ``research_fsm.qa``)."""

DEFAULT_INTENT: Final[str] = "overview"
"""The intent used when none (or an unknown one) is given."""

_MODEL_CONFIG: Final = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class SourceRef(BaseModel):
    """A citable source behind some findings."""

    model_config = _MODEL_CONFIG

    title: str
    """Human-readable title, e.g. ``"Apple Inc. - Wikipedia"``."""
    url: str
    """Absolute URL of the source."""


class DataScope(BaseModel):
    """The limits of a source's data, stated once in an answer."""

    model_config = _MODEL_CONFIG

    source: str
    """How to name the source in a sentence, e.g. ``"the offline directory"``."""
    unavailable: list[str] = Field(default_factory=list)
    """``TOPICS`` the source never has (e.g. ``["news", "share_price"]``)."""
    hint: str | None = None
    """How to get what is unavailable, e.g. ``"set TAVILY_API_KEY for live data"``."""
    as_of: str | None = None
    """The data's age, e.g. ``"figures as of FY2025 from the bundled directory"``."""


class ResearchFindings(BaseModel):
    """What a data source found about one company; every text field is optional."""

    model_config = _MODEL_CONFIG

    company: str
    """Canonical company name, e.g. ``"Apple Inc."``."""
    recent_news: str | None = None
    """Recent news and events."""
    stock_info: str | None = None
    """Listings, share price, market cap and financial figures."""
    key_developments: str | None = None
    """Strategic developments (products launched, partnerships, milestones)."""
    overview: str | None = None
    """Industry, headquarters, founding, size and website."""
    key_people: str | None = None
    """Executives, board members and founders."""
    products: str | None = None
    """Main products and services."""
    competitors: str | None = None
    """Competitors or peers, e.g. the directory's companies of the same industry."""
    sources: list[SourceRef] = Field(default_factory=list)
    """Where the findings come from."""
    raw_data: dict[str, Any] = Field(default_factory=dict)
    """Source-specific raw data, for debugging and provenance."""
    facts: dict[str, str] = Field(default_factory=dict)
    """Single facts for side-by-side comparisons, keyed by ``FACT_KEYS`` (values as
    written in the source, e.g. ``{"revenue": "US$416 billion (2025)"}``)."""
    scope: DataScope | None = None
    """What the source cannot supply and how old its data is, for the answer to say."""

    def populated_fields(self) -> list[str]:
        """Return the names of the text fields that hold data, in declaration order."""
        return [name for name in FINDING_FIELDS if getattr(self, name)]


FINDING_FIELDS: Final[tuple[str, ...]] = (
    "recent_news",
    "stock_info",
    "key_developments",
    "overview",
    "key_people",
    "products",
    "competitors",
)
"""The optional text fields of ``ResearchFindings``."""

FACT_KEYS: Final[tuple[str, ...]] = (
    "revenue",
    "net_income",
    "employees",
    "headquarters",
    "founded",
    "ceo",
    "indices",
)
"""Keys of ``ResearchFindings.facts``, in the order a comparison table shows them."""


class SearchContext(BaseModel):
    """What the research agent asks a data source for, besides the company name."""

    model_config = _MODEL_CONFIG

    query: str = ""
    """The user's question, for relevance."""
    intent: str = DEFAULT_INTENT
    """One of ``INTENTS``; unknown or empty values are read as ``"overview"``."""
    feedback: str | None = None
    """Validator feedback from the previous attempt, if this is a retry."""
    attempt: int = Field(default=1, ge=1)
    """Research attempt number, starting at 1."""

    @field_validator("intent", mode="before")
    @classmethod
    def _normalise_intent(cls, value: object) -> str:
        """Lower-case the intent and map unknown values to the default."""
        text = str(value).strip().lower() if value is not None else ""
        return text if text in INTENTS else DEFAULT_INTENT


class SearchResult(BaseModel):
    """The answer of one data source to one search."""

    model_config = _MODEL_CONFIG

    findings: ResearchFindings | None
    """The findings, or ``None`` when the company was not found."""
    confidence: int = Field(ge=0, le=10)
    """The source's own confidence in the findings for the asked intent, 0-10."""
    source_name: str
    """``DataSource.name`` of the source that answered."""
    note: str | None = None
    """Remark for logs and the validator, e.g. ``"company not found in directory"``."""


class DataSourceError(ResearchError):
    """A data source failed to answer (network, quota, bad response...)."""

    def __init__(self, message: str, *, source: str, retryable: bool) -> None:
        """Create the error; ``retryable`` says whether trying again may help."""
        super().__init__(message)
        self.message: str = message
        """What went wrong."""
        self.source: str = source
        """Name of the failing data source."""
        self.retryable: bool = retryable
        """Whether retrying the same search may succeed."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Support pickling despite the keyword-only arguments."""
        rebuild = partial(type(self), source=self.source, retryable=self.retryable)
        return (rebuild, (self.message,))


@runtime_checkable
class DataSource(Protocol):
    """A pluggable source of company research data.

    ``search``, ``is_available`` and ``companies`` are required; ``reads_feedback``,
    ``describe`` and ``peers`` are optional: subclass ``DataSource`` to inherit their
    defaults (feedback read, no description matches, no peer ranking).
    """

    name: str
    """Human-readable name, reported as ``SearchResult.source_name``."""
    reads_feedback: bool = True
    """Whether a retry with validator feedback can change what ``search`` returns. A
    source that answers by name from fixed data (the directory) sets it to ``False``:
    asking it again returns the same findings, so no round is spent on it."""

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        """Research ``company``; raise ``DataSourceError`` when the source fails."""
        ...

    def is_available(self) -> bool:
        """Whether the source can be used (e.g. an API key is configured)."""
        ...

    async def companies(self) -> Sequence[CompanyRef]:
        """Companies this source knows by name (may be empty, e.g. web search)."""
        ...

    async def describe(self, text: str) -> list[str]:
        """Companies whose products or industries match a description ("the one that
        makes iphones"), best first: one name when one company clearly matches, else a
        few candidates. Default: none (the source cannot match descriptions)."""
        return []

    async def peers(self, company: str) -> PeerRanking | None:
        """``company`` among the source's companies of its industry, ranked by revenue.
        Default: ``None`` (the source cannot rank peers)."""
        return None
