"""Tests of CompanyIndex: resolving names and finding company mentions in text."""

from __future__ import annotations

import pytest

from research_fsm.sources import CompanyIndex, CompanyRef, MockDataSource
from research_fsm.sources._mock import MOCK_COMPANIES
from research_fsm.sources._profiles import load_profiles


@pytest.fixture(scope="module")
def index() -> CompanyIndex:
    """Mock companies first (their names win), then the whole directory."""
    mock_refs = [item.ref for item in MOCK_COMPANIES.values()]
    return CompanyIndex(mock_refs, [profile.to_ref() for profile in load_profiles()])


def names(index: CompanyIndex, text: str) -> list[str]:
    return [match.name for match in index.find_in_text(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Tell me about the company", []),
        ("what about their stock?", []),
        ("Now tell me about Tesla", ["Tesla, Inc."]),
        ("Compare them to Apple", ["Apple Inc."]),
        ("What's happening with Apple?", ["Apple Inc."]),
        ("what about NVDA", ["Nvidia"]),
        ("Tell me about Microsft", ["Microsoft Corporation"]),
        ("", []),
        ("   ", []),
        ("Are ON and IT good? ALL of them, NOW", []),
        ("I want a target price", []),
        ("What did Bill Gates say?", []),
        ("I like apples", []),
        ("Nevermind", []),
    ],
)
def test_find_in_text(index: CompanyIndex, text: str, expected: list[str]) -> None:
    """Questions of the design find exactly the companies they name."""
    assert expected == names(index, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("How is Target doing vs Best Buy?", ["Target Corporation", "Best Buy"]),
        ("Tell me about Deutsche Telekom AG", ["Deutsche Telekom"]),
        ("Is Coca Cola cheaper than PepsiCo?", ["The Coca-Cola Company", "PepsiCo"]),
        ("nestle and l'oreal", ["Nestlé SA", "L'Oréal"]),
        ("Apple's margins", ["Apple Inc."]),
        ("Should I buy Intel?", ["Intel"]),
        ("TELL ME ABOUT APPLE", ["Apple Inc."]),
        ("what about 7203.T?", ["Toyota"]),
        ("Amazon's shares or Google?", ["Amazon.com, Inc.", "Alphabet Inc. (Google)"]),
    ],
)
def test_find_names_in_various_forms(index: CompanyIndex, text: str, expected: list[str]) -> None:
    """Multi-word, hyphenated, accented, possessive, capitalised and typo'd names match."""
    assert expected == names(index, text)


def test_mentions_are_in_order_without_repeats(index: CompanyIndex) -> None:
    """Matches follow the text order and each company appears once."""
    text = "Apple vs Microsoft, and apple again, plus $msft and MSFT"
    assert ["Apple Inc.", "Microsoft Corporation"] == names(index, text)


def test_tickers_need_upper_case_dollar_or_a_names_place(index: CompanyIndex) -> None:
    """Tickers are "$aapl", "AAPL", or "aapl" where a name goes; a lower-case "aapl"
    elsewhere in a sentence is not."""
    assert [["Apple Inc."], ["Apple Inc."], ["Apple Inc."], []] == [
        names(index, "what about $aapl"),
        names(index, "what about AAPL"),
        names(index, "what about aapl"),
        names(index, "is aapl a word I should know"),
    ]


def test_short_typo_only_offers_the_company(index: CompanyIndex) -> None:
    """A one-letter typo in a five-letter name ("Amazn") is not answered: the company is
    offered, and the name as written is reported as matched too weakly."""
    found = index.find_names("Amazn or Google?")
    assert (["Alphabet Inc. (Google)"], ["Amazon.com, Inc."], "Amazn") == (
        found.companies,
        found.choices,
        found.weak,
    )


def test_match_reports_text_as_written_and_score(index: CompanyIndex) -> None:
    """A match gives the canonical name, the text as written and 1.0 or the typo ratio."""
    exact, typo = index.find_in_text("Coca Cola or Microsft")
    assert (("The Coca-Cola Company", "Coca Cola", 1.0), ("Microsoft Corporation", "Microsft")) == (
        (exact.name, exact.matched, exact.score),
        (typo.name, typo.matched),
    )
    assert 0.88 <= typo.score < 1.0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("apple", "Apple Inc."),
        ("Apple Inc.", "Apple Inc."),
        ("GOOG", "Alphabet Inc. (Google)"),
        ("google", "Alphabet Inc. (Google)"),
        ("msft", "Microsoft Corporation"),
        ("Acme", None),
        ("Microsft", None),
        ("on", None),
    ],
)
def test_resolve_is_exact(index: CompanyIndex, name: str, expected: str | None) -> None:
    """resolve matches exact names, aliases and tickers only; lower-case "on" is not ON."""
    ref = index.resolve(name)
    assert expected == (ref.name if ref else None)


