"""Load: 1,000 concurrent conversations through one ``ResearchAssistant`` over the file
store, in one event loop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.qa import Reply, ResearchState
from research_fsm.qa.agents._clarity import ASK_WHICH_COMPANY
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore

CONVERSATIONS = 1_000
BUDGET = 90.0
"""Seconds the whole load may take (about 20 s on 2 cores)."""
COMPANIES = [  # (how the user names it, the company the answer must be about)
    ("Apple", "Apple Inc."),
    ("Tesla", "Tesla, Inc."),
    ("Microsoft", "Microsoft Corporation"),
    ("Amazon", "Amazon.com, Inc."),
    ("Google", "Alphabet Inc. (Google)"),
]


async def conversation(assistant: ResearchAssistant, n: int) -> list[tuple[str, str | None, str]]:
    """Conversation ``n``: a question about its company, then by ``n % 3`` nothing
    more, a follow-up about the stock, or first a clarification answered with ``clarify``.
    Returns (status, company, first line) per reply."""
    name, _ = COMPANIES[n % len(COMPANIES)]
    thread = f"load-{n}"
    replies: list[Reply] = []
    if n % 3 == 2:
        asked = await assistant.ask("Tell me about the company", thread_id=thread)
        assert asked.token is not None
        replies += [asked, await assistant.clarify(asked.token, name)]
    else:
        replies.append(
            await assistant.ask(f"What's the latest news about {name}?", thread_id=thread)
        )
    if n % 3 == 1:
        replies.append(await assistant.ask("What about their stock?", thread_id=thread))
    return [(r.status, r.company, r.text.partition("\n")[0]) for r in replies]


def expected(n: int) -> list[tuple[str, str | None, str]]:
    """What conversation ``n`` must get: its own company in every answer."""
    _, company = COMPANIES[n % len(COMPANIES)]
    answer = ("answered", company, f"Here's what I found about {company}:")
    if n % 3 == 2:
        return [("needs_clarification", None, ASK_WHICH_COMPANY), answer]
    return [answer, answer] if n % 3 == 1 else [answer]


@pytest.mark.slow
async def test_thousand_concurrent_conversations(tmp_path: Path) -> None:
    """1,000 concurrent conversations: no error, no cross-talk, every checkpoint readable after."""
    directory = tmp_path / "store"
    assistant = ResearchAssistant(
        source=MockDataSource(delay=0.01),
        store=JsonFileCheckpointStore(directory, durability="none"),
    )
    started = time.monotonic()
    async with asyncio.timeout(BUDGET):
        results = await asyncio.gather(
            *(conversation(assistant, n) for n in range(CONVERSATIONS)), return_exceptions=True
        )
    errors = [(n, repr(r)) for n, r in enumerate(results) if isinstance(r, BaseException)]
    assert [] == errors[:5]
    wrong = [(n, r) for n, r in enumerate(results) if r != expected(n)]
    assert [] == wrong[:5]

    app = await assistant.graph()
    fresh = await ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(directory, durability="none")
    ).graph()
    checked = []
    for n in range(CONVERSATIONS):
        _, company = COMPANIES[n % len(COMPANIES)]
        turns = 2 if n % 3 else 1  # user messages: a clarification answer is one too
        for graph in (app, fresh):
            snapshot = await graph.get_state(f"load-{n}")
            assert snapshot is not None
            state: ResearchState = snapshot.state
            user = [m for m in state.messages if m.role == "user"]
            said = [m.content for m in state.messages if m.role == "assistant"]
            answers = [text for text in said if text != ASK_WHICH_COMPANY]  # the question back
            summary = (snapshot.status, state.detected_company, len(user), len(said))
            own = all(company in answer for answer in answers)
            checked.append(summary == ("completed", company, turns, 1 if n % 3 == 0 else 2) and own)
    assert [True] * (2 * CONVERSATIONS) == checked
    assert time.monotonic() - started < BUDGET
