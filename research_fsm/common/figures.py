"""The numbers a sentence states, compared as numbers: a claim is grounded in a quote
only when every number it states is one the quote states.

``figures("Revenue rose 12.0% to $1,234 million")`` is ``{"12", "1234"}``: text
NFKC-normalised (full-width digits count), thousands separators dropped, a decimal
written without its trailing zeros; a version such as ``2.7.1`` stays as written.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from typing import Final

__all__ = ["figures", "missing_figures"]

_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)*")


def _canonical(raw: str) -> str:
    plain = raw.replace(",", "")
    if plain.count(".") > 1:
        return plain
    try:
        value = Decimal(plain).normalize()
    except InvalidOperation:  # pragma: no cover - the pattern only matches digits
        return plain
    return format(value, "f")


def figures(text: str) -> set[str]:
    """The numbers ``text`` states, each in one canonical form."""
    return {_canonical(raw) for raw in _NUMBER.findall(unicodedata.normalize("NFKC", text))}


def missing_figures(claim: str, evidence: str) -> list[str]:
    """The numbers of ``claim`` that ``evidence`` does not state (empty: all are there)."""
    return sorted(figures(claim) - figures(evidence))
