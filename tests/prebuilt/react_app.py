"""The three-tool ReAct agent of ``test_react``, built the same way in the test and
in the process that resumes it: ``python -m tests.prebuilt.react_app DIR URL TOKEN
EDITED`` resumes the pause with the edited tool call and prints the final messages."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from research_fsm.engine import Command, CompiledGraph
from research_fsm.llm import AnthropicLLM
from research_fsm.prebuilt import MessagesState, create_react_agent
from research_fsm.stores import JsonFileCheckpointStore

UNIT_PRICES = {"apple": 0.5, "pear": 0.75}


async def price(item: str, count: int) -> float:
    """The price in USD of ``count`` of ``item``."""
    return UNIT_PRICES[item] * count


def total(amounts: list[float]) -> float:
    """The sum of the amounts."""
    return round(sum(amounts), 2)


def to_eur(usd: float) -> float:
    """An amount in USD converted to EUR."""
    return round(usd * 0.9, 2)


def build(directory: str, url: str) -> tuple[CompiledGraph[MessagesState], AnthropicLLM]:
    """The agent on a file store in ``directory``, asking the Messages API at ``url``."""
    llm = AnthropicLLM(api_key="sk-ant-test-key-123456", base_url=url, max_attempts=1)
    store = JsonFileCheckpointStore(directory)
    agent = create_react_agent(llm, [price, total, to_eur], store=store, interrupt_before=["tools"])
    return agent, llm


async def _resume(directory: str, url: str, token: str, edited: dict[str, Any]) -> None:
    agent, llm = build(directory, url)
    try:
        result = await agent.resume(token, Command(update={"messages": [edited]}))
        while result.status == "suspended":  # the later pauses before tools: go on
            assert result.suspension is not None
            result = await agent.resume(result.suspension.token, None)
        print(json.dumps({"status": result.status, "messages": result.state.messages}))
    finally:
        await llm.aclose()


if __name__ == "__main__":
    asyncio.run(_resume(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
