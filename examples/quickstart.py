"""Quickstart: ask the research assistant one question, offline, with no API keys.

Run it with ``python examples/quickstart.py``.

It uses the default assistant: rule-based agents over the offline company
directory. Conversations are saved under ``$RESEARCH_FSM_HOME``; this example
points that at a temporary directory so it leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import os
import tempfile

from research_fsm import ResearchAssistant, configure_logging


async def main() -> None:
    configure_logging()  # warnings only, on stderr
    with tempfile.TemporaryDirectory() as home:
        os.environ["RESEARCH_FSM_HOME"] = home
        assistant = ResearchAssistant()
        reply = await assistant.ask("What's happening with Apple?", thread_id="quickstart")

    print(reply.text)
    print()
    print(f"company:    {reply.company}")
    print(f"confidence: {reply.confidence}/10")
    print(f"sources:    {', '.join(source.url for source in reply.sources)}")
    print(f"path:       {' -> '.join(reply.path)}")


if __name__ == "__main__":
    asyncio.run(main())
