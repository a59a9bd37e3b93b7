"""Homes (``RESEARCH_FSM_HOME``) for the processes a test starts, with the offline
directory already checked.

A process on a fresh home checks the 1,800 profiles of the offline directory before its
first answer (about a second of CPU) and keeps the result in ``<home>/cache/``
(``research_fsm.sources._profiles.load_profiles``). The command-line tests start a few
such processes each, each on a fresh home; ``seeded_home`` copies the session's checked
directory in first, so each reads it as a second run would. The tests of the cache
itself use homes of their own, unseeded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from research_fsm.sources._profiles import _cache_path

__all__ = ["seeded_home"]


def _session_cache() -> Path | None:
    """The checked directory of the session's home (tests/conftest.py), made once per
    worker when no test has made it yet; ``None`` when the data cannot be cached."""
    path = _cache_path()
    if path is None:
        return None
    path = Path(os.environ["RESEARCH_FSM_TEST_HOME"]) / "research-fsm" / "cache" / path.name
    if not path.is_file():
        from research_fsm.sources._profiles import load_profiles

        previous = os.environ.get("RESEARCH_FSM_HOME")
        os.environ["RESEARCH_FSM_HOME"] = str(path.parent.parent)
        try:
            load_profiles()
        finally:
            if previous is None:
                os.environ.pop("RESEARCH_FSM_HOME", None)
            else:
                os.environ["RESEARCH_FSM_HOME"] = previous
    return path if path.is_file() else None


def seeded_home(home: Path) -> Path:
    """``home``, with the session's checked offline directory copied into its cache (if
    not there yet): a process started on it skips checking the directory again."""
    source = _session_cache()
    if source is not None:
        target = home / "cache" / source.name
        if not target.exists():
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            target.chmod(0o600)
    return home
