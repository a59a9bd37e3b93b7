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
import secrets
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from pydantic import TypeAdapter

from .._home import default_home
from ._clean import DirectoryCheck, record_matches_name
from ._profile import (
    BRAND_ALIASES,
    CompanyProfile,
    Listing,
    ProfileMetadata,
    clean_founded,
    clean_value,
    split_people,
)

__all__ = [
    "BRAND_ALIASES",
    "CompanyProfile",
    "Listing",
    "ProfileMetadata",
    "clean_founded",
    "clean_value",
    "load_profiles",
    "load_raw_profiles",
    "split_people",
]
"""The profile model lives in ``_profile`` (which ``_clean`` builds on); its names are
still importable from here."""


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
