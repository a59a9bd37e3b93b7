"""Durable checkpoint stores: JSON-lines files and PostgreSQL.

``JsonFileCheckpointStore`` keeps each thread in append-only JSON-lines files in a
folder (also importable from ``research_fsm``). ``PostgresCheckpointStore`` needs
``pip install 'research-fsm[postgres]'``; it is imported from here on first use, so
importing this package needs no driver. Both encode checkpoints with one codec
(``_logformat``) and implement ``research_fsm.engine.store.CheckpointStore``; the
engine itself holds only ``MemoryCheckpointStore``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._file import JsonFileCheckpointStore

if TYPE_CHECKING:
    from research_fsm.engine import CheckpointStore

    from .postgres import PostgresCheckpointStore

__all__ = [
    "STORE_ENV",
    "InvalidStoreSetting",
    "JsonFileCheckpointStore",
    "MissingExtra",
    "PostgresCheckpointStore",
    "missing_postgres_extra",
    "store_from_env",
]

STORE_ENV = "RESEARCH_FSM_STORE"
"""The environment variable naming the assistant's store: a ``postgresql://`` URL."""

_EXTRA_HINT = "the PostgreSQL store needs its extra: pip install 'research-fsm[postgres]'"


class MissingExtra(ImportError):
    """A store's optional dependencies are not installed; the message names the extra."""


class InvalidStoreSetting(ValueError):
    """``RESEARCH_FSM_STORE`` holds something that names no store this package knows."""


def store_from_env(*, keep: int | None = None) -> CheckpointStore | None:
    """The store ``RESEARCH_FSM_STORE`` names, or ``None`` when it is unset or empty.

    ``postgresql://...`` (or ``postgres://...``) gives a ``PostgresCheckpointStore``
    on that database with ``keep``; it needs the ``postgres`` extra (``MissingExtra``
    says so). Anything else raises ``InvalidStoreSetting`` (which never repeats the
    value: it may hold a password).
    """
    value = os.environ.get(STORE_ENV, "").strip()
    if not value:
        return None
    scheme = value.partition("://")[0].lower() if "://" in value else ""
    if scheme not in ("postgresql", "postgres"):
        shown = f"a {scheme}:// URL" if scheme else "a value that is not a URL"
        raise InvalidStoreSetting(
            f"{STORE_ENV} must be a postgresql:// URL (got {shown}); "
            "unset it to keep conversations in files under RESEARCH_FSM_HOME"
        )
    problem = missing_postgres_extra()
    if problem is not None:
        raise MissingExtra(f"{STORE_ENV} names a PostgreSQL database, but {problem}")
    from .postgres import PostgresCheckpointStore

    return PostgresCheckpointStore(value, keep=keep)


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
