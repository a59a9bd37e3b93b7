"""English words, to tell a typed word from a misspelt company name ("bread" is a
word, not a typo of "Brady"): the lower-case words of Webster's Second (public domain,
as the ``english-words`` package ships them), kept in ``data/english.crc32`` as the
sorted CRC-32 of each word (about 0.9 MB; a lookup is a binary search). A CRC shared
by a non-word and a word (about 1 in 18,000 non-words) only makes that non-word count
as English: never a typo, never a name. Loaded once, on first use, in about a
millisecond; ``build_word_hashes`` makes the file again from the package."""

from __future__ import annotations

import bisect
import functools
import sys
import zlib
from array import array
from collections.abc import Container, Iterable
from importlib import resources

from .._logging import get_logger

_log = get_logger(__name__)

DATA_FILE = "data/english.crc32"
"""The word hashes, inside this package."""


class WordHashes(Container[str]):
    """A set of words held as their sorted CRC-32 values."""

    def __init__(self, hashes: array) -> None:  # type: ignore[type-arg]
        """Wrap sorted unsigned 32-bit hashes."""
        self._hashes = hashes

    def __contains__(self, word: object) -> bool:
        """Whether ``word`` (lower case) is one of the words."""
        if not isinstance(word, str):
            return False
        value = zlib.crc32(word.encode())
        i = bisect.bisect_left(self._hashes, value)
        return i < len(self._hashes) and self._hashes[i] == value

    def __len__(self) -> int:
        """How many distinct hashes."""
        return len(self._hashes)


def build_word_hashes(words: Iterable[str]) -> bytes:
    """The file's bytes for ``words``: their sorted, distinct CRC-32, little-endian."""
    values = array("I", sorted({zlib.crc32(word.encode()) for word in words}))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


@functools.cache
def english_words() -> Container[str]:
    """The English words (blocking on first call: about a millisecond); an empty set,
    with a warning logged once, if the data file is missing."""
    try:
        data = resources.files(__package__).joinpath(DATA_FILE).read_bytes()
    except (FileNotFoundError, OSError) as exc:
        _log.warning("english word list unavailable; typo matching is stricter", error=str(exc))
        return frozenset()
    values = array("I")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return WordHashes(values)
