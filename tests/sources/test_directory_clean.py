"""The bundled directory checked at load time: every company's fields have the shape
of their field, and the errors found in answers are repaired or dropped."""

from __future__ import annotations

import re

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import DirectorySource
from research_fsm.sources._directory import profile_findings
from research_fsm.sources._profiles import load_profiles

NAME_WORD = re.compile(r"[A-Z\u00c0-\u024f][\w.'\u2019-]*|[a-z]+['\u2019][A-Z][\w-]*")
PARTICLES = {"van", "der", "de", "den", "von", "da", "del", "di", "la", "le", "du", "dos", "das"}


def _not_a_name(name: str) -> bool:
    bare = re.sub(r"\([^()]*\)", " ", name).strip()
    if bare.rstrip(".") == "et al":
        return False
    words = bare.split()
    return not words or not all(w in PARTICLES or NAME_WORD.fullmatch(w) for w in words)


def _shape_problems(answer: dict[str, str | None], country: str | None) -> list[str]:
    problems = []
    if country and "," in country:
        problems.append(f"country {country!r}")
    overview = answer["overview"] or ""
    headquarters = re.search(r"^Headquarters: (.*)$", overview, re.M)
    if headquarters and re.search(r"°|\d+\.\d{3,}", headquarters.group(1)):
        problems.append(f"headquarters {headquarters.group(1)!r}")
    founders = re.search(r"^Founders: (.*)$", answer["key_people"] or "", re.M)
    for name in founders.group(1).split(", ") if founders else []:
        if _not_a_name(name):
            problems.append(f"founder {name!r}")
    items = (answer["products"] or "").split(", ") if answer["products"] else []
    if len({item.lower() for item in items}) < len(items):
        problems.append(f"products repeat {answer['products']!r}")
    if any(re.match(r"(list of|see)\b", item, re.I) for item in items):
        problems.append(f"products point elsewhere {answer['products']!r}")
    return problems


def test_every_bundled_company_has_the_shape_of_its_fields() -> None:
    """For every company of the directory: the country is no city, the headquarters has
    no map coordinates, the founders are names, the products neither repeat nor point
    to a list elsewhere."""
    problems = {}
    for profile in load_profiles():
        findings = profile_findings(profile)
        answer = {
            "overview": findings.overview,
            "key_people": findings.key_people,
            "products": findings.products,
        }
        found = _shape_problems(answer, profile.country)
        if found:
            problems[profile.name] = found
    assert {} == problems


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


async def test_amd_is_a_semiconductor_company_founded_by_jerry_sanders(
    offline: ResearchAssistant,
) -> None:
    """AMD's industry, founders and products read as the data means them, and its
    peers are chip makers, not airlines and Cintas."""
    text = (await offline.ask("Tell me about AMD", thread_id="t")).text
    assert (True, True, False, False, True) == (
        "**Founders:** Jerry Sanders\n" in text,
        "**Products**: AMD CPUs, AMD GPUs, AMD FPGAs" in text,
        "Professional & Commercial Services" in text,
        "Cintas" in text,
        "- Nvidia: revenue" in text,
    )


async def test_panasonic_headquarters_without_coordinates(offline: ResearchAssistant) -> None:
    """Panasonic's headquarters is a place, not a place and its map coordinates."""
    text = (await offline.ask("Tell me about Panasonic", thread_id="t")).text
    assert "**Headquarters:** Kadoma, Osaka, Japan\n" in text


async def test_nintendo_products_are_missing_not_list_of_products(
    offline: ResearchAssistant,
) -> None:
    """Nintendo's "List of products" is no product: the answer says products are missing."""
    text = (await offline.ask("What products does Nintendo make?", thread_id="t")).text
    assert (False, True) == (
        "List of products" in text,
        "I couldn't find product information for Nintendo in my sources." in text,
    )


async def test_no_peer_carries_another_company_record() -> None:
    """STABILUS SE's record holds STMicroelectronics' infobox: its figures are dropped,
    so it is ranked nowhere with STMicroelectronics' revenue."""
    ranking = await DirectorySource().peers("Nvidia")
    assert ranking is not None
    assert [] == [peer.name for peer in ranking.ranked if peer.name == "STABILUS SE"]


async def test_a_city_given_as_country(offline: ResearchAssistant) -> None:
    """Delta's country is given as "Atlanta, Georgia": the answer says the United States."""
    text = (await offline.ask("Tell me about Delta Air Lines", thread_id="t")).text
    assert "**Country:** United States\n" in text


async def test_the_issue_samples_read_right(offline: ResearchAssistant) -> None:
    """The glitches reported from answers: HSBC's page reference, Asahi's two years in
    one field, Siemens' date run into its place, Morgan Stanley's founders cut in the
    wrong place, a satellite operator among Siemens' peers, Amazon among Sony's."""
    hsbc = (await offline.ask("Tell me about HSBC", thread_id="h")).text
    asahi = (await offline.ask("Asahi Breweries revenue", thread_id="a")).text
    siemens = (await offline.ask("Tell me about Siemens", thread_id="s")).text
    morgan = (await offline.ask("Morgan Stanley founders", thread_id="m")).text
    sony = (await offline.ask("Sony competitors", thread_id="y")).text
    assert (True, False, True, True, True, False, False) == (
        "**Revenue:** US$64.424 billion (2025)\n" in hsbc,
        "(2025): 10" in hsbc,
        "**Revenue:** ¥2.939 trillion (2024)\n" in asahi,
        "**Founded:** 1 October 1847, Berlin, Kingdom of Prussia\n" in siemens,
        "**Founders:** Henry Sturgis Morgan, Harold Stanley\n" in morgan,
        "SES S.A." in siemens,
        "Amazon" in sony,
    )
