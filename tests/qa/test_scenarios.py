"""The design's test scenarios, each over the real graph with MockDataSource."""

from __future__ import annotations

from pathlib import Path

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.qa.agents._synthesis import CANCEL_MESSAGE, LOW_PREFIX, MEDIUM_PREFIX
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore


async def test_happy_path(assistant: ResearchAssistant) -> None:
    """A clear question about Apple goes clarity -> research -> synthesis and cites sources."""
    reply = await assistant.ask("What's happening with Apple?", thread_id="t1")
    assert reply.status == "answered"
    assert reply.path == ["clarity", "research", "synthesis"]
    assert reply.company == "Apple Inc."
    assert "Apple Inc." in reply.text
    assert "$89.5B" in reply.text
    assert reply.confidence >= 8
    assert not reply.text.startswith(("_", "**Note"))
    for source in reply.sources:
        assert source.url in reply.text


async def test_clarification_then_resume(assistant: ResearchAssistant) -> None:
    """An unclear question suspends with a question; answering "Apple" finishes the research."""
    first = await assistant.ask("Tell me about the company", thread_id="t2")
    assert first.status == "needs_clarification"
    assert first.path == ["clarity", "interrupt"]
    assert "company" in first.text.lower()
    assert first.token is not None
    second = await assistant.clarify(first.token, "Apple")
    assert second.status == "answered"
    assert second.path == ["interrupt", "clarity", "research", "synthesis"]
    assert second.company == "Apple Inc."


async def test_double_clarification(assistant: ResearchAssistant) -> None:
    """ "the company" -> "the tech one" -> "Apple": two interrupts, then an Apple answer."""
    first = await assistant.ask("Tell me about the company", thread_id="t3")
    assert first.token is not None
    second = await assistant.clarify(first.token, "The tech one")
    assert second.status == "needs_clarification"
    assert second.state.clarification_attempts == 2
    assert second.token is not None
    third = await assistant.clarify(second.token, "Apple")
    assert third.status == "answered"
    assert third.company == "Apple Inc."


async def test_unknown_company_graceful(assistant: ResearchAssistant) -> None:
    """An unknown company ("Acme Corp") ends in a graceful "couldn't find" answer."""
    reply = await assistant.ask("What's happening with Acme Corp?", thread_id="t4")
    assert reply.status == "answered"
    assert "couldn't find" in reply.text
    assert "Acme Corp" in reply.text
    assert reply.confidence == 0
    assert reply.path[-1] == "synthesis"


async def test_retry_loop_partial_data() -> None:
    """Partial data loops research -> validator at most 3 times and answers with a disclaimer."""
    source = MockDataSource(fields={"stock_info"})
    assistant = ResearchAssistant(source=source, store=MemoryCheckpointStore())
    reply = await assistant.ask("What's happening with Apple?", thread_id="t5")
    expected = [
        "clarity",
        "research",
        "validator",
        "research",
        "validator",
        "research",
        "validator",
        "synthesis",
    ]
    assert expected == reply.path
    assert reply.state.research_attempts == 3
    assert len(source.calls) == 3
    assert reply.text.startswith((LOW_PREFIX, MEDIUM_PREFIX))
    assert source.calls[1][1].feedback is not None
    assert source.calls[1][1].feedback != source.calls[0][1].feedback


async def test_retry_succeeds_on_second_attempt() -> None:
    """When the retry finds full data, the loop stops after the second research round."""
    source = MockDataSource(fields={"stock_info"}, full_from_attempt=2)
    assistant = ResearchAssistant(source=source, store=MemoryCheckpointStore())
    reply = await assistant.ask("What's happening with Apple?", thread_id="t5b")
    assert reply.path == ["clarity", "research", "validator", "research", "synthesis"]
    assert reply.confidence >= 8


async def test_follow_up_inherits_company(assistant: ResearchAssistant) -> None:
    """ "What about their stock?" after Apple stays on Apple and leads with stock data."""
    await assistant.ask("What's happening with Apple?", thread_id="t6")
    reply = await assistant.ask("What about their stock?", thread_id="t6")
    assert reply.company == "Apple Inc."
    assert reply.state.query_intent == "stock"
    body = reply.text.split("\n\n")
    assert body[1].startswith("**Stock and financials**: AAPL trading at $195")


