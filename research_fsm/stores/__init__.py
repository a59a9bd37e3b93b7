"""Durable checkpoint stores: JSON-lines files and PostgreSQL, and the table opening them.

Every store is one folder here with the same shape: its ``__init__`` exports the store
and ``from_url``; ``file/`` (``JsonFileCheckpointStore``, also importable from
``research_fsm``), ``postgres/`` (``PostgresCheckpointStore``, needs
``pip install 'research-fsm[postgres]'``; imported from here on first use, so importing
this package needs no driver) and ``memory/`` (the engine's ``MemoryCheckpointStore``).
The durable ones encode checkpoints with one codec (``_codec/``) and all implement
``research_fsm.engine.store.CheckpointStore``. ``open_store(url)`` opens any of them by
URL through one table (``STORES``: scheme -> folder).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._schemes import STORES, InvalidStoreSetting, MissingExtra, StoreRow, open_store
from .file import JsonFileCheckpointStore

if TYPE_CHECKING:
    from research_fsm.engine import CheckpointStore

    from .postgres import PostgresCheckpointStore

__all__ = [
    "STORES",
    "STORE_ENV",
    "InvalidStoreSetting",
    "JsonFileCheckpointStore",
    "MissingExtra",
    "PostgresCheckpointStore",
    "StoreRow",
    "missing_postgres_extra",
    "open_store",
    "store_from_env",
]

STORE_ENV = "RESEARCH_FSM_STORE"
"""The environment variable naming the assistant's store: a URL ``open_store`` takes
(``postgresql://...``, ``file:DIR``, ``memory:``)."""

_EXTRA_HINT = "the PostgreSQL store needs its extra: pip install 'research-fsm[postgres]'"


def store_from_env(*, keep: int | None = None) -> CheckpointStore | None:
    """The store ``RESEARCH_FSM_STORE`` names, or ``None`` when it is unset or empty.

    The value is a store URL (``open_store``): ``postgresql://...`` (or
    ``postgres://...``) gives a ``PostgresCheckpointStore`` on that database, which
    needs the ``postgres`` extra (``MissingExtra`` says so); ``file:DIR`` a
    ``JsonFileCheckpointStore`` in DIR; ``memory:`` a ``MemoryCheckpointStore``; each
    with ``keep``. Anything else raises ``InvalidStoreSetting`` naming the allowed
    forms (it never repeats the value: it may hold a password).
    """
    value = os.environ.get(STORE_ENV, "").strip()
    if not value:
        return None
    try:
        return open_store(value, keep=keep)
    except InvalidStoreSetting as exc:
        raise InvalidStoreSetting(
            f"{STORE_ENV}: {exc}; unset it to keep conversations in files under RESEARCH_FSM_HOME"
        ) from None
    except MissingExtra as exc:
        raise MissingExtra(f"{STORE_ENV} names a store whose extra is missing: {exc}") from None


def missing_postgres_extra() -> str | None:
    """Why ``PostgresCheckpointStore`` cannot be imported here, or ``None`` when it can."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        return f"{_EXTRA_HINT} ({exc})"
    return None


def __getattr__(name: str) -> Any:
    if name == "PostgresCheckpointStore":
        problem = missing_postgres_extra()
        if problem is not None:
            raise MissingExtra(problem)
        from .postgres import PostgresCheckpointStore

        return PostgresCheckpointStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
