"""Company profiles from the data bundled with ``pytickersymbols`` (MIT licence).

``pytickersymbols`` ships its data as a Python module (``indices_data.INDICES``):
the constituents of about twenty stock indices, with Wikipedia infobox metadata.
Nothing is downloaded. Loading takes a few tens of milliseconds and is done
once, from a worker thread (see ``_directory``).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._format import split_people_names, split_products, strip_wiki_residue
from ._ref import CompanyRef
from ._text import short_name

BRAND_ALIASES: Final[dict[str, tuple[str, ...]]] = {
    "Alphabet Inc.": ("Google",),
    "Meta Platforms": ("Facebook", "Instagram", "WhatsApp"),
    "The Walt Disney Company": ("Disney",),
    "Berkshire Hathaway": ("Berkshire",),
    "The Coca-Cola Company": ("Coca-Cola", "Coke"),
    "Fast Retailing": ("Uniqlo",),
}
"""Well-known brand names the data lacks, used for name lookup only."""

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

    def to_ref(self) -> CompanyRef:
        """The name-resolution view of this profile."""
        aliases = [short_name(self.name), *BRAND_ALIASES.get(self.name, ())]
        aliases = [alias for alias in dict.fromkeys(aliases) if alias and alias != self.name]
        listed = [item.google for item in self.listings if item.google and ":" in item.google]
        tickers = list(dict.fromkeys([*self.tickers, *listed]))
        return CompanyRef(name=self.name, aliases=aliases, tickers=tickers)


def _merge_record(target: dict[str, Any], record: dict[str, Any], index: str) -> None:
    """Fold another index's record of the same company into ``target``."""
    target["indices"].append(index)
    if record.get("symbol"):
        target["symbols_primary"].append(record["symbol"])
    for key in ("industries", "isins", "listings"):
        source_key = "symbols" if key == "listings" else key
        for item in record.get(source_key) or []:
            if item not in target[key]:
                target[key].append(item)
    for key, value in (record.get("metadata") or {}).items():
        target["metadata"].setdefault(key, value)
    if not target.get("country") and record.get("country"):
        target["country"] = record["country"]


def load_profiles() -> list[CompanyProfile]:
    """Read every company of the data ``pytickersymbols`` bundles (blocking), each
    field checked and repaired or dropped (see ``_clean``)."""
    from ._clean import DirectoryCheck  # _clean builds on this module

    raw = load_raw_profiles()
    check = DirectoryCheck(raw)
    return [check.clean(profile) for profile in raw]


def _symbol_base(record: dict[str, Any]) -> str:
    return str(record.get("symbol") or "").split(".")[0].upper()


def _symbol_bases(record: dict[str, Any]) -> set[str]:
    """The tickers of a record (its symbol and listings), without exchange suffixes."""
    symbols = [
        record.get("symbol"),
        *((item or {}).get("yahoo") for item in record.get("symbols") or []),
    ]
    return {str(symbol).split(".")[0].upper() for symbol in symbols if symbol}


def _foreign_symbols(records: list[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    """(name, symbol base) of the records that are another company's under this name:
    the record's Wikipedia article is another company's ("SES S.A." holding Smiths
    Group's, ticker SMIN), and so is every record of the name with the same ticker."""
    from ._clean import record_matches_name  # _clean builds on this module

    foreign: set[tuple[str, str]] = set()
    for _, record in records:
        url = (record.get("metadata") or {}).get("wikipedia_url")
        name = str(record.get("name") or "").strip()
        if not record_matches_name(name, url):
            foreign.update((name, base) for base in _symbol_bases(record))
    return foreign


def load_raw_profiles() -> list[CompanyProfile]:
    """Every company of the data as bundled, unchecked (blocking); a record that is
    another company's under this name keeps only its index membership."""
    module: Any = importlib.import_module("pytickersymbols")
    data = module.PyTickerSymbols()
    records = [
        (str(index), record)
        for index in data.get_all_indices()
        for record in data.get_stocks_by_index(index)
    ]
    foreign = _foreign_symbols(records)
    merged: dict[str, dict[str, Any]] = {}
    for index, record in records:
        name = str(record.get("name") or "").strip()
        if not name:
            continue
        if (name, _symbol_base(record)) in foreign:
            record = {"name": name}
        target = merged.setdefault(
            name,
            {
                "name": name,
                "symbols_primary": [],
                "country": None,
                "industries": [],
                "listings": [],
                "metadata": {},
                "isins": [],
                "indices": [],
            },
        )
        _merge_record(target, record, index)
    return [CompanyProfile.model_validate(item) for item in merged.values()]
