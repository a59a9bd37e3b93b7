"""Clarification: the assistant asks back, and the answer arrives after a "restart".

Run it with ``python examples/clarification.py``.

A vague question suspends the conversation and returns a resume token, a plain
string a web client could keep. A brand-new ``ResearchAssistant`` over a
``JsonFileCheckpointStore`` on the same directory (as after a process restart)
then resumes the conversation with that string. The store lives in a temporary
directory that is removed at the end.
"""

from __future__ import annotations

import asyncio
import tempfile

from research_fsm import JsonFileCheckpointStore, ResearchAssistant, configure_logging


async def main() -> None:
    configure_logging()  # warnings only, on stderr
    with tempfile.TemporaryDirectory() as directory:
        first = ResearchAssistant(store=JsonFileCheckpointStore(directory))
        question = "Tell me about the company"
        reply = await first.ask(question, thread_id="clarify-demo")
        print(f"user:      {question}")
        print(f"status:    {reply.status}")
        print(f"assistant: {reply.text}")
        if reply.token is None:
            raise SystemExit("expected the assistant to ask back")
        token: str = reply.token  # what a web client would store and send back
        print(f"token:     {token}")
        del first  # the process "restarts": nothing survives but the files

        second = ResearchAssistant(store=JsonFileCheckpointStore(directory))
        answer = await second.clarify(token, "Apple")
        print()
        print("user:      Apple")
        print(f"status:    {answer.status}")
        print(f"company:   {answer.company} (confidence {answer.confidence}/10)")
        print(f"path:      {' -> '.join(answer.path)}")
        print("assistant:")
        print(answer.text)


if __name__ == "__main__":
    asyncio.run(main())
