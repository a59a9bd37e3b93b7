"""Cleaning the bundled directory at load time.

The Wikipedia-derived data ``pytickersymbols`` bundles has errors that would reach
answers and reports: a record carrying another company's infobox (STABILUS SE with
STMicroelectronics' figures), industry classifications of another company in some
index records (AMD under "Environmental Services & Equipment"), map coordinates in
headquarters, "Team led by" among founders, "List of products" as products, cities
as countries. Each field is checked against its shape and against the other fields;
what can be repaired is repaired, what cannot is dropped, so that the answer says the
field is missing instead of printing it. ``shape_problems`` is the check itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache
from typing import Final
from urllib.parse import unquote

from ._format import split_people_names, split_products, strip_wiki_residue
from ._people import NameModel
from ._profile import CompanyProfile, clean_founded, clean_value
from ._tidy import (
    balance_brackets,
    drop_page_refs,
    latest_figure,
    separate_runs,
    tidy_founded,
    tidy_key_people,
)

__all__ = [
    "MONEY_FIELDS",
    "UK_PLACES",
    "US_PLACES",
    "DirectoryCheck",
    "clean_country",
    "clean_figure",
    "clean_founded_text",
    "clean_founders",
    "clean_headquarters",
    "clean_products",
    "record_matches_name",
    "shape_problems",
]


US_PLACES: Final = frozenset(
    {
        "Alabama",
        "Alaska",
        "Arizona",
        "Arkansas",
        "California",
        "Colorado",
        "Connecticut",
        "Delaware",
        "Florida",
        "Georgia",
        "Hawaii",
        "Idaho",
        "Illinois",
        "Indiana",
        "Iowa",
        "Kansas",
        "Kentucky",
        "Louisiana",
        "Maine",
        "Maryland",
        "Massachusetts",
        "Michigan",
        "Minnesota",
        "Mississippi",
        "Missouri",
        "Montana",
        "Nebraska",
        "Nevada",
        "Ohio",
        "Oklahoma",
        "Oregon",
        "Pennsylvania",
        "Tennessee",
        "Texas",
        "Utah",
        "Vermont",
        "Virginia",
        "Washington",
        "Wisconsin",
        "Wyoming",
        "New Hampshire",
        "New Jersey",
        "New Mexico",
        "New York",
        "North Carolina",
        "North Dakota",
        "Rhode Island",
        "South Carolina",
        "South Dakota",
        "West Virginia",
        "District of Columbia",
        "D.C.",
        "U.S.",
        "US",
        "USA",
        "U.S.A.",
        "United States of America",
    }
)
"""The states of the United States and its abbreviations: a country given as "City,
State" or a headquarters ending in "U.S." is the United States."""

UK_PLACES: Final = frozenset({"England", "Scotland", "Wales", "Northern Ireland", "UK", "U.K."})
"""Places whose country is the United Kingdom."""

_COORDINATES_RE: Final = re.compile(
    r"\(?\s*-?\d{1,3}°[^A-Za-z]*?[NS]\W+-?\d{1,3}°[^A-Za-z]*?[EW]"
    r"(?:[\s\ufeff/]+-?\d+(?:\.\d+)?°[NS]\s+-?\d+(?:\.\d+)?°[EW])?"
    r"(?:[\s\ufeff/]+-?\d+(?:\.\d+)?\s*;\s*-?\d+(?:\.\d+)?)?\s*\)?"
)
_LEADING_NOTE_RE: Final = re.compile(r"^\s*(?:team\s+)?(?:led|founded|started)\s+by\s+", re.I)
_LIST_NOTE_RE: Final = re.compile(
    r"\(\s*(?:full list|list\b[^)]*|see [^)]*)\s*\)"
    r"|\blist of (?:[\w&.'-]+ )*?(?:products(?: and services)?|games)\b"
    r"|^\s*see\b.*$|\bproducts list\b|\|",
    re.I,
)
_NAME_WORD_RE: Final = re.compile(r"[A-Z\u00c0-\u024f][\w.'\u2019-]*|[a-z]+['\u2019][A-Z][\w-]*")
_PARTICLES: Final = frozenset(
    {"van", "der", "de", "den", "von", "da", "del", "di", "la", "le", "du", "dos", "das", "zu"}
)
_PARENTHESES_RE: Final = re.compile(r"\([^()]*\)")
_YEAR_RE: Final = re.compile(r"\b1[5-9]\d\d\b|\b20\d\d\b")
_NAME_STOPWORDS: Final = frozenset(
    {"the", "and", "of", "inc", "co", "corp", "company", "group", "plc", "ag", "se", "sa"}
)


