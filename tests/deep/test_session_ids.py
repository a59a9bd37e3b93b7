"""Deep-research session ids and folders: enough randomness, and a folder per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm.deep import _session
from research_fsm.deep._session import new_session_folder, new_session_id


def test_session_ids_carry_64_random_bits() -> None:
    """The random part of a session id is 16 hex digits (64 bits), not 6 (24 bits)."""
    assert 16 == len(new_session_id().rsplit("-", 1)[1])


def test_a_session_never_takes_a_folder_that_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id whose folder exists already (another session's) is skipped for a fresh one."""
    (tmp_path / "deep-taken").mkdir()
    (tmp_path / "deep-taken" / "report.md").write_text("the other session's", encoding="utf-8")
    ids = iter(["deep-taken", "deep-fresh"])
    monkeypatch.setattr(_session, "new_session_id", lambda now=None: next(ids))
    assert ("deep-fresh", tmp_path / "deep-fresh") == new_session_folder(tmp_path)
    assert "the other session's" == (tmp_path / "deep-taken" / "report.md").read_text("utf-8")


def test_two_sessions_started_together_get_two_folders(tmp_path: Path) -> None:
    """Sessions created in the same second have distinct ids and folders."""
    made = [new_session_folder(tmp_path) for _ in range(20)]
    assert (20, 20) == (len({sid for sid, _ in made}), len(list(tmp_path.iterdir())))
