"""Checkpoint stores that need an optional extra (the engine's own are in ``research_fsm.engine``).

``PostgresCheckpointStore`` needs ``pip install 'research-fsm[postgres]'``; it is
imported from here on first use, so importing this package needs no driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .postgres import PostgresCheckpointStore

__all__ = ["PostgresCheckpointStore", "missing_postgres_extra"]

_EXTRA_HINT = "the PostgreSQL store needs its extra: pip install 'research-fsm[postgres]'"


class MissingExtra(ImportError):
    """A store's optional dependencies are not installed; the message names the extra."""


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
