"""Token counting works offline, and budgets cut at sentence boundaries."""

from __future__ import annotations

import pytest

from research_fsm.llm._tokens import TokenCounter, estimate_tokens, fit_to_budget


async def test_offline_encoding_is_exact() -> None:
    """The bundled cl100k_base encoding loads without network and counts exactly."""
    counter = TokenCounter()
    await counter.aload()
    assert counter.exact
    assert 2 == counter.count("hello world")


async def test_missing_encoding_falls_back_to_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the offline encoding cannot load, counting estimates instead of failing or downloading."""
    import tiktoken

    def refuse(name: str) -> None:
        raise ValueError(f"Unknown encoding {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    counter = TokenCounter()
    await counter.aload()
    assert not counter.exact
    assert estimate_tokens("a" * 400) == counter.count("a" * 400)


async def test_budget_cuts_at_sentence_and_says_so() -> None:
    """A text over budget is cut after a whole sentence and ends with a truncation note."""
    counter = TokenCounter()
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    fitted = await fit_to_budget(text, 100, counter=counter)
    assert fitted.truncated
    assert counter.count(fitted.text) <= 100
    body, note = fitted.text.rsplit("\n", 1)
    assert body.endswith("is here.")
    assert note.startswith("[truncated: ")


async def test_text_within_budget_is_unchanged() -> None:
    """A text that fits is returned as it is."""
    fitted = await fit_to_budget("Short text.", 100)
    assert ("Short text.", False) == (fitted.text, fitted.truncated)
