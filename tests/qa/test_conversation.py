"""Multi-turn memory: resets between questions, summarisation, streaming, input checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm import JsonFileCheckpointStore, ResearchAssistant
from research_fsm.qa import Answer, InvalidQuestion, Progress, Token
from research_fsm.qa.constants import MAX_QUESTION_CHARS, MESSAGE_THRESHOLD, SUMMARY_MAX_CHARS
from research_fsm.sources import MockDataSource


async def test_query_fields_reset_between_questions(assistant: ResearchAssistant) -> None:
    """A new question resets query-scoped fields but keeps messages and the company."""
    first = await assistant.ask("Tell me about Tesla", thread_id="c1")
    assert first.state.research_attempts == 1
    second = await assistant.ask("What about their stock?", thread_id="c1")
    assert second.state.research_attempts == 1
    assert second.state.original_query == "What about their stock?"
    assert len(second.state.messages) == 4
    assert second.company == "Tesla, Inc."


async def test_long_conversation_is_summarised(assistant: ResearchAssistant) -> None:
    """Past 10 messages, older ones fold into a bounded summary the agents read; the
    company is kept, and so is every message (the user sees the whole conversation)."""
    companies = ["Apple", "Tesla", "Microsoft", "Amazon", "Google"]
    for turn in range(12):
        await assistant.ask(f"Tell me about {companies[turn % 5]}", thread_id="c2")
    reply = await assistant.ask("What about their stock?", thread_id="c2")
    state = reply.state
    assert len(state.recent_messages) <= MESSAGE_THRESHOLD + 1
    assert state.summarised >= 26 - MESSAGE_THRESHOLD - 1
    history = await assistant.history("c2")
    assert len(history) == 26
    assert [m.content for m in history[:2:2]] == ["Tell me about Apple"]
    assert ["user", "assistant"] * 13 == [m.role for m in history]
    assert state.conversation_summary is not None
    assert len(state.conversation_summary) <= SUMMARY_MAX_CHARS
    assert state.conversation_summary.startswith("Current company: ")
    assert reply.company == "Tesla, Inc."  # the last turn asked about companies[11 % 5]


async def test_stream_yields_progress_tokens_answer(assistant: ResearchAssistant) -> None:
    """``stream`` yields a Progress per agent, answer tokens, then one Answer equal to the text."""
    events = [e async for e in assistant.stream("Tell me about Amazon", thread_id="c3")]
    agents = [e.agent for e in events if isinstance(e, Progress)]
    assert agents == ["clarity", "research", "synthesis"]
    research = next(e for e in events if isinstance(e, Progress) and e.agent == "research")
    assert "Amazon.com, Inc." in research.message
    assert isinstance(events[-1], Answer)
    tokens = "".join(e.text for e in events if isinstance(e, Token))
    assert events[-1].reply.text == tokens


async def test_question_checks(assistant: ResearchAssistant) -> None:
    """Too-long or non-text questions raise InvalidQuestion; control characters are stripped."""
    with pytest.raises(InvalidQuestion, match="limit"):
        await assistant.ask("a" * (MAX_QUESTION_CHARS + 1), thread_id="c4")
    with pytest.raises(InvalidQuestion, match="str"):
        await assistant.ask(42, thread_id="c4")  # type: ignore[arg-type]
    reply = await assistant.ask("Tell me \x1b[31mabout\x00 Apple\x07", thread_id="c4")
    assert reply.state.original_query == "Tell me about Apple"


async def test_bad_thread_id(assistant: ResearchAssistant) -> None:
    """A thread id that could escape the store directory is refused with ValueError."""
    with pytest.raises(ValueError, match="invalid thread_id"):
        await assistant.ask("Tell me about Apple", thread_id="../../etc")


async def test_graph_matches_contract(assistant: ResearchAssistant) -> None:
    """The Mermaid diagram shows the contract's nodes and branches."""
    diagram = (await assistant.graph()).to_mermaid()
    for line in [
        "__start__ --> clarity",
        'clarity -->|"needs_clarification"| interrupt',
        "interrupt --> clarity",
        'research -->|"uncertain"| validator',
        'validator -->|"retry"| research',
        "synthesis --> __end__",
        "error_recovery --> __end__",
    ]:
        assert line in diagram


async def test_breaking_out_of_stream_frees_thread() -> None:
    """Leaving ``stream`` early (``async with`` or a bare ``break``) frees the conversation at once."""
    from research_fsm.engine import MemoryCheckpointStore
    from research_fsm.sources import MockDataSource

    assistant = ResearchAssistant(source=MockDataSource(delay=0.05), store=MemoryCheckpointStore())
    async with assistant.stream("Tell me about Apple", thread_id="s1") as events:
        async for _ in events:
            break
    assert "Tesla, Inc." == (await assistant.ask("Tell me about Tesla", thread_id="s1")).company
    async for _ in assistant.stream("Tell me about Apple", thread_id="s2"):
        break
    assert "Tesla, Inc." == (await assistant.ask("Tell me about Tesla", thread_id="s2")).company


async def test_comparison_reply_lists_compared(assistant: ResearchAssistant) -> None:
    """A comparison's reply names the compared companies."""
    await assistant.ask("Tell me about Tesla", thread_id="cmp")
    reply = await assistant.ask("Compare them to Apple", thread_id="cmp")
    assert ["Apple Inc."] == reply.compared


async def test_a_long_conversation_saves_no_more_per_question(tmp_path: Path) -> None:
    """Keeping every message costs a checkpoint no more as the conversation grows: the
    30th question writes about as many bytes to the file store as the 5th (only the new
    messages are saved, never the whole list)."""
    store = JsonFileCheckpointStore(tmp_path / "threads")
    assistant = ResearchAssistant(source=MockDataSource(), store=store)

    def saved() -> int:
        files = (tmp_path / "threads").rglob("*.jsonl")
        return sum(len(path.read_bytes().rstrip(b"\0")) for path in files)  # no block padding

    written = []
    for _ in range(30):
        before = saved()
        await assistant.ask("Tell me about Apple", thread_id="long")
        written.append(saved() - before)
    assert len(await assistant.history("long")) == 60
    assert max(written[10:]) <= written[4] + 2 * SUMMARY_MAX_CHARS, written
    await assistant.aclose()
