"""``CompanyRef``: a company as a source knows it by name, the unit of name resolution."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CompanyRef(BaseModel):
    """A company a source knows by name, for name resolution."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    name: str
    """Canonical name, e.g. ``"Apple Inc."``."""
    aliases: list[str] = Field(default_factory=list)
    """Other names, e.g. ``["Apple"]`` or ``["Google"]``."""
    former_names: list[str] = Field(default_factory=list)
    """Names it was known by, found only when typed whole (never by their first words),
    e.g. ``["Royal Dutch Shell"]``."""
    tickers: list[str] = Field(default_factory=list)
    """Ticker symbols, primary listing first, e.g. ``["AAPL", "APC.F"]``."""
