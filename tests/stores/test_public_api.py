"""The stores' public surface: ``research_fsm.stores`` and the file store in ``research_fsm``."""

from __future__ import annotations

import research_fsm
import research_fsm.stores as stores


def test_stores_all_is_the_explicit_sorted_list() -> None:
    """``research_fsm.stores.__all__`` is exactly the reviewed list."""
    assert [
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
    ] == stores.__all__


def test_every_exported_name_exists() -> None:
    """Each name in ``__all__`` is importable from the stores (the Postgres store with its
    extra, which the tests have)."""
    assert [] == [name for name in stores.__all__ if not hasattr(stores, name)]


def test_package_exports_the_file_store() -> None:
    """``research_fsm.JsonFileCheckpointStore``, the durable default, is the stores' own."""
    assert "JsonFileCheckpointStore" in research_fsm.__all__
    assert research_fsm.JsonFileCheckpointStore is stores.JsonFileCheckpointStore
    assert sorted(research_fsm.__all__) == research_fsm.__all__


def test_engine_no_longer_exports_the_file_store() -> None:
    """The engine holds only the memory store."""
    assert not hasattr(research_fsm.engine, "JsonFileCheckpointStore")
