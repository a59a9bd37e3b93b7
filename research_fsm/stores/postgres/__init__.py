"""``postgresql://``: ``PostgresCheckpointStore``, checkpoints in PostgreSQL.

Needs the ``postgres`` extra (``pip install 'research-fsm[postgres]'``: psycopg 3 and
psycopg-pool); importing this package imports them. ``store`` is the store, over
``connections`` (the pool and the lease connections), ``leases`` (session advisory
locks), ``batch`` (round trips shared), ``rows`` (rows of the stores' codec,
compressed), ``schema`` (tables, functions, migrations) and ``common``.
"""

from __future__ import annotations

from typing import Any

from .common import StoreUnavailable
from .schema import SchemaTooNew
from .store import PostgresCheckpointStore

__all__ = ["PostgresCheckpointStore", "SchemaTooNew", "StoreUnavailable", "from_url"]


def from_url(url: str, **options: Any) -> PostgresCheckpointStore:
    """``postgresql://USER@HOST/DB`` (or any libpq connection URL) -> a
    ``PostgresCheckpointStore`` on it; ``options`` as its constructor takes them."""
    return PostgresCheckpointStore(url, **options)
