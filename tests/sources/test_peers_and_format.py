"""The peer lookup (industry peers ranked by revenue) and the display cleaning of
directory values: lists, money, wiki residue."""

from __future__ import annotations

import random
import re

import pytest

from research_fsm.sources import DirectorySource, SearchContext
from research_fsm.sources._directory import profile_findings
from research_fsm.sources._format import (
    fiscal_year,
    format_money,
    parse_money,
    split_people_names,
    split_products,
    strip_wiki_residue,
)
from research_fsm.sources._peers import PeerIndex, ordinal
from research_fsm.sources._profiles import CompanyProfile, load_profiles


def _profile(name: str, industry: str, revenue: str | None) -> CompanyProfile:
    return CompanyProfile.model_validate(
        {"name": name, "industries": [industry, "Everything"], "metadata": {"revenue": revenue}}
    )


def test_peers_are_ranked_by_revenue_across_currencies() -> None:
    """Peers of the most specific shared industry, largest revenue first (¥ converted)."""
    profiles = [
        _profile("Small", "Chips", "US$1 billion (2025)"),
        _profile("Big", "Chips", "¥ 3 trillion (2025)"),  # about US$20 billion
        _profile("Middle", "Chips", "€ 5 billion (2025)"),
        _profile("Unknown", "Chips", None),
        *(_profile(f"Other {i}", "Cars", "US$1 billion") for i in range(5)),
    ]
    ranking = PeerIndex(profiles).rank("Middle")
    assert ranking is not None
    assert ("Chips", ["Big", "Middle", "Small"], ["Unknown"], 2) == (
        ranking.industry,
        [peer.name for peer in ranking.ranked],
        ranking.unranked,
        ranking.position,
    )
    expected = "Middle is 2nd of 3 companies classified as Chips in the directory by revenue."
    assert expected == ranking.sentence()


def test_a_company_without_revenue_is_not_ranked() -> None:
    """Without a revenue figure the sentence says so instead of inventing a place."""
    profiles = [_profile(name, "Chips", "US$1 billion") for name in "ABC"]
    profiles.append(_profile("D", "Chips", None))
    ranking = PeerIndex(profiles).rank("D")
    assert ranking is not None
    assert (None, True) == (ranking.position, "has no revenue figure" in ranking.sentence())


@pytest.mark.parametrize(
    ("number", "expected"),
    [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (22, "22nd")],
)
def test_ordinal(number: int, expected: str) -> None:
    """English ordinals, teens included."""
    assert expected == ordinal(number)


async def test_directory_peers_public_lookup() -> None:
    """``DirectorySource.peers`` resolves any name and ranks within the directory."""
    ranking = await DirectorySource().peers("nvda")
    assert ranking is not None
    assert ("Nvidia", 1) == (ranking.company, ranking.position)
    assert all(
        (a.revenue_usd or 0) >= (b.revenue_usd or 0)
        for a, b in zip(ranking.ranked, ranking.ranked[1:], strict=False)
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "AirPods AirTag Apple TV Apple Vision Pro Apple Watch HomePod iPad iPhone Mac",
            [
                "AirPods",
                "AirTag",
                "Apple TV",
                "Apple Vision Pro",
                "Apple Watch",
                "HomePod",
                "iPad",
                "iPhone",
                "Mac",
            ],
        ),
        (
            "Cybertruck Megapack Model 3 Model S Model X Model Y Powerwall Semi Solar Panels Solar Roof",
            [
                "Cybertruck",
                "Megapack",
                "Model 3",
                "Model S",
                "Model X",
                "Model Y",
                "Powerwall",
                "Semi",
                "Solar Panels",
                "Solar Roof",
            ],
        ),
        (
            "Cloud computing Video games Internet",
            ["Cloud computing", "Video games", "Internet"],
        ),
        (
            "Steel, flat steel products, wire products",
            ["Steel", "flat steel products", "wire products"],
        ),
        ("See § Products", []),
    ],
)
def test_split_products(value: str, expected: list[str]) -> None:
    """Run-together product lists become items; commas are honoured; residue goes."""
    assert expected == split_products(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Steve Jobs Steve Wozniak Ronald Wayne", ["Steve Jobs", "Steve Wozniak", "Ronald Wayne"]),
        (
            "Martin Eberhard Marc Tarpenning (See § Founding )",
            ["Martin Eberhard", "Marc Tarpenning"],
        ),
        ("Arnout Schuijff Pieter van der Does", ["Arnout Schuijff", "Pieter van der Does"]),
        ("Gerard Adriaan Heineken", ["Gerard Adriaan Heineken"]),
        ("Bill Gates and Paul Allen", ["Bill Gates", "Paul Allen"]),
    ],
)
def test_split_people_names(value: str, expected: list[str]) -> None:
    """Founders joined by spaces become one entry per person."""
    assert expected == split_people_names(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("US$ 94.83 billion (2025)", "US$94.83 billion (2025)"),
        (
            "¥ 45.1 trillion ( US$ 410.89 billion) (2024)",
            "¥45.1 trillion (US$410.89 billion) (2024)",
        ),
        ("8.861 billion Euros (2024)", "€8.861 billion (2024)"),
        ("€1.7 billion (2021)", "€1.7 billion (2021)"),
    ],
)
def test_format_money(value: str, expected: str) -> None:
    """One money style: the symbol touches the figure; worded euros become €."""
    assert expected == format_money(value)


