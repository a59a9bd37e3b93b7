"""Company names as people type them, in questions and in clarification answers,
through ``ResearchAssistant`` on the offline directory."""

from __future__ import annotations

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import DirectorySource

LOWERCASE_TICKERS = [
    ("msft", "Microsoft"),
    ("aapl", "Apple Inc."),
    ("nvda", "Nvidia"),
    ("tsla", "Tesla, Inc."),
    ("amzn", "Amazon"),
    ("googl", "Alphabet Inc."),
    ("intc", "Intel"),
    ("nflx", "Netflix, Inc."),
    ("orcl", "Oracle Corporation"),
    ("jpm", "JPMorgan Chase"),
    ("csco", "Cisco"),
    ("wmt", "Walmart"),
]
TYPOS = [
    ("micrsoft", "Microsoft"),
    ("mircosoft", "Microsoft"),
    ("nvidea", "Nvidia"),
    ("nvidai", "Nvidia"),
    ("netflx", "Netflix, Inc."),
    ("qualcom", "Qualcomm"),
    ("salesfroce", "Salesforce"),
    ("walmrt", "Walmart"),
    ("starbuks", "Starbucks"),
    ("siemns", "Siemens"),
]
POSSESSIVES_AND_BRANDS = [
    ("google's", "Alphabet Inc."),
    ("facebook", "Meta Platforms"),
    ("apple's", "Apple Inc."),
    ("tesla's", "Tesla, Inc."),
    ("disney", "The Walt Disney Company"),
    ("uniqlo", "Fast Retailing"),
    ("instagram", "Meta Platforms"),
    ("MSFT", "Microsoft"),
]
CASES = LOWERCASE_TICKERS + TYPOS + POSSESSIVES_AND_BRANDS
SHORT_TYPOS = [
    ("amazn", "Amazon"),
    ("tesle", "Tesla, Inc."),
    ("appel", "Apple Inc."),
    ("toyta", "Toyota"),
]
"""One typo in a name of five letters: too little evidence to answer."""


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


def test_the_table_has_enough_cases() -> None:
    """At least 30 variants, 10 of them lower-case tickers and 10 typos."""
    assert (True, True, True) == (len(CASES) >= 30, len(LOWERCASE_TICKERS) >= 10, len(TYPOS) >= 10)


@pytest.mark.parametrize(("typed", "company"), CASES)
async def test_name_in_a_question(offline: ResearchAssistant, typed: str, company: str) -> None:
    """ "whats up with <name as typed>" is answered about that company, not asked back."""
    reply = await offline.ask(f"whats up with {typed}", thread_id="q")
    assert ("answered", company) == (reply.status, reply.company)


@pytest.mark.parametrize(("typed", "company"), SHORT_TYPOS)
async def test_short_typo_is_offered_not_answered(
    offline: ResearchAssistant, typed: str, company: str
) -> None:
    """A typo in a five-letter name says the name is not in the directory and offers the
    company it is near, rather than answering about a company the user may not mean."""
    reply = await offline.ask(f"whats up with {typed}", thread_id="s")
    assert ("needs_clarification", True, True) == (
        reply.status,
        company in reply.state.clarification_choices,
        reply.text.startswith(f'"{typed}" is not in the offline directory. Did you mean'),
    )


@pytest.mark.parametrize(("typed", "company"), CASES)
async def test_name_as_a_clarification_answer(
    offline: ResearchAssistant, typed: str, company: str
) -> None:
    """The same variants answer "which company?" without a second question."""
    first = await offline.ask("Tell me about the company", thread_id="c")
    assert first.token is not None
    reply = await offline.clarify(first.token, typed)
    assert ("answered", company, 1) == (
        reply.status,
        reply.company,
        reply.state.clarification_attempts,
    )


async def test_two_letter_ticker_counts_only_as_a_whole_answer(offline: ResearchAssistant) -> None:
    """ "ko" answers "which company?" as Coca-Cola, but "ko" inside a sentence is no ticker."""
    first = await offline.ask("Tell me about the company", thread_id="ko")
    assert first.token is not None
    reply = await offline.clarify(first.token, "ko")
    assert "The Coca-Cola Company" == reply.company
