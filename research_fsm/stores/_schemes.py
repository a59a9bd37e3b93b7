"""The store table: which URL scheme opens which store folder, and ``open_store``.

Each row names a folder of ``research_fsm.stores`` (``file``, ``postgres``,
``memory``...) whose ``__init__`` has ``from_url(url, **options)`` returning the
store. The folder is imported only when its scheme is opened, so a store whose
driver is an optional extra costs nothing until it is used. Adding a store is one
folder beside the others plus one row here (docs/stores.md, "Writing a store").
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from research_fsm.engine import CheckpointStore

__all__ = ["STORES", "InvalidStoreSetting", "MissingExtra", "StoreRow", "open_store", "url_rest"]


class MissingExtra(ImportError):
    """A store's optional dependencies are not installed; the message names the extra."""


class InvalidStoreSetting(ValueError):
    """A store URL (or ``RESEARCH_FSM_STORE``) names no store this package knows, or
    names one in a form it cannot open; the message lists the allowed forms."""


@dataclass(frozen=True, slots=True)
class StoreRow:
    """One row of the store table."""

    folder: str
    """The store's folder under ``research_fsm/stores/``; its ``from_url`` opens the URL."""
    form: str
    """What a URL of this scheme looks like, as errors show it."""
    extra: str | None = None
    """The ``pip install 'research-fsm[EXTRA]'`` extra the folder's imports need."""


STORES: dict[str, StoreRow] = {
    "memory": StoreRow("memory", "memory:"),
    "file": StoreRow("file", "file:DIR"),
    "postgresql": StoreRow("postgres", "postgresql://USER@HOST/DB", extra="postgres"),
    "postgres": StoreRow("postgres", "postgres://USER@HOST/DB", extra="postgres"),
}
"""URL scheme -> the store that opens it: the one table ``open_store`` reads."""

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


class _Opener(Protocol):
    def from_url(self, url: str, **options: Any) -> CheckpointStore: ...


def allowed() -> str:
    """The URL forms the table knows, for error messages."""
    return ", ".join(row.form for row in STORES.values())


def open_store(url: str, **options: Any) -> CheckpointStore:
    """The store a URL names: ``memory:``, ``file:DIR`` or ``postgresql://...``.

    ``options`` go to the store's constructor (``keep=``, ``durability=`` for files,
    ``schema=`` for PostgreSQL...). Raises ``InvalidStoreSetting`` for a scheme not in
    the table, naming the allowed ones (never repeating the URL: it may hold a
    password), and ``MissingExtra`` when the store's extra is not installed.
    """
    if not isinstance(url, str):
        raise InvalidStoreSetting(
            f"a store URL must be a string, got {type(url).__name__}; allowed: {allowed()}"
        )
    match = _SCHEME.match(url.strip())
    row = STORES.get(match.group(1).lower()) if match else None
    if row is None:
        shown = f"a {match.group(1)}: URL" if match else "a value without a scheme"
        raise InvalidStoreSetting(f"no store opens {shown}; allowed: {allowed()}")
    try:
        package = importlib.import_module(f"{__package__}.{row.folder}")
    except ImportError as exc:
        if row.extra is None:
            raise
        raise MissingExtra(
            f"the {row.form} store needs its extra: pip install 'research-fsm[{row.extra}]' ({exc})"
        ) from None
    return cast("_Opener", package).from_url(url.strip(), **options)


def url_rest(url: str) -> str:
    """What follows the scheme's colon (and a ``//`` right after it): ``file:///tmp/t``
    and ``file:/tmp/t`` give ``/tmp/t``, ``memory:`` gives ``""``."""
    rest = url.partition(":")[2]
    return rest[2:] if rest.startswith("//") else rest
