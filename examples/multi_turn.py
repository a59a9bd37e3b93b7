"""Multi-turn: follow-up questions remember the company being discussed.

Run it with ``python examples/multi_turn.py``.

One conversation (one ``thread_id``) over the deterministic ``MockDataSource``:
Apple, then "their stock" (still Apple), then Tesla, then a comparison with
Apple. The conversation is stored in a temporary directory.
"""

from __future__ import annotations

import asyncio
import tempfile

from research_fsm import JsonFileCheckpointStore, ResearchAssistant, configure_logging
from research_fsm.sources import MockDataSource

MOCK_LABEL = (
    "mock data: the figures below come from MockDataSource, made up for this demo "
    "(not real market data)\n"
)

QUESTIONS = (
    "What's happening with Apple?",
    "What about their stock?",
    "Now tell me about Tesla",
    "Compare them to Apple",
)


async def main() -> None:
    configure_logging()  # warnings only, on stderr
    print(MOCK_LABEL)
    with tempfile.TemporaryDirectory() as directory:
        assistant = ResearchAssistant(
            source=MockDataSource(), store=JsonFileCheckpointStore(directory)
        )
        for number, question in enumerate(QUESTIONS, start=1):
            reply = await assistant.ask(question, thread_id="multi-turn")
            others = reply.state.comparison_companies
            about = " and ".join([reply.company or "?", *others])
            print(f"[{number}] user: {question}")
            print(f"    about: {about} (confidence {reply.confidence}/10)")
            for line in [line for line in reply.text.splitlines() if line][:3]:
                print(f"    | {line}")
            print()
        history = await assistant.history("multi-turn")
        print(f"The thread holds {len(history)} messages.")


if __name__ == "__main__":
    asyncio.run(main())
