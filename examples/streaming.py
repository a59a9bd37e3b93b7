"""Streaming: show each agent as it starts and the answer as it is written.

Run it with ``python examples/streaming.py``.

``assistant.stream(...)`` yields ``Progress`` when an agent starts, ``Token``
pieces of the answer while the synthesis agent writes it, and finally one
``Answer`` with the complete reply. ``contextlib.aclosing`` makes sure the run
is closed (and its thread released) even if the loop stops early. Uses the
``MockDataSource`` and a temporary store.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time

from research_fsm import (
    Answer,
    JsonFileCheckpointStore,
    Progress,
    ResearchAssistant,
    Token,
    configure_logging,
)
from research_fsm.sources import MockDataSource

MOCK_LABEL = (
    "mock data: the figures below come from MockDataSource, made up for this demo "
    "(not real market data)\n"
)


async def main() -> None:
    configure_logging()  # warnings only, on stderr
    question = "How is Microsoft's stock doing?"
    print(MOCK_LABEL)
    with tempfile.TemporaryDirectory() as directory:
        assistant = ResearchAssistant(
            source=MockDataSource(), store=JsonFileCheckpointStore(directory)
        )
        print(f"user: {question}\n")
        started = time.perf_counter()
        tokens = 0
        events = assistant.stream(question, thread_id="streaming")
        async with contextlib.aclosing(events) as stream:
            async for event in stream:
                elapsed = time.perf_counter() - started
                if isinstance(event, Progress):
                    print(f"[{elapsed * 1000:6.1f} ms] {event.agent:<10} {event.message}")
                elif isinstance(event, Token):
                    if tokens == 0:
                        print()
                    tokens += 1
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                elif isinstance(event, Answer):
                    reply = event.reply
                    print("\n")
                    print(f"[{elapsed * 1000:6.1f} ms] done: {tokens} tokens streamed")
                    print(
                        f"status: {reply.status}, company: {reply.company}, "
                        f"confidence: {reply.confidence}/10"
                    )


if __name__ == "__main__":
    asyncio.run(main())