MONEY_FIELDS: Final = ("revenue", "operating_income", "net_income", "total_assets", "total_equity")
"""The infobox fields that hold a money figure."""


@cache
def _office_end_re(countries: frozenset[str]) -> re.Pattern[str]:
    """A country that ends one office of several run together ("Venlo, Netherlands Hilden")."""
    names = sorted(countries | {"U.S.", "U.S", "UK", "United States"}, key=len, reverse=True)
    return re.compile(rf"(?<=, )({'|'.join(re.escape(name) for name in names)})(?= [A-Z])")


def clean_headquarters(value: str | None, countries: frozenset[str] = frozenset()) -> str | None:
    """The headquarters without map coordinates ("Kadoma, Osaka, Japan"), brackets
    paired, and several offices run together separated ("Venlo, Netherlands
    (corporate); Hilden, Germany (operational)"); ``countries`` end an office."""
    if not value:
        return None
    text = _COORDINATES_RE.sub(" ", value.replace("\ufeff", " "))
    text = re.sub(r"\s*,\s*(?:,\s*)+", ", ", text)
    text = balance_brackets(clean_value(text).strip(" ,;/"))
    text = re.sub(r"^\(([^()]*)\)$", r"\1", text)
    text = _office_end_re(countries).sub(r"\1;", text)
    text = separate_runs(text)
    return text if text and "°" not in text else None


def clean_figure(value: str | None, *, money: bool = True) -> str | None:
    """A money figure or headcount: page references and template brackets gone, the
    latest year's figure when the value lists several years; a money field keeps its
    own figure only (not a "Debt:" run into it), a headcount's figures are separated
    ("7,737 (non-consolidated); 15,468 (consolidated)", "18,378 in United States;
    5,350 in Japan")."""
    if not value:
        return None
    text = latest_figure(balance_brackets(drop_page_refs(clean_value(value))))
    text = separate_runs(text)
    if money:
        text = re.split(r";\s*(?=[A-Z][\w ]{0,30}:)", text)[0]
    else:
        text = re.sub(r"(?<=\d)\s+(?=[a-z][\w-]*:)", "; ", text)
        text = re.sub(r"(?<=[a-z])\s+(?=\d{1,3}(?:,\d{3})+\b)", "; ", text)
    return balance_brackets(text) or None


def clean_founded_text(value: str | None) -> str | None:
    """The founding value as a list of dated events that reads (see ``tidy_founded``)."""
    if not value:
        return None
    return balance_brackets(tidy_founded(clean_founded(value))) or None


def _person_shaped(name: str) -> bool:
    """Whether ``name`` reads as a person's or an organisation's name: capitalised
    words, initials and name particles ("Alex d'Arbeloff", "Henri Nestlé (for ...)")."""
    bare = _PARENTHESES_RE.sub(" ", name).strip()
    if bare.lower().rstrip(".") == "et al":
        return True
    words = bare.split()
    if not words or "(" in bare or ")" in bare:
        return False
    return all(word.lower() in _PARTICLES or _NAME_WORD_RE.fullmatch(word) for word in words)


def clean_founders(
    value: str | None, names_model: NameModel | None = None, company: str = ""
) -> str | None:
    """The founders, ``"; "``-separated, or ``None`` when they are not names.

    "Team led by Jerry Sanders" -> "Jerry Sanders"; a value with dates or phrases
    ("May 2019", "Government of Italy Enrico Mattei, first CEO") is dropped. With
    ``names_model`` (learnt from the directory) names run together are told apart by
    it ("Henry Sturgis Morgan; Harold Stanley" for ``company`` Morgan Stanley), else
    as given name + family name.
    """
    if not value:
        return None
    text = _LEADING_NOTE_RE.sub("", strip_wiki_residue(value))
    if re.search(r"\byears? ago\b|^named after\b", text, re.I):
        return None
    found = names_model.split(text, company) if names_model else split_people_names(text)
    names = [balance_brackets(clean_value(name)) for name in found]
    # a comma inside a note would read as the end of a name in "A, B, C"
    names = [re.sub(r"\([^()]*\)", lambda m: m.group().replace(",", ";"), n) for n in names]
    names = [name for name in names if name]
    if not names or not all(_person_shaped(name) for name in names):
        return None
    return "; ".join(names)


