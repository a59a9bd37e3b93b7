"""Company profiles from the data bundled with ``pytickersymbols`` (MIT licence).

``pytickersymbols`` ships its data as a Python module (``indices_data.INDICES``):
the constituents of about twenty stock indices, with Wikipedia infobox metadata.
Nothing is downloaded. Loading takes a few tens of milliseconds and is done
once, from a worker thread (see ``_directory``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
import secrets
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from .._home import default_home
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
    field checked and repaired or dropped (see ``_clean``).

    The checked profiles are kept in ``$RESEARCH_FSM_HOME/cache`` under a key of the
    data's version and this package's code, so later processes read them instead of
    checking 1,800 profiles again; a cache that is missing, damaged or unwritable is
    only rebuilt (or skipped), never an error."""
    from ._clean import DirectoryCheck  # _clean builds on this module

    path = _cache_path()
    if path is not None:
        try:
            return _PROFILES.validate_json(path.read_bytes())
        except (OSError, ValueError):
            pass  # not there yet, or damaged: checked again below and rewritten
    raw = load_raw_profiles()
    check = DirectoryCheck(raw)
    profiles = [check.clean(profile) for profile in raw]
    if path is not None:
        _write_cache(path, _PROFILES.dump_json(profiles))
    return profiles


_PROFILES: Final = TypeAdapter(list[CompanyProfile])


def _cache_path() -> Path | None:
    """Where the checked profiles are kept: named by the data's version and a digest of
    this package's code (a change to either makes a new file)."""
    try:
        version = metadata.version("pytickersymbols")
    except metadata.PackageNotFoundError:
        return None
    digest = hashlib.sha256(version.encode())
    here = Path(__file__).parent
    try:
        for source in sorted(here.glob("*.py")):
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
    except OSError:
        return None
    return default_home() / "cache" / f"directory-{digest.hexdigest()[:20]}.json"


def _write_cache(path: Path, data: bytes) -> None:
    """``data`` to ``path``, owner-only, all or nothing; a folder that cannot take it
    leaves the directory uncached, nothing else."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


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