def test_resolve_fuzzy_accepts_one_typo(index: CompanyIndex) -> None:
    """With fuzzy=True a one-typo name resolves, and the start of one company's name is
    that company: "Apple Hospitality" is the REIT, not Apple Inc."""
    typo = index.resolve("Microsft", fuzzy=True)
    phrase = index.resolve("Apple Hospitality", fuzzy=True)
    assert ("Microsoft Corporation", "Apple Hospitality REIT, Inc.") == (
        typo.name if typo else None,
        phrase.name if phrase else None,
    )


def test_sources_merge_without_duplicates(index: CompanyIndex) -> None:
    """Apple from the mock and from the directory is one entry with both tickers."""
    apples = [ref for ref in index.refs if "AAPL" in ref.tickers]
    assert [("Apple Inc.", ["AAPL", "APC.F", "FRA:APC", "NASDAQ:AAPL"])] == [
        (ref.name, ref.tickers) for ref in apples
    ]


def test_mock_and_directory_merge_to_directory_size(index: CompanyIndex) -> None:
    """The five mock companies all merge into their directory entries."""
    directory_only = CompanyIndex([profile.to_ref() for profile in load_profiles()])
    assert len(directory_only) == len(index)


def test_same_short_name_with_other_tickers_stays_separate() -> None:
    """Two share classes with disjoint tickers are two entries; the first owns the name."""
    index = CompanyIndex(
        [
            CompanyRef(name="Clearway Energy, Inc. (Class A)", tickers=["CWEN.A"]),
            CompanyRef(name="Clearway Energy, Inc. (Class C)", tickers=["CWEN"]),
        ]
    )
    ref = index.resolve("Clearway Energy")
    assert (2, "Clearway Energy, Inc. (Class A)") == (len(index), ref.name if ref else None)


def test_refs_are_copies() -> None:
    """Mutating a returned ref does not change the index."""
    index = CompanyIndex([CompanyRef(name="Widget Works Inc.", tickers=["WDGT"])])
    index.refs[0].aliases.append("Gadgets")
    assert (None, []) == (index.resolve("Gadgets"), index.refs[0].aliases)


async def test_from_sources_builds_from_companies() -> None:
    """from_sources indexes the companies the sources report."""
    index = await CompanyIndex.from_sources([MockDataSource()])
    assert ["Tesla, Inc."] == names(index, "and Tesla?")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("microsft", "Microsoft Corporation"),
        ("Amazn Inc.", None),
        ("version", None),
        ("Apple Hospitality", "Apple Hospitality REIT, Inc."),
        ("Acme Corp", None),
    ],
)
def test_resolve_fuzzy_cases(index: CompanyIndex, name: str, expected: str | None) -> None:
    """Fuzzy resolve takes one typo in a name of six letters or more (a five-letter one,
    "Amazn", is too little evidence), and the start of one company's name; never
    ordinary words."""
    ref = index.resolve(name, fuzzy=True)
    assert expected == (ref.name if ref else None)


def test_candidates_of_names_as_a_person_means_them() -> None:
    """candidates: a name, a ticker, a typo or the start of one company's name gives
    it alone; a short name or start shared by several gives them all; else none."""
    index = CompanyIndex(
        [
            CompanyRef(name="Mitsubishi Corporation", aliases=["Mitsubishi"], tickers=["8058.T"]),
            CompanyRef(name="Mitsubishi Motors", tickers=["7211.T"]),
            CompanyRef(name="Mitsubishi Electric", tickers=["6503.T"]),
            CompanyRef(name="Mitsubishi Estate", tickers=["8802.T"]),
            CompanyRef(name="Apple Inc.", aliases=["Apple"], tickers=["AAPL"]),
            CompanyRef(name="Apple Hospitality REIT, Inc.", tickers=["APLE"]),
            CompanyRef(name="Delta Air Lines", tickers=["DAL"]),
            CompanyRef(name="Nvidia", tickers=["NVDA"]),
        ]
    )
    found = {
        text: [ref.name for ref in index.candidates(text)]
        for text in (
            "Mitsubishi",
            "mitsubishi electric",
            "Apple",
            "delta",
            "nvidea",
            "aapl",
            "Acme",
        )
    }
    assert {
        "Mitsubishi": [
            "Mitsubishi Corporation",
            "Mitsubishi Motors",
            "Mitsubishi Electric",
            "Mitsubishi Estate",
        ],
        "mitsubishi electric": ["Mitsubishi Electric"],
        "Apple": ["Apple Inc."],
        "delta": ["Delta Air Lines"],
        "nvidea": ["Nvidia"],
        "aapl": ["Apple Inc."],
        "Acme": [],
    } == found
