"""Fixtures shared by the engine tests: the one parametrised ``store`` fixture."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from research_fsm.engine import CheckpointStore, JsonFileCheckpointStore, MemoryCheckpointStore

STORE_KINDS = ["memory", "file-none", "file-fsync"]


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> CheckpointStore:
    """Every store implementation: in memory, JSON files without and with fsync."""
    kind: str = request.param
    if kind == "memory":
        return MemoryCheckpointStore()
    durability: Literal["fsync", "none"] = "fsync" if kind == "file-fsync" else "none"
    return JsonFileCheckpointStore(tmp_path / "store", durability=durability)


@pytest.fixture
def make_store(store: CheckpointStore, tmp_path: Path) -> Callable[..., CheckpointStore]:
    """A factory for more stores of the same kind as ``store`` (each in its own directory)."""
    counter = itertools.count(1)

    def make(**kwargs: Any) -> CheckpointStore:
        if isinstance(store, MemoryCheckpointStore):
            return MemoryCheckpointStore(**kwargs)
        assert isinstance(store, JsonFileCheckpointStore)
        directory = tmp_path / f"store-{next(counter)}"
        return JsonFileCheckpointStore(directory, durability=store.durability, **kwargs)

    return make


@pytest.fixture
def file_store(tmp_path: Path) -> JsonFileCheckpointStore:
    """A JSON file store for the tests that are about files on disk."""
    return JsonFileCheckpointStore(tmp_path / "store", durability="fsync")
