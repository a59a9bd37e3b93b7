"""Tests of the shared data-source models, error and protocol."""

from __future__ import annotations

import pickle

import pytest
from pydantic import ValidationError

from research_fsm.sources import (
    INTENTS,
    DataSource,
    DataSourceError,
    DirectorySource,
    MockDataSource,
    ResearchFindings,
    SearchContext,
    SearchResult,
)


def test_intents_are_the_nine_documented_ones() -> None:
    """INTENTS lists the nine intents, overview first."""
    expected = (
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
    assert expected == INTENTS


@pytest.mark.parametrize(
    ("given", "expected"),
    [("news", "news"), (" Stock ", "stock"), ("weather", "overview"), ("", "overview")],
)
def test_search_context_normalises_intent(given: str, expected: str) -> None:
    """An intent is lower-cased and stripped; unknown or empty ones become overview."""
    assert expected == SearchContext(intent=given).intent


def test_search_context_rejects_attempt_zero() -> None:
    """Attempts start at 1."""
    with pytest.raises(ValidationError):
        SearchContext(attempt=0)


def test_search_result_rejects_confidence_above_ten() -> None:
    """Confidence is bounded to 0-10."""
    with pytest.raises(ValidationError):
        SearchResult(findings=None, confidence=11, source_name="x")


def test_populated_fields_lists_filled_text_fields_in_order() -> None:
    """populated_fields names the non-empty text fields in declaration order."""
    findings = ResearchFindings(company="X", products="P", stock_info="S", overview="")
    assert ["stock_info", "products"] == findings.populated_fields()


def test_data_source_error_keeps_its_attributes() -> None:
    """DataSourceError exposes message, source and retryable, and str() is the message."""
    error = DataSourceError("timed out", source="Tavily", retryable=True)
    assert ("timed out", "Tavily", True, "timed out") == (
        error.message,
        error.source,
        error.retryable,
        str(error),
    )


def test_data_source_error_survives_pickling() -> None:
    """A pickled DataSourceError comes back with the same attributes."""
    error = pickle.loads(pickle.dumps(DataSourceError("quota", source="S", retryable=False)))
    assert ("quota", "S", False) == (error.message, error.source, error.retryable)


def test_bundled_sources_implement_the_protocol() -> None:
    """The mock and the directory are DataSource instances at run time."""
    assert [True, True] == [
        isinstance(MockDataSource(), DataSource),
        isinstance(DirectorySource(), DataSource),
    ]
