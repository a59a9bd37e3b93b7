"""The name lookup's precision guard over the bundled directory: the start of a name and
a whole word beat a typo, English words are never typos, and weak or ambiguous matches
are offered rather than answered."""

from __future__ import annotations

import asyncio

import pytest

from research_fsm.sources import CompanyIndex, CompanyRef, DirectorySource, english_words
from research_fsm.sources._english import DATA_FILE, build_word_hashes


@pytest.fixture(scope="module")
def index() -> CompanyIndex:
    """The directory's index (built once for the module)."""
    return asyncio.run(DirectorySource().company_index())


@pytest.mark.parametrize(
    ("question", "company"),
    [
        ("exxon", "ExxonMobil"),
        ("Exxon Mobil", "ExxonMobil"),
        ("what about exxon's revenue?", "ExxonMobil"),
        ("nexon", "Nexon"),
        ("jp morgan ceo", "JPMorgan Chase"),
        ("mcdonalds", "McDonald's"),
        ("mc donalds", "McDonald's"),
        ("p&g", "Procter & Gamble"),
        ("tell me about j&j", "Johnson & Johnson"),
        ("tell me about pepsi", "PepsiCo"),
        ("NASDAQ:AAPL", "Apple Inc."),
        ("what about 7203.T?", "Toyota"),
        ("who runs micrsoft", "Microsoft"),
        ("tell me about getty reatly", "Getty Realty Corp."),
        ("How is Lockhed doing?", "Lockheed Martin"),
    ],
)
def test_names_as_typed_find_the_company(index: CompanyIndex, question: str, company: str) -> None:
    """Starts of names, split and joined forms, dropped punctuation, ampersand initials,
    tickers with an exchange and one typo in a long name find that one company."""
    found = index.find_names(question)
    assert ([company], []) == (found.companies, found.choices)


@pytest.mark.parametrize(
    "question",
    [
        "how do I bake bread",
        "is it going to rain",
        "best laptop under 1000",
        "explain quantum computing",
        "which laptop is best for students",
        "how do I brew beer at home",
        "the Amazon rainforest",
        "tell me about Mount Everest",
        "what's the weather like in London?",
    ],
)
def test_general_questions_name_no_company(index: CompanyIndex, question: str) -> None:
    """Ordinary words are never read as a typo of a name ("bread" is not Brady), nor as
    a name outside a name's place, nor inside another proper noun or a place's name."""
    found = index.find_names(question)
    assert ([], []) == (found.companies, found.choices)


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("spacex", "spacex"),
        ("tell me about Stripe", "Stripe"),
        ("what is Reliance Industries's revenue?", "Reliance Industries"),
        ("Compare Apple to Acme Corp", "Acme Corp"),
        ("Samsungについて教えて", "Samsung"),
        ("How is Koch Industries doing?", "Koch Industries"),
        ("how has Wayne Enterprises been performing?", "Wayne Enterprises"),
    ],
)
def test_names_outside_the_directory_are_reported(
    index: CompanyIndex, question: str, unknown: str
) -> None:
    """A name no company has is reported as written, to be said not listed."""
    assert [unknown] == index.find_names(question).unknown


def test_a_typo_of_only_a_names_start_is_offered_not_answered(index: CompanyIndex) -> None:
    """One letter from just the first word of a name ("Globex": "Globe" of Globe Life) is
    two guesses at once, so the company is offered, never answered; a typo of a whole
    name ("Nvidea") is still answered."""
    partial = index.find_names("How is Globex doing?")
    whole = index.find_names("How is Nvidea doing?")
    assert (([], ["Globe Life"]), (["Nvidia"], [])) == (
        (partial.companies, partial.choices),
        (whole.companies, whole.choices),
    )


def test_short_typo_and_shared_ticker_are_offered(index: CompanyIndex) -> None:
    """A typo in a five-letter name only offers the company; a ticker two companies list
    and a name that is one company's and another's ticker ask which."""
    short = index.find_names("tell me about Dyson")
    shared = index.find_names("APAM")
    both = index.find_names("tell me about HP")
    assert (
        ([], ["Tyson Foods"], "Dyson"),
        {"Artisan Partners", "Aperam"},
        {"HP Inc.", "Helmerich & Payne"},
    ) == (
        (short.companies, short.choices, short.weak),
        set(shared.choices),
        set(both.choices),
    )


def test_typo_ties_ask_which() -> None:
    """A typo one letter from two companies' names answers neither and offers both."""
    index = CompanyIndex(
        [
            CompanyRef(name="Brandex Holdings", tickers=["BRDX"]),
            CompanyRef(name="Grandex Group", tickers=["GRDX"]),
        ]
    )
    found = index.find_names("tell me about brandex and crandex")
    assert (["Brandex Holdings"], ["Brandex Holdings", "Grandex Group"]) == (
        found.companies,
        found.choices,
    )


def test_shipped_word_hashes_are_the_packages_words() -> None:
    """data/english.crc32 is rebuilt byte for byte from the english-words package's
    lower-case Webster's list, and answers for words and non-words."""
    pickle = pytest.importorskip("pickle")
    resources = pytest.importorskip("importlib.resources")
    pytest.importorskip("english_words")
    raw = resources.files("english_words").joinpath("data/web2_alpha_lower.pickle").read_bytes()
    shipped = resources.files("research_fsm.sources").joinpath(DATA_FILE).read_bytes()
    words = english_words()
    assert (True, True, False) == (
        build_word_hashes(pickle.loads(raw)) == shipped,
        "bread" in words,
        "exxon" in words,
    )


@pytest.mark.parametrize(
    ("question", "company"),
    [
        ("tell me about Royal Dutch Shell", "Shell plc"),
        ("Anglo-Persian Oil Company", "BP"),
        ("what was the Hughes Tool Company?", "Baker Hughes"),
    ],
)
def test_a_former_name_from_the_data_finds_the_company(
    index: CompanyIndex, question: str, company: str
) -> None:
    """A name of two words or more the company was founded as ("(as Royal Dutch Shell)" in its founding value) finds it."""
    found = index.find_names(question)
    assert ([company], []) == (found.companies, found.choices)


@pytest.mark.parametrize("question", ["tell me about Royal Mail", "Royal Mail's revenue?"])
def test_the_start_of_a_name_that_goes_on_otherwise_is_no_match(
    index: CompanyIndex, question: str
) -> None:
    """A name's first word followed by a capitalised word that does not carry on that name ("Royal Mail", not Royal Caribbean) names no listed company."""
    found = index.find_names(question)
    assert ([], []) == (found.companies, found.choices)
    assert found.unknown


def test_a_one_word_former_name_is_no_alias(index: CompanyIndex) -> None:
    """A one-word former name ("X.com", PayPal's) is left out: it may name another company today."""
    assert "PayPal" not in index.find_names("tell me about X.com").companies


def test_a_former_name_is_found_only_whole(index: CompanyIndex) -> None:
    """The first word of a former name ("Acme", of Cintas' "Acme Industrial Laundry Company") finds nothing."""
    assert "Cintas" not in index.find_names("Compare Apple to Acme Corp").companies
