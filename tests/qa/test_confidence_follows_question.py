"""The confidence of an answer reflects what was asked: a question about what is
happening now, answered without news, is not high confidence."""

from __future__ import annotations

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.sources import DirectorySource

NO_NEWS = "The offline directory has no news; set TAVILY_API_KEY for live data."


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


@pytest.mark.parametrize(
    ("question", "confidence", "says_no_news"),
    [
        ("What's happening with Apple?", 7, True),
        ("What's going on with Tesla?", 7, True),
        ("What's new at Apple?", 7, True),
        ("What's the latest news on Nvidia?", 3, True),
        ("Tell me about Tesla", 9, False),
    ],
)
async def test_confidence_reflects_what_was_asked(
    offline: ResearchAssistant, question: str, confidence: int, says_no_news: bool
) -> None:
    """Answered from the directory, which has no news: a question about what is
    happening now is medium (the profile answers half of it), a news question low, a
    profile question high; the answers that asked for news say there is none."""
    reply = await offline.ask(question, thread_id="t")
    assert (confidence, says_no_news) == (reply.confidence, NO_NEWS in reply.text)


async def test_medium_answer_says_what_it_lacks_instead_of_a_vague_note(
    offline: ResearchAssistant,
) -> None:
    """The medium answer to "What's happening with Apple?" starts with the answer and
    ends with the plain sentence on what is missing, not a generic disclaimer."""
    reply = await offline.ask("What's happening with Apple?", thread_id="t")
    assert (True, True) == (
        reply.text.startswith("Here's what I found about Apple Inc.:"),
        NO_NEWS in reply.text,
    )
