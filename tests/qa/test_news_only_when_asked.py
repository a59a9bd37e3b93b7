"""The offline directory's lack of news is said only to a question that asks for news."""

from __future__ import annotations

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import DirectorySource

NO_NEWS = ("has no news", "or news", "ニュースがありません")
NOT_ASKED = (
    "Tell me about Apple",
    "Who runs Toyota?",
    "What products does Sony make?",
    "What was Siemens' revenue?",
    "Who are Nvidia's competitors?",
    "Compare Honda with Ford",
    "ソニーについて教えて",
)
ASKED = (
    "What's the latest news on Apple?",
    "What's happening with Tesla?",
    "Any recent developments at Siemens?",
    "トヨタの最新ニュースは？",
)


@pytest.fixture(scope="module")
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


@pytest.mark.parametrize("question", NOT_ASKED)
async def test_no_news_sentence_when_news_was_not_asked(
    offline: ResearchAssistant, question: str
) -> None:
    """A question that asks for no news gets no sentence about the news it lacks."""
    reply = await offline.ask(question, thread_id=f"n{NOT_ASKED.index(question)}")
    assert reply.company is not None, reply.text
    assert [] == [phrase for phrase in NO_NEWS if phrase in reply.text]


@pytest.mark.parametrize("question", ASKED)
async def test_the_missing_news_is_said_when_asked(
    offline: ResearchAssistant, question: str
) -> None:
    """A question about news or what is happening is told plainly there is none offline."""
    reply = await offline.ask(question, thread_id=f"y{ASKED.index(question)}")
    assert reply.company is not None, reply.text
    assert any(phrase in reply.text for phrase in NO_NEWS), reply.text
