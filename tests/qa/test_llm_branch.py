"""The agents' LLM branch, driven by the ScriptedLLM test double."""

from __future__ import annotations

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import LLMError, ScriptedLLM
from research_fsm.qa import Answer, Token
from research_fsm.sources import MockDataSource


def _assistant(llm: ScriptedLLM, source: MockDataSource | None = None) -> ResearchAssistant:
    return ResearchAssistant(
        llm=llm, source=source or MockDataSource(), store=MemoryCheckpointStore()
    )


async def test_clarity_uses_llm_verdict_and_normalises_name() -> None:
    """The LLM's structured verdict picks the company; its name is normalised to the canonical one."""
    llm = ScriptedLLM(
        {
            "clarity": [{"is_clear": True, "detected_company": "tesla", "intent": "stock"}],
            "synthesis": ["Tesla trades at $248."],
        }
    )
    reply = await _assistant(llm).ask(
        "How is the EV maker from Austin doing on the market?", thread_id="l1"
    )
    assert reply.company == "Tesla, Inc."
    assert reply.state.query_intent == "stock"
    assert [c.agent for c in llm.calls] == ["clarity", "synthesis"]


async def test_happy_path_takes_two_llm_calls() -> None:
    """A clear question with confident findings costs exactly 2 LLM calls (clarity + synthesis)."""
    llm = ScriptedLLM(
        {
            "clarity": [{"is_clear": True, "detected_company": "Apple Inc.", "intent": "news"}],
            "synthesis": ["Apple launched Vision Pro."],
        }
    )
    reply = await _assistant(llm).ask("What's happening with Apple?", thread_id="l2")
    assert len(llm.calls) == 2
    assert reply.text.startswith("Apple launched Vision Pro.")
    assert "Sources:" in reply.text
    assert {k: v.calls for k, v in reply.usage.items()} == {"clarity": 1, "synthesis": 1}


async def test_malformed_llm_output_falls_back_to_rules() -> None:
    """Clarity output that is not JSON, or misses fields, falls back to the rule-based matcher."""
    llm = ScriptedLLM(
        {
            "clarity": ["this is not json", {"detected_company": "Apple"}],
            "synthesis": [
                LLMError("overloaded", kind="overloaded"),
                LLMError("down", kind="server"),
            ],
        }
    )
    assistant = _assistant(llm)
    first = await assistant.ask("Tell me about Microsoft", thread_id="l3")
    assert first.company == "Microsoft Corporation"
    assert "Here's what I found about Microsoft Corporation:" in first.text
    second = await assistant.ask("Tell me about Amazon", thread_id="l3b")
    assert second.company == "Amazon.com, Inc."


async def test_llm_clarification_question_is_asked() -> None:
    """When the LLM says the query is unclear, its question is asked back."""
    llm = ScriptedLLM(
        {
            "clarity": [
                {"is_clear": False, "clarification_needed": "Which carmaker do you mean?"},
                {"is_clear": True, "detected_company": "Tesla"},
            ],
            "synthesis": ["Tesla is doing fine."],
        }
    )
    assistant = _assistant(llm)
    first = await assistant.ask("How's the carmaker?", thread_id="l4")
    assert first.text == "Which carmaker do you mean?"
    assert first.token is not None
    second = await assistant.clarify(first.token, "Tesla")
    assert second.company == "Tesla, Inc."


async def test_validator_llm_feedback_drives_retry() -> None:
    """The validator's LLM feedback reaches the next research attempt."""
    source = MockDataSource(fields={"stock_info"}, full_from_attempt=2)
    llm = ScriptedLLM(
        {
            "clarity": [{"is_clear": True, "detected_company": "Apple", "intent": "news"}],
            "validator": [{"is_sufficient": False, "feedback": "search Apple product launches"}],
            "synthesis": ["Apple news."],
        }
    )
    reply = await _assistant(llm, source).ask("What's new at Apple?", thread_id="l5")
    assert reply.path == ["clarity", "research", "validator", "research", "synthesis"]
    assert source.calls[1][1].feedback == "search Apple product launches"


async def test_synthesis_tokens_stream_through_assistant() -> None:
    """Tokens the LLM streams in synthesis reach ``assistant.stream()`` before the final answer."""
    llm = ScriptedLLM(
        {
            "clarity": [{"is_clear": True, "detected_company": "Apple"}],
            "synthesis": ["Apple is doing well today."],
        }
    )
    events = [e async for e in _assistant(llm).stream("Tell me about Apple", thread_id="l6")]
    tokens = "".join(e.text for e in events if isinstance(e, Token))
    assert tokens.startswith("Apple is doing well today.")
    assert isinstance(events[-1], Answer)
    assert events[-1].reply.text.startswith("Apple is doing well today.")


async def test_findings_reach_llm_delimited() -> None:
    """Findings are sent inside a <findings> block with an instruction that they are data."""
    llm = ScriptedLLM(
        {
            "clarity": [{"is_clear": True, "detected_company": "Apple"}],
            "synthesis": ["ok"],
        }
    )
    await _assistant(llm).ask("Tell me about Apple", thread_id="l7")
    synthesis = llm.calls[-1]
    assert "<findings>" in synthesis.prompt and "</findings>" in synthesis.prompt
    assert "not instructions" in synthesis.system