def _brand_split(text: str, company: str) -> str:
    """ "AMD CPUs AMD GPUs AMD FPGAs" -> "AMD CPUs; AMD GPUs; AMD FPGAs": a list that
    starts with the company's name, which comes back, starts an item at each."""
    if re.search(r"[,;]", text):
        return text
    words = text.split()
    brand = company.split()[0] if company.split() else ""
    if len(words) < 3 or words[0] != brand or words.count(brand) < 2:
        return text
    items: list[list[str]] = []
    for word in words:
        if word == words[0] or not items:
            items.append([word])
        else:
            items[-1].append(word)
    return "; ".join(" ".join(item) for item in items)


def clean_products(value: str | None, company: str = "") -> str | None:
    """The products, ``"; "``-separated; as written (one item) when the items cannot
    be told apart; ``None`` when the value only points elsewhere ("List of products",
    "See below")."""
    if not value:
        return None
    text = " ".join(_LIST_NOTE_RE.sub(" ", strip_wiki_residue(value)).split()).strip(" ,;:")
    if not text:
        return None
    items = [clean_value(item) for item in split_products(_brand_split(text, company))]
    items = [item for item in items if item]
    if re.search(r"[,;]", text):  # items the infobox separated: a repeat is a repeat
        unique: dict[str, str] = {}
        for item in items:
            unique.setdefault(item.lower(), item)
        items = list(unique.values())
    keys = [item.lower() for item in items]
    broken = any(
        item.endswith(("&", " and", ":", "(", "+"))
        or item.startswith((")", "("))
        or item.count("(") != item.count(")")
        or len(item) < 2
        for item in items
    )
    if not items or broken or len(set(keys)) < len(keys):
        return clean_value(text.replace(";", ","))  # the items cannot be told apart: as written
    return "; ".join(items)


def clean_country(country: str | None, headquarters: str | None, countries: set[str]) -> str | None:
    """The country, a country: when the data gives a city ("Atlanta, Georgia"), the
    country named last in the headquarters, or the United States for a US state."""
    if not country:
        return None
    if "," not in country and country in countries:
        return country
    places = [part.rsplit(",", 1)[-1].strip() for part in (headquarters or "", country)]
    for place in places:
        if place in countries:
            return place
    if any(place in US_PLACES for place in places):
        return "United States"
    if any(place in UK_PLACES for place in places):
        return "United Kingdom"
    return None


def _ascii_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", folded)


def record_matches_name(name: str, wikipedia_url: str | None) -> bool:
    """Whether the infobox of ``wikipedia_url`` is about the company ``name``: a word,
    the letters or the initials in common ("BBVA", "E.ON", "STABILUS SE" is not
    STMicroelectronics)."""
    if not wikipedia_url:
        return True
    title = unquote(wikipedia_url.rsplit("/", 1)[-1]).replace("_", " ")
    name_words, title_words = _ascii_words(name), _ascii_words(title)
    compact_name, compact_title = "".join(name_words), "".join(title_words)
    if not compact_name or not compact_title:
        return True
    meaningful = {w for w in name_words if len(w) >= 3 and w not in _NAME_STOPWORDS}
    if meaningful & set(title_words):
        return True
    initials = "".join(w[0] for w in name_words if w not in _NAME_STOPWORDS)
    return (
        compact_name in compact_title
        or compact_title in compact_name
        or compact_title == initials
        or "".join(w[0] for w in title_words) == compact_name
    )


TRBC_SECTORS: Final = frozenset(
    {
        "Technology",
        "Industrials",
        "Financials",
        "Healthcare",
        "Basic Materials",
        "Consumer Cyclicals",
        "Consumer Non-Cyclicals",
        "Energy",
        "Utilities",
        "Real Estate",
        "Telecommunications Services",
        "Academic & Educational Services",
    }
)
"""The economic sectors of the TRBC classification some index records carry."""

GICS_SECTORS: Final[dict[str, frozenset[str]]] = {
    "Information Technology": frozenset({"Technology"}),
    "Health Care": frozenset({"Healthcare"}),
    "Materials": frozenset({"Basic Materials"}),
    "Consumer Staples": frozenset({"Consumer Non-Cyclicals"}),
    "Consumer Discretionary": frozenset({"Consumer Cyclicals"}),
    "Communication Services": frozenset(
        {"Technology", "Telecommunications Services", "Consumer Cyclicals"}
    ),
}
"""GICS sectors other classifications cannot be mistaken for, and the TRBC economic
sectors that agree with each."""


