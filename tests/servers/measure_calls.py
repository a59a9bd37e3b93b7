"""Claude calls per run, as the loopback stand-in counts them (requests received).

``python tests/servers/measure_calls.py`` from the top of the checkout prints the figures
of the call tables in docs/assistant.md, docs/reports.md and docs/deep-research.md: each
app runs with the real ``anthropic`` and ``tavily`` clients against ``FakeAnthropic`` and
``FakeTavily`` (scripted like the apps' SDK tests).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
HERE = str(TESTS / "servers")  # not on the path: its anthropic.py would shadow the SDK
sys.path[:] = [str(TESTS.parent), str(TESTS), *(p for p in sys.path if p != HERE)]
os.environ["RESEARCH_FSM_HOME"] = tempfile.mkdtemp()
for name in [
    n for n in os.environ if n.startswith(("ANTHROPIC_", "TAVILY_", "RESEARCH_FSM_MODEL"))
]:
    del os.environ[name]

from deep import test_deep_sdk as deep  # noqa: E402
from deep.conftest import BAELDUNG, PREPARING, SPRING, TOPIC  # noqa: E402
from reports import test_reports_sdk as reports  # noqa: E402

from research_fsm import ResearchAssistant  # noqa: E402
from research_fsm.engine import MemoryCheckpointStore  # noqa: E402
from research_fsm.llm import AnthropicLLM  # noqa: E402
from research_fsm.sources import MockDataSource  # noqa: E402
from servers import FakeAnthropic, FakeTavily  # noqa: E402
from servers import anthropic as api  # noqa: E402
from servers import tavily as tv  # noqa: E402


def qa_claude(body: dict[str, Any]) -> Any:
    """Claude for the Q&A: Apple's news, findings judged sufficient, a short answer."""
    if "tools" not in body:
        return api.text("Apple answer.")
    if "is_sufficient" in body["tools"][0]["input_schema"]["properties"]:
        return api.tool_use("respond", {"is_sufficient": True})
    verdict = {"is_clear": True, "detected_company": "Apple", "intent": "news"}
    return api.tool_use("respond", verdict)


async def qa() -> None:
    with FakeAnthropic() as server:
        server.auto(qa_claude)
        llm = AnthropicLLM(api_key="sk-ant-measure", base_url=server.url)
        for label, source in (
            ("clear question, confident findings", MockDataSource()),
            ("low confidence, one validator round", MockDataSource(fields={"stock_info"})),
        ):
            server.clear()
            assistant = ResearchAssistant(llm=llm, source=source, store=MemoryCheckpointStore())
            await assistant.ask("What's happening with Apple?", thread_id="measure")
            print(f"qa, {label}: {server.count()}")
        await llm.aclose()


async def report() -> None:
    with FakeAnthropic() as server, FakeTavily() as tavily:
        for scores in ([90], [60, 90]):
            server.clear()
            tavily.clear()
            server.auto(reports.claude(scores))
            tavily.auto(reports.search)
            done = await reports.assistant_on(server, tavily).report("Nvidia")
            print(f"report, {done.iterations} iteration(s): {server.count()}")


async def deep_research() -> None:
    with FakeAnthropic() as server, FakeTavily() as tavily:
        server.auto(deep.answer)
        pages = [deep.page(SPRING), deep.page(PREPARING), deep.page(BAELDUNG)]
        tavily.auto(lambda body: tv.results(pages))
        done = await deep.on_servers(server, tavily).deep_research(TOPIC)
        calls = done.llm_calls
        without = sum(calls.values()) - calls.get("verification", 0)
        print(f"deep research: {server.count()} {calls}; without verification: {without}")


async def main() -> None:
    await qa()
    await report()
    await deep_research()


if __name__ == "__main__":
    asyncio.run(main())
