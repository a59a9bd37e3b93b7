"""The confidence of an answer reflects what was asked: a question about what is
happening now, answered without news, is not high confidence."""

from __future__ import annotations

import pytest

from research_fsm.engine import MemoryCheckpointStore
from research_fsm.qa import ResearchAssistant
from research_fsm.sources import DirectorySource


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


@pytest.mark.parametrize(
    "question",
    [
        "What's going on with Tesla?",
        "What's new at Apple?",
        "what is happening at Nvidia",
        "What's the latest news on Nvidia?",
    ],
)
async def test_news_questions_without_news_are_low_confidence(
    offline: ResearchAssistant, question: str
) -> None:
    """Answered from the directory, which has no news: confidence 3 of 10, and the
    answer says there is no news."""
    reply = await offline.ask(question, thread_id="t")
    assert (3, True) == (reply.confidence, "The offline directory has no news" in reply.text)


async def test_profile_question_keeps_its_confidence(offline: ResearchAssistant) -> None:
    """ "Tell me about Tesla" is answered by the profile: confidence stays 9."""
    reply = await offline.ask("Tell me about Tesla", thread_id="t")
    assert 9 == reply.confidence
