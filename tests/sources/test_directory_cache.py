"""The checked directory is kept under ``$RESEARCH_FSM_HOME/cache`` for later processes;
a missing, damaged or unwritable cache is rebuilt or skipped, never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm.sources._profiles import load_profiles


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_second_load_reads_the_cache_and_gets_the_same_profiles(home: Path) -> None:
    """The first load writes one owner-only cache file; the second returns the same profiles from it."""
    first = load_profiles()
    (cache,) = (home / "cache").glob("directory-*.json")
    assert 0o600 == cache.stat().st_mode & 0o777
    cache.write_bytes(cache.read_bytes().replace(b'"Apple Inc."', b'"Apple Cached"', 1))
    second = load_profiles()
    assert "Apple Cached" in {profile.name for profile in second}  # read from the file
    assert len(first) == len(second) > 1_500


def test_a_damaged_cache_is_rebuilt(home: Path) -> None:
    """A cache file holding garbage is checked again from the data and rewritten."""
    first = load_profiles()
    (cache,) = (home / "cache").glob("directory-*.json")
    cache.write_bytes(b"\x00garbage{")
    again = load_profiles()
    assert [p.name for p in first] == [p.name for p in again]
    assert cache.read_bytes().startswith(b"[")


def test_a_home_that_cannot_take_the_cache_still_loads(home: Path) -> None:
    """A file where the cache folder goes leaves the directory uncached, not broken."""
    home.mkdir(parents=True)
    (home / "cache").write_text("not a folder", encoding="utf-8")
    assert len(load_profiles()) > 1_500
    assert "not a folder" == (home / "cache").read_text(encoding="utf-8")
