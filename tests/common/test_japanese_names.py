"""Japanese company names: every Japanese company of the directory is reachable from a
katakana/kanji name, and names inside longer katakana words are not companies."""

from __future__ import annotations

import pytest

from research_fsm.common.names import JA_NAMES, find_companies
from research_fsm.sources import CompanyIndex, DirectorySource
from research_fsm.sources._profiles import load_profiles


@pytest.fixture(scope="module")
def index() -> CompanyIndex:
    """The directory's name index."""
    import asyncio

    return asyncio.run(DirectorySource().company_index())


def test_every_japanese_name_resolves(index: CompanyIndex) -> None:
    """Each entry of the table names a company the index knows."""
    assert [] == [key for key, name in JA_NAMES.items() if index.resolve(name) is None]


def test_every_japanese_company_of_the_directory_has_a_japanese_name(index: CompanyIndex) -> None:
    """All the directory's companies whose country is Japan are covered by the table."""
    covered = {ref.name for ref in (index.resolve(name) for name in JA_NAMES.values()) if ref}
    japanese = {profile.name for profile in load_profiles() if profile.country == "Japan"}
    assert set() == japanese - covered


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("アップルについて教えて", ["Apple Inc."]),
        ("ソニーグループの業績", ["Sony"]),
        ("KDDIの株価は？", ["KDDI"]),
        ("東急不動産と東急を比較して", ["Tokyu Land", "Tokyu Corporation"]),
        ("日本電気硝子の社長", ["Nippon Electric Glass"]),
        ("トヨタとホンダを比べて", ["Toyota", "Honda"]),
        ("リチウムイオン電池について", []),
        ("メタバースとは", []),
    ],
)
def test_japanese_names_in_questions(
    index: CompanyIndex, question: str, expected: list[str]
) -> None:
    """Longest name first, in order of appearance; no match inside a longer katakana word."""
    assert expected == find_companies(index, question)
