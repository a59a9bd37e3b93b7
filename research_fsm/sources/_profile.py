"""A company's profile as the bundled directory gives it (``CompanyProfile``), and the
repairs every profile value gets (``clean_value``, ``clean_founded``, ``split_people``).

``_clean`` checks the profiles against the whole directory and ``_profiles`` loads
them; both build on this module.
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._format import split_people_names, split_products, strip_wiki_residue
from ._ref import CompanyRef
from ._text import short_name

__all__ = [
    "BRAND_ALIASES",
    "CompanyProfile",
    "Listing",
    "ProfileMetadata",
    "clean_founded",
    "clean_value",
    "split_people",
]

BRAND_ALIASES: Final[dict[str, tuple[str, ...]]] = {
    "Alphabet Inc.": ("Google",),
    "Meta Platforms": ("Facebook", "Instagram", "WhatsApp"),
    "The Walt Disney Company": ("Disney",),
    "Berkshire Hathaway": ("Berkshire",),
    "The Coca-Cola Company": ("Coca-Cola", "Coke"),
    "Fast Retailing": ("Uniqlo",),
}
"""Well-known brand names the data lacks, used for name lookup only."""

_FORMER_NAME_RE: Final = re.compile(r"\(\s*as\s+((?:the\s+)?[A-Z][^(),;]*?)\s*\)")
_YEARS_AGO_RE: Final = re.compile(r"\s*[;,]?\s*\(?\s*\d+\s+years?\s+ago\s*\)?", re.IGNORECASE)
_ISO_DATE_RE: Final = re.compile(r"\(\s*\d{4}(?:-\d{2}){0,2}\s*\)")
_SPACE_BEFORE_RE: Final = re.compile(r"\s+([,;:)])")
_SPACE_AFTER_RE: Final = re.compile(r"\(\s+")
_PERSON_BREAK_RE: Final = re.compile(r"\)\s+(?=[A-Z])")
_DOMAIN_RE: Final = re.compile(r"(?:https?://)?(?:[a-z0-9-]+\.)+[a-z]{2,}(?:/\S*)?", re.IGNORECASE)


def clean_value(value: str) -> str:
    """Tidy a scraped infobox value without changing its facts: stray spaces
    around punctuation, repeated whitespace and wiki residue ("See §", "[1]") go."""
    text = strip_wiki_residue(value)
    text = _SPACE_BEFORE_RE.sub(r"\1", text)
    text = _SPACE_AFTER_RE.sub("(", text)
    return text.strip(" ,;")


def clean_founded(value: str) -> str:
    """``clean_value`` for a founding date, also dropping the stale "N years ago"
    and the ISO date Wikipedia repeats after it."""
    text = _YEARS_AGO_RE.sub("", value)
    return clean_value(_ISO_DATE_RE.sub("", text))


def split_people(value: str) -> str:
    """Separate the "Name (role)" entries of a key-people value with semicolons."""
    return _PERSON_BREAK_RE.sub("); ", clean_value(value))


class Listing(BaseModel):
    """One listing of a company's shares."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    yahoo: str | None = None
    """Yahoo Finance symbol, e.g. ``"AAPL"`` or ``"APC.F"``."""
    google: str | None = None
    """Google Finance symbol with exchange, e.g. ``"NASDAQ:AAPL"``."""
    currency: str | None = None
    """Trading currency, e.g. ``"USD"``."""


class ProfileMetadata(BaseModel):
    """Wikipedia infobox fields of a company, as scraped by ``pytickersymbols``."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="ignore")

    founded: str | None = None
    """Founding date and place."""
    founder: str | None = None
    """Founders, space-separated."""
    employees: str | None = None
    """Headcount with its year, e.g. ``"166,000 (2025)"``."""
    headquarters: str | None = None
    """Headquarters location."""
    website: str | None = None
    """Website as written in the infobox (not always a bare domain)."""
    company_type: str | None = None
    """Legal form, e.g. ``"Public"``."""
    traded_as: str | None = None
    """Exchanges and index memberships as written in the infobox."""
    key_people: str | None = None
    """Executives and board members with roles."""
    products: str | None = None
    """Main products and services."""
    revenue: str | None = None
    """Revenue with currency and year."""
    operating_income: str | None = None
    """Operating income with currency and year."""
    net_income: str | None = None
    """Net income with currency and year."""
    total_assets: str | None = None
    """Total assets with currency and year."""
    total_equity: str | None = None
    """Total equity with currency and year."""
    wikipedia_url: str | None = None
    """URL of the company's Wikipedia article."""

    @field_validator("*", mode="before")
    @classmethod
    def _to_text(cls, value: object) -> str | None:
        """Accept numbers (some years and headcounts are ints); empty means missing."""
        if value is None:
            return None
        text = str(value).strip()
        return text or None