async def test_topic_change(assistant: ResearchAssistant) -> None:
    """ "Now tell me about Tesla" switches the company."""
    await assistant.ask("What's happening with Apple?", thread_id="t7")
    reply = await assistant.ask("Now tell me about Tesla", thread_id="t7")
    assert reply.company == "Tesla, Inc."
    assert "Tesla" in reply.text
    assert "Apple" not in reply.text


async def test_compare_keeps_both(assistant: ResearchAssistant) -> None:
    """ "Compare them to Apple" after Tesla keeps both companies in the answer."""
    await assistant.ask("Tell me about Tesla", thread_id="t7b")
    reply = await assistant.ask("Compare them to Apple", thread_id="t7b")
    assert reply.state.query_intent == "comparison"
    assert reply.company == "Tesla, Inc."
    assert reply.state.comparison_companies == ["Apple Inc."]
    assert "### Tesla, Inc." in reply.text
    assert "### Apple Inc." in reply.text


async def test_max_clarifications_best_guess(assistant: ResearchAssistant) -> None:
    """Three vague answers: two interrupts, then a best-guess answer (no third question)."""
    first = await assistant.ask("Tell me about the company", thread_id="t8")
    assert first.token is not None
    second = await assistant.clarify(first.token, "you know, that one")
    assert second.status == "needs_clarification" and second.token is not None
    third = await assistant.clarify(second.token, "whatever")
    assert third.status == "answered"
    assert third.state.clarification_attempts == 2
    assert "interrupt" not in third.path[1:]


async def test_empty_query(assistant: ResearchAssistant) -> None:
    """An empty or whitespace-only question asks what the user wants to know."""
    reply = await assistant.ask("   ", thread_id="t9")
    assert reply.status == "needs_clarification"
    assert "What would you like to know?" in reply.text


async def test_cancel(assistant: ResearchAssistant, mock_source: MockDataSource) -> None:
    """ "Nevermind" skips research and closes politely."""
    reply = await assistant.ask("Nevermind", thread_id="t10")
    assert reply.path == ["clarity", "synthesis"]
    assert reply.text == CANCEL_MESSAGE
    assert mock_source.calls == []


async def test_mock_known_microsoft(assistant: ResearchAssistant) -> None:
    """Microsoft from the mock is answered with confidence 10."""
    reply = await assistant.ask("Tell me about Microsoft", thread_id="t11")
    assert reply.confidence == 10
    assert reply.company == "Microsoft Corporation"


async def test_mock_unknown_randomcorp(assistant: ResearchAssistant) -> None:
    """An unknown company from the mock has confidence 0 and no findings."""
    reply = await assistant.ask("Tell me about RandomCorp", thread_id="t12")
    assert reply.confidence == 0
    assert reply.state.research_findings is None


async def test_resume_after_restart(tmp_path: Path) -> None:
    """A clarification asked by one assistant is answered by a brand-new one on the same
    directory; the transcript holds the question asked back."""
    first_assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(tmp_path)
    )
    first = await first_assistant.ask("Tell me about the company", thread_id="restart")
    assert first.token is not None
    token = str(first.token)
    del first_assistant
    second_assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(tmp_path)
    )
    reply = await second_assistant.clarify(token, "Tesla")
    assert reply.company == "Tesla, Inc."
    assert reply.status == "answered"
    messages = await second_assistant.history("restart")
    assert ["user", "assistant", "user", "assistant"] == [m.role for m in messages]
    assert first.text == messages[1].content


async def test_ask_answers_pending_clarification(assistant: ResearchAssistant) -> None:
    """``ask`` on a thread that waits for a clarification uses the text as the answer."""
    await assistant.ask("Tell me about the company", thread_id="t13")
    reply = await assistant.ask("Amazon", thread_id="t13")
    assert reply.company == "Amazon.com, Inc."