def test_parse_money_prefers_us_dollars() -> None:
    """A figure given in yen and dollars is read in dollars; years are not amounts."""
    money = parse_money("¥ 45.1 trillion ( US$ 410.89 billion) (2024)")
    assert money is not None
    assert ("US$", 410.89e9) == (money.currency, money.amount)
    assert parse_money("(2024)") is None


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("US$416 billion (2025)",), "FY2025"),
        (("US$215.9 billion (FY26)",), "FY2026"),
        ((None,), None),
    ],
)
def test_fiscal_year(texts: tuple[str | None, ...], expected: str | None) -> None:
    """The figures' year, as FY2025."""
    assert expected == fiscal_year(*texts)


def test_wiki_residue_is_removed() -> None:
    """ "See §" pointers and citation marks go; the facts stay."""
    assert "Martin Eberhard Marc Tarpenning 2004" == strip_wiki_residue(
        "Martin Eberhard Marc Tarpenning (See § Founding ) 2004[1][citation needed]"
    )


def _sample() -> list[CompanyProfile]:
    profiles = [p for p in load_profiles() if p.metadata.products or p.metadata.founder]
    return random.Random(14).sample(profiles, 50)


_WORD_RE = re.compile(r"[^\s,;]+")


def _words(text: str) -> list[str]:
    """The words of a text, punctuation at their ends ignored (a trailing "." of a list)."""
    stripped = (word.strip(".") for word in _WORD_RE.findall(text))
    return [word for word in stripped if word]


def _in_order(words: list[str], within: list[str]) -> bool:
    """Whether ``words`` occur in ``within`` in that order (others may come between)."""
    rest = iter(within)
    return all(word in rest for word in words)


_MONEY_GAP = re.compile(r"(US\$|€|£|¥)\s+\d")


@pytest.mark.parametrize("profile", _sample(), ids=lambda p: p.name)
def test_lists_and_money_on_random_companies(profile: CompanyProfile) -> None:
    """On 50 random companies: list fields render as separated items that keep every
    word of the source value in order (none lost, none added, none run together with
    the next item: the items re-join into the source), no wiki residue, and money
    always written "US$94.83 billion"."""
    findings = profile_findings(profile)
    data = profile.metadata
    if data.products and findings.products:
        items = findings.products.split(", ")
        assert _words(strip_wiki_residue(data.products)) == _words(" ".join(items))
        assert all(item.strip() == item and item for item in items)
    if data.founder and findings.key_people:
        line = next(li for li in findings.key_people.splitlines() if li.startswith("Founders: "))
        people = line.removeprefix("Founders: ").split(", ")
        source_words = _words(re.sub(r"\band\b|&", " ", strip_wiki_residue(data.founder)))
        shown = _words(" ".join(people))
        # every word in order; a family name shared ("Gerard and Anton Philips") repeats
        assert (True, set()) == (_in_order(source_words, shown), set(shown) - set(source_words))
        assert all(len(re.sub(r"\([^()]*\)", "", person).split()) <= 6 for person in people)
    text = "\n".join(
        value
        for value in (
            findings.overview,
            findings.stock_info,
            findings.key_people,
            findings.products,
        )
        if value
    )
    assert "§" not in text and not re.search(r"\[\d+\]", text)
    assert _MONEY_GAP.search(text) is None


async def test_stock_findings_have_no_run_together_traded_as() -> None:
    """The run-together "Traded as" line is gone; index memberships are listed."""
    result = await DirectorySource().search("Apple", SearchContext(intent="stock"))
    assert result.findings is not None and result.findings.stock_info is not None
    assert "Traded as" not in result.findings.stock_info
    assert "Index membership: DOW JONES, NASDAQ 100, S&P 100, S&P 500" in result.findings.stock_info
