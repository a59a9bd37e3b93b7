"""``ResearchAssistant``'s methods by their old names are its runners' own methods: the
same bound method, signature and docstring, written once in the runner."""

from __future__ import annotations

import inspect

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore

METHODS = [
    ("graph", "qa", "graph"),
    ("ask", "qa", "ask"),
    ("clarify", "qa", "clarify"),
    ("stream", "qa", "stream"),
    ("stream_clarify", "qa", "stream_clarify"),
    ("history", "qa", "history"),
    ("pending_question", "qa", "pending_question"),
    ("report", "reports", "report"),
    ("stream_report", "reports", "stream"),
    ("continue_report", "reports", "continue_run"),
    ("deep_research", "deep", "research"),
    ("stream_deep_research", "deep", "stream"),
    ("continue_deep_research", "deep", "continue_run"),
]


@pytest.mark.parametrize(("name", "runner", "method"), METHODS)
async def test_an_old_method_is_the_runners_bound_method(
    name: str, runner: str, method: str
) -> None:
    """``assistant.NAME`` equals ``assistant.RUNNER.METHOD``, with its signature and docstring."""
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    try:
        mine, theirs = getattr(assistant, name), getattr(getattr(assistant, runner), method)
        assert (mine, mine.__self__) == (theirs, getattr(assistant, runner))
        assert inspect.signature(mine) == inspect.signature(theirs)
        assert (getattr(ResearchAssistant, name).__doc__ or "").strip() != ""
    finally:
        await assistant.aclose()


async def test_a_subclass_still_overrides_and_calls_super() -> None:
    """A subclass's ``ask`` overrides the runner's, and ``super().ask`` reaches the runner."""

    class Shouting(ResearchAssistant):
        async def ask(self, text: str, *, thread_id: str) -> object:
            return ("shout", await super().ask(text.upper(), thread_id=thread_id))

    assistant = Shouting(store=MemoryCheckpointStore())
    try:
        tag, reply = await assistant.ask("tell me about apple", thread_id="s-1")
        assert ("shout", "Apple Inc.") == (tag, reply.company)
        assert "TELL ME ABOUT APPLE" == (await assistant.history("s-1"))[0].content
    finally:
        await assistant.aclose()


async def test_a_method_read_on_the_class_is_called_with_the_assistant_first() -> None:
    """``ResearchAssistant.ask(assistant, ...)`` answers as ``assistant.ask(...)`` does, and
    ``inspect`` reads the runner's signature, ``self`` first, from the class."""
    assistant = ResearchAssistant(store=MemoryCheckpointStore())
    try:
        reply = await ResearchAssistant.ask(
            assistant, "What's happening with Apple?", thread_id="t"
        )
    finally:
        await assistant.aclose()
    assert ("answered", "Apple Inc.") == (reply.status, reply.company)
    assert ["self", "text", "thread_id"] == list(
        inspect.signature(ResearchAssistant.ask).parameters
    )
    assert "company" in inspect.signature(ResearchAssistant.report).parameters
