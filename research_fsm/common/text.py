"""Text from users, the web and LLMs made safe: no escape sequences, control or
bidirectional characters; and whether text is Japanese."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["clean_line", "clean_text", "for_terminal", "is_japanese"]

_ANSI: Final = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the one-byte (C1) CSI
)

_BIDI: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional marks, embeddings, overrides and isolates: they reorder what a
terminal shows (category Cf, so not caught as control characters)."""

_JAPANESE_RE: Final = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")


def clean_text(text: str) -> str:
    """Strip ANSI escapes and control characters; fold runs of whitespace."""
    text = _ANSI.sub("", text)
    out = []
    for ch in text:
        if ch in "\t\n\r":
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") or ch in _BIDI:
            continue
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def for_terminal(text: str) -> str:
    """``text`` safe to print: no escape sequences or control characters; newlines kept."""
    return "\n".join(clean_line(line) for line in _ANSI.sub("", text).split("\n"))


def clean_line(text: str) -> str:
    """Like ``clean_text`` but keeps the inner spacing of one line."""
    return "".join(
        " " if ch == "\t" else ch
        for ch in text
        if ch == "\t" or not (unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") or ch in _BIDI)
    )


def is_japanese(text: str) -> bool:
    """Whether the text is written in Japanese (has kana or kanji)."""
    return bool(_JAPANESE_RE.search(text))
