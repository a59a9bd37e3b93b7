"""Option names, flags, environment variables and shell symbols as single search terms.

FTS5's ``unicode61`` tokenizer keeps letters and digits only: ``--force-all`` becomes
"force" and "all", ``$@`` and ``$*`` nothing at all, so a question about one option was
answered by any passage holding its words. Each symbol is also indexed as one synthetic
token (``token``: a prefix and the hexadecimal of its characters, letters and digits
only, which the tokenizer keeps whole), added after the passage's own words; a query
holding the symbol asks for that token."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SYMBOL", "symbol_tokens", "token", "with_symbols"]

SYMBOL: Final = re.compile(
    r"(?<![\w$\-./])--?[A-Za-z0-9](?:[\w\-]{0,62}[A-Za-z0-9])?(?![\w$])"
    r"|\$(?:[@*#?$!0-9]|\{?[A-Za-z_][A-Za-z0-9_]{0,62}\}?)"
    r"|(?<![\w$\-])[A-Za-z][A-Za-z0-9]{0,62}(?:_[A-Za-z0-9]{1,62}){1,8}(?![\w$])"
)
"""A command-line option (``-f``, ``--force-all``), a shell variable or special
parameter (``$@``, ``$*``, ``$1``, ``${HOME}``), or a name joined by underscores
(``XDG_CONFIG_HOME``, ``max_retries``)."""
_PREFIX: Final = "xsym"


def _canonical(symbol: str) -> str:
    """Options keep their case (``-f`` is not ``-F``); names and variables do not."""
    if symbol.startswith("-"):
        return symbol
    return symbol.replace("{", "").replace("}", "").lower()


def token(symbol: str) -> str:
    """The synthetic term of one symbol: letters and digits only."""
    return _PREFIX + _canonical(symbol).encode("utf-8").hex()


def symbol_tokens(text: str) -> list[str]:
    """The distinct synthetic terms of the symbols in ``text``, in order."""
    if "-" not in text and "$" not in text and "_" not in text:
        return []
    return list(dict.fromkeys(token(m.group()) for m in SYMBOL.finditer(text)))


def with_symbols(body: str, text: str | None = None) -> str:
    """``body`` (what the index holds of a passage) followed by the synthetic terms of
    the symbols in ``text`` (default: ``body``)."""
    found = symbol_tokens(body if text is None else text)
    return f"{body}\n{' '.join(found)}" if found else body
