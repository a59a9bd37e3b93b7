"""Tests of create_data_source: kinds, the environment variable and errors."""

from __future__ import annotations

import pytest

from research_fsm.sources import DirectorySource, MockDataSource, create_data_source


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("mock", MockDataSource), ("directory", DirectorySource), ("auto", DirectorySource)],
)
def test_explicit_kind(kind: str, expected: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind builds its source; "auto" without a Tavily key is the directory."""
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert expected is type(create_data_source(kind))


def test_no_kind_and_no_env_is_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without argument nor RESEARCH_DATA_SOURCE the directory is used."""
    monkeypatch.delenv("RESEARCH_DATA_SOURCE", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert DirectorySource is type(create_data_source())


def test_env_chooses_the_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """RESEARCH_DATA_SOURCE is read, case-insensitively, when no kind is given."""
    monkeypatch.setenv("RESEARCH_DATA_SOURCE", " Mock ")
    assert MockDataSource is type(create_data_source())


def test_argument_wins_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """An explicit kind overrides the environment."""
    monkeypatch.setenv("RESEARCH_DATA_SOURCE", "mock")
    assert DirectorySource is type(create_data_source("directory"))


def test_unknown_kind_names_value_and_allowed() -> None:
    """An unknown kind raises ValueError naming it and the allowed values."""
    with pytest.raises(ValueError) as caught:
        create_data_source("bogus")
    expected = "unknown data source 'bogus'; allowed values: 'auto', 'directory', 'mock', 'tavily'"
    assert expected == str(caught.value)


def test_unknown_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad RESEARCH_DATA_SOURCE is reported as such."""
    monkeypatch.setenv("RESEARCH_DATA_SOURCE", "bogus")
    with pytest.raises(ValueError, match=r"unknown RESEARCH_DATA_SOURCE value 'bogus'"):
        create_data_source()
