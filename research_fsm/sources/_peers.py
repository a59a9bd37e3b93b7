"""Competitors and peers offline: the directory's companies of the same industry and
sector, ranked by revenue.

A label such as "Conglomerate" or "Retail" spans sectors (Amazon and Sony are both
"Conglomerate"); a peer must also be of the company's economic sector, read from the
TRBC sector labels the index records carry or, for a company without one, from the
sector its industry labels carry across the directory.

``PeerIndex(profiles).rank("Nvidia")`` gives a ``PeerRanking``: the industry chosen,
the peers in revenue order and the company's position ("3rd of 14 companies
classified as Semiconductors in the directory by revenue"). ``DirectorySource.peers``
is the async entry point over the bundled directory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ._clean import GICS_SECTORS, TRBC_SECTORS
from ._format import Money, format_money, parse_money
from ._profiles import CompanyProfile

__all__ = ["USD_RATES", "Peer", "PeerIndex", "PeerRanking", "ordinal", "sectors"]

MIN_GROUP: Final = 4
"""Smallest industry group (the company included) worth ranking in."""

USD_RATES: Final[dict[str, float]] = {
    "US$": 1.0,
    "€": 1.08,
    "£": 1.27,
    "¥": 0.0067,
    "CHF": 1.13,
    "SEK": 0.095,
    "NOK": 0.093,
    "DKK": 0.145,
    "₹": 0.012,
    "₩": 0.00073,
    "A$": 0.66,
    "C$": 0.73,
    "HK$": 0.128,
    "R$": 0.18,
    "₽": 0.011,
}
"""Approximate US$ per unit, used only to order revenues in different currencies
(the revenues shown are the profiles' own figures)."""


def ordinal(number: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


@dataclass(frozen=True, slots=True)
class Peer:
    """One company of an industry group."""

    name: str
    """Canonical name."""
    revenue: str | None
    """Revenue as the profile gives it (money tidied), e.g. ``"US$215.9 billion (FY26)"``."""
    revenue_usd: float | None
    """Revenue in US$ (converted at ``USD_RATES`` when needed), for ordering only."""


@dataclass(frozen=True, slots=True)
class PeerRanking:
    """A company among the directory's companies of its industry."""

    company: str
    """The company ranked."""
    industry: str
    """The industry classification shared, as written in the data."""
    ranked: list[Peer]
    """Companies of the industry with a revenue figure, largest first (the company included)."""
    unranked: list[str] = field(default_factory=list)
    """Companies of the industry without a revenue figure."""

    @property
    def position(self) -> int | None:
        """The company's 1-based place by revenue, or ``None`` without a revenue figure."""
        for place, peer in enumerate(self.ranked, start=1):
            if peer.name == self.company:
                return place
        return None

    @property
    def peers(self) -> list[Peer]:
        """The other companies, largest revenue first."""
        return [peer for peer in self.ranked if peer.name != self.company]

    def sentence(self) -> str:
        """E.g. "Nvidia is 3rd of 14 companies classified as Semiconductors in the
        directory by revenue." """
        total = len(self.ranked)
        where = f"companies classified as {self.industry} in the directory"
        if self.position is None:
            return (
                f"{self.company} has no revenue figure in the directory, so it is not ranked "
                f"among the {total} {where} that have one."
            )
        return f"{self.company} is {ordinal(self.position)} of {total} {where} by revenue."

    def describe(self, limit: int = 5) -> str:
        """The ranking as text: the position sentence, then the largest peers."""
        lines = [self.sentence()]
        for peer in self.peers[:limit]:
            lines.append(f"- {peer.name}: revenue {peer.revenue}")
        more = len(self.peers) - limit
        if more > 0:
            lines.append(f"(and {more} more)")
        if len(self.unranked) == 1:
            lines.append("(1 other of the industry has no revenue figure)")
        elif self.unranked:
            lines.append(f"({len(self.unranked)} others of the industry have no revenue figure)")
        return "\n".join(lines)


SECTOR_VOTES: Final = 3
"""Companies with a sector that must carry a label before it tells the sector."""

SECTOR_SHARE: Final = 0.6
"""Share of those companies that must agree on the sector."""


def sectors(profiles: Iterable[CompanyProfile]) -> dict[str, str | None]:
    """Each company's TRBC economic sector: its own sector label; else the one its GICS
    sector agrees with; else the sector most companies sharing its labels have (when
    ``SECTOR_SHARE`` of at least ``SECTOR_VOTES`` agree); else ``None``."""
    profiles = list(profiles)
    votes: dict[str, Counter[str]] = {}
    for profile in profiles:
        own = set(profile.industries) & TRBC_SECTORS
        if len(own) == 1:
            for label in set(profile.industries) - TRBC_SECTORS:
                votes.setdefault(label, Counter()).update(own)
    result: dict[str, str | None] = {}
    for profile in profiles:
        labels = set(profile.industries)
        own = labels & TRBC_SECTORS
        gics = {s for label in labels & GICS_SECTORS.keys() for s in GICS_SECTORS[label]}
        if len(own) == 1:
            result[profile.name] = next(iter(own))
            continue
        if own and gics and len(own & gics) == 1:
            result[profile.name] = next(iter(own & gics))
            continue
        tally: dict[str, float] = {}
        for label in labels:
            counts = votes.get(label)
            if counts and sum(counts.values()) >= SECTOR_VOTES:
                sector, n = counts.most_common(1)[0]
                share = n / sum(counts.values())
                if share >= SECTOR_SHARE:
                    # a label whose companies agree more weighs more
                    tally[sector] = tally.get(sector, 0.0) + 1 + share
        if len(gics) == 1 and not tally:
            tally = dict.fromkeys(gics, 1.0)
        best = sorted(tally.items(), key=lambda item: -item[1])[:2]
        result[profile.name] = (
            best[0][0] if best and (len(best) == 1 or best[0][1] > best[1][1]) else None
        )
    return result


def _revenue(profile: CompanyProfile) -> tuple[str | None, float | None]:
    text = profile.metadata.revenue
    money: Money | None = parse_money(text)
    if text is None or money is None or money.currency not in USD_RATES:
        return None, None
    return format_money(" ".join(text.split())), money.amount * USD_RATES[money.currency]


class PeerIndex:
    """Companies grouped by industry classification, with their revenues."""

    def __init__(self, profiles: Iterable[CompanyProfile]) -> None:
        """Group ``profiles`` by each of their industries (case-insensitively)."""
        profiles = list(profiles)
        self._sector = sectors(profiles)
        self._industries: dict[str, list[str]] = {}
        self._groups: dict[str, list[str]] = {}
        self._labels: dict[str, str] = {}
        self._revenue: dict[str, tuple[str | None, float | None]] = {}
        for profile in profiles:
            self._revenue[profile.name] = _revenue(profile)
            keys = []
            for label in profile.industries:
                key = " ".join(label.lower().split())
                if key and key not in keys:
                    keys.append(key)
                    self._labels.setdefault(key, " ".join(label.split()))
                    self._groups.setdefault(key, []).append(profile.name)
            self._industries[profile.name] = keys

    def sector_of(self, company: str) -> str | None:
        """The company's economic sector, if the data tells it."""
        return self._sector.get(company)

    def _members(self, key: str, company: str) -> list[str]:
        """The companies of industry ``key`` that may be ``company``'s peers: of its
        sector, or of an unknown one."""
        mine = self._sector.get(company)
        return [
            name
            for name in self._groups[key]
            if mine is None or self._sector.get(name) in (None, mine)
        ]

    def industry_of(self, company: str) -> str | None:
        """The most specific industry ``company`` shares with at least ``MIN_GROUP`` - 1
        others of its sector (the smallest such group), else its largest group; ``None``
        if it has none."""
        keys = self._industries.get(company) or []
        if not keys:
            return None
        sizes = {key: len(self._members(key, company)) for key in keys}
        big_enough = [key for key in keys if sizes[key] >= MIN_GROUP]
        if big_enough:
            return min(big_enough, key=lambda key: (sizes[key], keys.index(key)))
        return max(keys, key=lambda key: (sizes[key], -keys.index(key)))

    def rank(self, company: str) -> PeerRanking | None:
        """``company`` among the companies of its industry and sector, by revenue;
        ``None`` when the company is unknown or shares no industry with another company."""
        key = self.industry_of(company)
        if key is None:
            return None
        members = self._members(key, company)
        if len(members) < 2:
            return None
        ranked, unranked = [], []
        for name in members:
            text, usd = self._revenue[name]
            if usd is None:
                unranked.append(name)
            else:
                ranked.append(Peer(name, text, usd))
        ranked.sort(key=lambda peer: (-(peer.revenue_usd or 0.0), peer.name))
        return PeerRanking(company, self._labels[key], ranked, sorted(unranked))