class CompanyProfile(BaseModel):
    """A company of the directory, merged over all the indices it belongs to."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    """Name as in the data, e.g. ``"Apple Inc."`` or ``"Microsoft"``."""
    symbols_primary: list[str] = Field(default_factory=list)
    """The main Yahoo symbol of each index listing, first index first."""
    country: str | None = None
    """Country (for some US small caps, a city)."""
    industries: list[str] = Field(default_factory=list)
    """Industry classifications."""
    listings: list[Listing] = Field(default_factory=list)
    """All listings of the shares."""
    metadata: ProfileMetadata = Field(default_factory=ProfileMetadata)
    """Infobox metadata."""
    isins: list[str] = Field(default_factory=list)
    """ISINs of the shares."""
    indices: list[str] = Field(default_factory=list)
    """Indices the company is a constituent of, per ``pytickersymbols``."""
    checked: bool = False
    """Whether the fields were checked at load time (``_clean``): then founders and
    products are ``"; "``-separated lists, or one item as written."""

    def product_items(self) -> list[str]:
        """The products, one item each."""
        value = self.metadata.products
        if not value:
            return []
        return value.split("; ") if self.checked else split_products(value)

    def founder_names(self) -> list[str]:
        """The founders, one name each."""
        value = self.metadata.founder
        if not value:
            return []
        if not self.checked:
            return split_people_names(value)
        return re.split(r"; (?![^()]*\))", value)  # a note's own "; " stays in it

    @property
    def tickers(self) -> list[str]:
        """Primary symbols first, then the other Yahoo symbols, without repeats."""
        symbols = [*self.symbols_primary, *(item.yahoo for item in self.listings if item.yahoo)]
        return list(dict.fromkeys(symbols))

    @property
    def website_url(self) -> str | None:
        """The website as an ``https://`` URL, if the data holds a real domain."""
        website = (self.metadata.website or "").split()
        if not website or not _DOMAIN_RE.fullmatch(website[0]):
            return None
        url = website[0]
        return url if url.lower().startswith(("http://", "https://")) else f"https://{url}"

    @property
    def wikipedia_url(self) -> str | None:
        """The Wikipedia article URL, if the data holds one."""
        url = self.metadata.wikipedia_url or ""
        return url if url.startswith("https://") and ".wikipedia.org/wiki/" in url else None

    @property
    def former_names(self) -> list[str]:
        """The names the company was founded or known under, from its founding value's
        "(as Royal Dutch Shell)" notes: names of two words or more (one word, as "X.com"
        or "Fortis", may name another company today), never "(as a subsidiary of …)"."""
        names = []
        for match in _FORMER_NAME_RE.finditer(self.metadata.founded or ""):
            name = re.sub(r"\s+until\s+\d{4}$", "", match.group(1).removeprefix("the ")).strip()
            if name[:1].isupper() and 2 <= len(name.split()) <= 6 and name != self.name:
                names.append(name)
        return names

    def to_ref(self) -> CompanyRef:
        """The name-resolution view of this profile."""
        aliases = [short_name(self.name), *BRAND_ALIASES.get(self.name, ())]
        aliases = [alias for alias in dict.fromkeys(aliases) if alias and alias != self.name]
        listed = [item.google for item in self.listings if item.google and ":" in item.google]
        tickers = list(dict.fromkeys([*self.tickers, *listed]))
        return CompanyRef(
            name=self.name, aliases=aliases, former_names=self.former_names, tickers=tickers
        )
