"""``open_store``: one table from URL scheme to store folder, and its errors."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

import research_fsm.stores as stores
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.stores import (
    STORES,
    InvalidStoreSetting,
    JsonFileCheckpointStore,
    MissingExtra,
    open_store,
    store_from_env,
)

STORES_DIR = Path(stores.__file__).parent


async def test_memory_url_opens_a_memory_store_with_the_options() -> None:
    """``memory:`` gives a new ``MemoryCheckpointStore``, ``keep=`` passed on."""
    store = open_store("memory:", keep=3)
    assert (MemoryCheckpointStore, 3) == (type(store), store._keep)  # type: ignore[attr-defined]
    assert open_store("memory:") is not open_store("memory:")


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "FILE:{}", " file:{} "])
def test_file_url_opens_a_file_store_in_that_folder(tmp_path: Path, form: str) -> None:
    """``file:DIR`` (and ``file://`` + an absolute path, any case, spaces around) is a
    file store in DIR with the options given."""
    store = open_store(form.format(tmp_path / "t"), durability="none", keep=5)
    assert isinstance(store, JsonFileCheckpointStore)
    assert (tmp_path / "t", "none", 5) == (store.directory, store.durability, store.keep)


async def test_postgres_urls_open_a_postgres_store(postgres_server: Any) -> None:
    """``postgresql://`` and ``postgres://`` both give a ``PostgresCheckpointStore`` that
    works on that database."""
    pytest.importorskip("psycopg")
    from research_fsm.stores.postgres import PostgresCheckpointStore

    for url in (postgres_server.url, postgres_server.url.replace("postgresql:", "postgres:", 1)):
        store = open_store(url, schema="test_open_store", keep=2)
        try:
            assert (PostgresCheckpointStore, 2) == (type(store), store.keep)  # type: ignore[attr-defined]
            assert await store.load_latest("nobody") is None
        finally:
            await store.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mysql://me:hunter2@db/x", "a mysql: URL"),
        ("sqlite:hunter2.db", "a sqlite: URL"),
        ("/var/lib/hunter2", "a value without a scheme"),
        ("", "a value without a scheme"),
    ],
)
def test_an_unknown_scheme_names_every_allowed_form_and_hides_the_url(url: str, shown: str) -> None:
    """A URL no row opens raises ``InvalidStoreSetting`` listing each row's form, without
    repeating what may hold a password."""
    with pytest.raises(InvalidStoreSetting) as info:
        open_store(url)
    message = str(info.value)
    assert shown in message
    assert [] == [row.form for row in STORES.values() if row.form not in message]
    assert "hunter2" not in message


@pytest.mark.parametrize(("url", "needs"), [("file:", "file:DIR"), ("memory:x", "memory:")])
def test_a_url_missing_or_with_extra_parts_says_the_form(url: str, needs: str) -> None:
    """``file:`` without a folder and ``memory:`` with something after it are refused,
    naming the form wanted."""
    with pytest.raises(InvalidStoreSetting, match=needs):
        open_store(url)


def test_every_row_names_a_store_folder_with_from_url() -> None:
    """Each row's folder is a package under stores/ whose ``from_url`` opens it (the
    Postgres one with its extra, which the tests have)."""
    for scheme, row in STORES.items():
        assert (STORES_DIR / row.folder / "__init__.py").is_file(), scheme
        if row.extra is not None:
            pytest.importorskip("psycopg")
        package = importlib.import_module(f"research_fsm.stores.{row.folder}")
        assert callable(package.from_url), scheme
        assert row.form.lower().startswith(f"{scheme}:"), scheme


def test_a_store_whose_extra_is_missing_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without psycopg, ``postgresql://`` raises ``MissingExtra`` naming the extra to
    install (and the import error), not a bare ``ImportError`` traceback."""
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for name in [n for n in sys.modules if n.startswith("research_fsm.stores.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(stores, "postgres", raising=False)
    with pytest.raises(MissingExtra, match=r"pip install 'research-fsm\[postgres\]'"):
        open_store("postgresql://me:hunter2@db/x")


def test_the_env_takes_every_scheme_of_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RESEARCH_FSM_STORE`` (what the CLI and the web page read) opens through the same
    table: ``file:DIR`` and ``memory:`` too, with the ``keep`` asked for."""
    monkeypatch.setenv("RESEARCH_FSM_STORE", f"file:{tmp_path}")
    store = store_from_env(keep=7)
    assert isinstance(store, JsonFileCheckpointStore)
    assert (tmp_path, 7) == (store.directory, store.keep)
    monkeypatch.setenv("RESEARCH_FSM_STORE", "memory:")
    assert isinstance(store_from_env(keep=7), MemoryCheckpointStore)
    monkeypatch.setenv("RESEARCH_FSM_STORE", "redis://:hunter2@cache")
    with pytest.raises(InvalidStoreSetting, match=r"RESEARCH_FSM_STORE: .*file:DIR") as info:
        store_from_env()
    assert "hunter2" not in str(info.value)