class DirectoryCheck:
    """Cleans profiles against the whole directory: which TRBC sector each industry
    label belongs to, and which values are countries, are learnt from all companies."""

    def __init__(self, profiles: list[CompanyProfile]) -> None:
        """Learn from ``profiles`` (as bundled)."""
        votes: dict[str, Counter[str]] = {}
        self._users: Counter[str] = Counter()
        for profile in profiles:
            labels = set(profile.industries)
            self._users.update(labels)
            sectors = labels & TRBC_SECTORS
            if len(sectors) == 1:
                (sector,) = sectors
                for label in labels - TRBC_SECTORS - GICS_SECTORS.keys():
                    votes.setdefault(label, Counter())[sector] += 1
        self._sector = {label: count.most_common(1)[0][0] for label, count in votes.items()}
        counts = Counter(p.country for p in profiles if p.country and "," not in p.country)
        self.countries = {country for country, n in counts.items() if n >= 2}
        self.place_names = frozenset(self.countries | US_PLACES | UK_PLACES)
        self.names = NameModel.from_values(
            (p.metadata.key_people for p in profiles if p.metadata.key_people),
            (p.metadata.founder for p in profiles if p.metadata.founder),
        )

    def industries(self, labels: list[str]) -> list[str]:
        """``labels`` without another company's classification: when a GICS sector
        ("Information Technology") contradicts a TRBC one ("Industrials"), the TRBC
        sector and the labels that go with it ("Professional & Commercial Services")
        are dropped (AMD was ranked against airlines)."""
        gics = [label for label in labels if label in GICS_SECTORS]
        if len(gics) != 1:
            return labels
        agreeing = GICS_SECTORS[gics[0]]
        wrong = {label for label in labels if label in TRBC_SECTORS and label not in agreeing}
        return [
            label
            for label in labels
            if label not in wrong
            and not (self._users[label] >= 2 and self._sector.get(label) in wrong)
        ]

    def clean(self, profile: CompanyProfile) -> CompanyProfile:
        """``profile`` with every field checked and repaired or dropped (see the module)."""
        data = profile.metadata
        industries = self.industries(profile.industries)
        if not record_matches_name(profile.name, data.wikipedia_url):
            # a record of another company under this name (STABILUS SE holding
            # STMicroelectronics' infobox): its figures and industries are not this one's
            data, industries = type(data)(), []
        founded = data.founded if data.founded and _YEAR_RE.search(data.founded) else None
        figures = {field: clean_figure(getattr(data, field)) for field in MONEY_FIELDS}
        data = data.model_copy(
            update={
                **figures,
                "headquarters": clean_headquarters(data.headquarters, self.place_names),
                "founder": clean_founders(data.founder, self.names, profile.name),
                "products": clean_products(data.products, profile.name),
                "founded": clean_founded_text(founded),
                "employees": clean_figure(data.employees, money=False),
                "key_people": data.key_people
                and tidy_key_people(clean_value(data.key_people), self.names, profile.name),
                "company_type": data.company_type and balance_brackets(data.company_type),
            }
        )
        return profile.model_copy(
            update={
                "checked": True,
                "metadata": data,
                "country": clean_country(profile.country, data.headquarters, self.countries),
                "industries": industries,
            }
        )


def shape_problems(profile: CompanyProfile) -> list[str]:
    """What in ``profile`` does not have the shape of its field (empty: all good)."""
    data = profile.metadata
    problems = []
    if data.headquarters and (
        "°" in data.headquarters or re.search(r"\d+\.\d{3,}", data.headquarters)
    ):
        problems.append(f"headquarters with coordinates: {data.headquarters!r}")
    if profile.country and "," in profile.country:
        problems.append(f"country is a place: {profile.country!r}")
    for name in (data.founder or "").split("; ") if data.founder else []:
        if not _person_shaped(name):
            problems.append(f"founder is not a name: {name!r}")
    if data.products and profile.checked:
        items = data.products.split("; ")
        if len({item.lower() for item in items}) < len(items):
            problems.append(f"products repeat: {data.products!r}")
        if any(re.match(r"(list of|see)\b", item, re.I) for item in items):
            problems.append(f"products point elsewhere: {data.products!r}")
    if data.founded and not _YEAR_RE.search(data.founded):
        problems.append(f"founded without a year: {data.founded!r}")
    if not record_matches_name(profile.name, data.wikipedia_url):
        problems.append(f"infobox of another company: {data.wikipedia_url!r}")
    return problems
