"""Company questions as people type them, answered honestly (issue 34): the right company
or none, a plain sentence for a company outside the directory, the "I research
companies" reply for a question about no company, and confidence only where it is due."""

from __future__ import annotations

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.qa.agents._clarity import ASK_WHICH_COMPANY
from research_fsm.qa.agents._synthesis import OFF_TOPIC_MESSAGE
from research_fsm.sources import DirectorySource
from research_fsm.web._events import confidence_label


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


@pytest.mark.parametrize(
    ("question", "company"),
    [
        ("exxon", "ExxonMobil"),
        ("Exxon Mobil", "ExxonMobil"),
        ("what about exxon's revenue?", "ExxonMobil"),
        ("jp morgan ceo", "JPMorgan Chase"),
        ("mcdonalds", "McDonald's"),
        ("p&g", "Procter & Gamble"),
        ("j&j", "Johnson & Johnson"),
        ("tell me about pepsi", "PepsiCo"),
    ],
)
async def test_names_of_the_issue_answer_the_right_company(
    offline: ResearchAssistant, question: str, company: str
) -> None:
    """The issue's examples are answered about the company they name."""
    reply = await offline.ask(question, thread_id="t")
    assert ("answered", company) == (reply.status, reply.company)


async def test_coke_vs_pepsi_compares_both(offline: ResearchAssistant) -> None:
    """ "coke vs pepsi" compares The Coca-Cola Company with PepsiCo."""
    reply = await offline.ask("coke vs pepsi", thread_id="c")
    assert ("The Coca-Cola Company", ["PepsiCo"]) == (reply.company, reply.compared)


@pytest.mark.parametrize(
    "question", ["spacex", "tsmc", "tell me about Samsung", "Novo Nordisk A/S", "alibaba"]
)
async def test_company_outside_the_directory_gets_one_plain_sentence(
    offline: ResearchAssistant, question: str
) -> None:
    """A company the directory lacks: one sentence saying so, naming the indices and the
    web research TAVILY_API_KEY brings; no confidence shown."""
    reply = await offline.ask(question, thread_id="o")
    text = reply.text
    assert (True, True, True, 1, None) == (
        "is not in the offline directory of about 1,800 companies" in text,
        "S&P 500" in text and "NIKKEI 225" in text,
        "TAVILY_API_KEY" in text,
        text.count("."),
        confidence_label(reply),
    )


@pytest.mark.parametrize(
    "question",
    [
        "how do I bake bread",
        "how do I make pasta",
        "explain quantum computing",
        "what is inflation",
        "is it going to rain",
        "best laptop under 1000",
        "what does a CEO do",
    ],
)
async def test_question_about_no_company_gets_the_short_reply(
    offline: ResearchAssistant, question: str
) -> None:
    """A question about no company: the "I research companies" reply with two example
    questions, never a profile nor "which company?", and no confidence."""
    reply = await offline.ask(question, thread_id="g")
    assert ("answered", OFF_TOPIC_MESSAGE, None, False) == (
        reply.status,
        reply.text,
        confidence_label(reply),
        ASK_WHICH_COMPANY in reply.text,
    )
    assert (
        OFF_TOPIC_MESSAGE.startswith("I research companies")
        and 2 == OFF_TOPIC_MESSAGE.count('"') // 2
    )


async def test_confidence_is_high_only_for_an_exact_name(offline: ResearchAssistant) -> None:
    """The same profile is of high confidence asked by its name, and below high asked by
    the start of its name, which the answer says it took to mean the company."""
    exact = await offline.ask("Tell me about ExxonMobil", thread_id="e")
    start = await offline.ask("tell me about exxon", thread_id="s")
    assert (True, False, True) == (
        exact.confidence >= 8,
        start.confidence >= 8,
        start.text.startswith('_Taking "exxon" to mean ExxonMobil._'),
    )


async def test_description_never_names_a_maker_of_windows(offline: ResearchAssistant) -> None:
    """ "the company behind Windows" is not answered with a maker of windows: a product
    name the description capitalises must be written so in the company's products."""
    reply = await offline.ask("the company behind Windows", thread_id="w")
    assert "Lowe's" not in (reply.company or "", *reply.state.clarification_choices)


async def test_follow_up_naming_another_company_leaves_the_previous_one(
    offline: ResearchAssistant,
) -> None:
    """ "what about spacex?" after a question about Toyota says SpaceX is not listed; it
    does not answer about Toyota again."""
    await offline.ask("tell me about Toyota", thread_id="f")
    reply = await offline.ask("what about spacex?", thread_id="f")
    assert ("spacex", True) == (reply.company, "not in the offline directory" in reply.text)
