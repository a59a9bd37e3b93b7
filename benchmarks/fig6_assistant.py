"""Figure 6: the assistant end to end with a simulated LLM and data source.

The real ``ResearchAssistant`` (its graph, agents and default file store:
``JsonFileCheckpointStore(..., keep=24)``, fsync) with ``SimulatedLLM``, an
implementation of the ``LLM`` protocol that waits 200 ms per call
(``asyncio.sleep``), and ``SimulatedSource``, a ``DataSource`` that waits
100 ms per search. Latency per question is compared with its critical path:
the sum of the delays of the external calls it made (they are sequential on
these paths). Paths:

* happy: "What's happening with Apple?" -> clarity, research, synthesis (2 LLM calls)
* clarification: "Tell me about the company", then "Apple" (ask + clarify, 3 calls)
* retry: the source answers with low confidence -> research/validator x3 (5 calls)

The happy path must make exactly 2 LLM calls: anything else fails the figure.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from research_fsm.llm import LLM
from research_fsm.sources import DataSource

from ._common import FigureResult, Row, Sizes, at_most, fmt, md_table, median, temp_dir

TITLE = "The assistant end to end, simulated LLM (200 ms) and search (100 ms)"
LLM_DELAY = 0.200
SEARCH_DELAY = 0.100
GOAL_OVERHEAD = 0.05
M = TypeVar("M", bound=BaseModel)

ANSWER_TEXT = (
    "Apple Inc. announced new products this quarter and its services revenue keeps growing. "
    "The company trades on NASDAQ as AAPL. Recent news covers the product launches, the "
    "services business and the leadership team's plans for the next year."
)


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


class SimulatedLLM(LLM):
    """The ``LLM`` protocol with a fixed delay per call and canned, schema-valid answers."""

    model = "simulated"

    def __init__(self, delay: float = LLM_DELAY) -> None:
        self.delay = delay
        self.calls: Counter[str] = Counter()

    async def structured(self, *, agent: str, system: str, prompt: str, schema: type[M]) -> Any:
        from research_fsm.llm import StructuredReply, Usage

        await asyncio.sleep(self.delay)
        self.calls[agent] += 1
        value: BaseModel
        if schema.__name__ == "ClarityVerdict":
            # The latest query, inside its <question> fence.
            latest = prompt.rsplit("Latest query:", 1)[-1].split("</question>", 1)[0]
            if "apple" in latest.lower():
                value = schema.model_validate(
                    {
                        "is_clear": True,
                        "detected_company": "Apple Inc.",
                        "intent": "news",
                        "reasoning": "names Apple",
                    }
                )
            else:
                value = schema.model_validate(
                    {
                        "is_clear": False,
                        "clarification_needed": "Which company would you like me to research?",
                        "reasoning": "no company named",
                    }
                )
        elif schema.__name__ == "ValidationVerdict":
            value = schema.model_validate(
                {
                    "is_sufficient": False,
                    "feedback": "no recent news; search for the latest news",
                    "reasoning": "thin findings",
                }
            )
        else:
            raise AssertionError(f"unexpected schema {schema.__name__} from agent {agent}")
        usage = Usage(
            input_tokens=_tokens(system + prompt),
            output_tokens=_tokens(value.model_dump_json()),
            calls=1,
        )
        return StructuredReply(value=value, usage=usage)

    async def generate(
        self,
        *,
        agent: str,
        system: str,
        prompt: str,
        on_token: Callable[[str], None] | None = None,
    ) -> Any:
        from research_fsm.llm import TextReply, Usage

        await asyncio.sleep(self.delay)
        self.calls[agent] += 1
        if on_token is not None:
            for piece in ANSWER_TEXT.split(" "):
                on_token(piece + " ")
        usage = Usage(
            input_tokens=_tokens(system + prompt), output_tokens=_tokens(ANSWER_TEXT), calls=1
        )
        return TextReply(text=ANSWER_TEXT, usage=usage)


class SimulatedSource(DataSource):
    """A ``DataSource`` that knows Apple and waits ``delay`` per search."""

    name = "Simulated Search"

    def __init__(self, confidence: int, delay: float = SEARCH_DELAY) -> None:
        self.confidence = confidence
        self.delay = delay
        self.searches = 0

    def is_available(self) -> bool:
        return True

    async def companies(self) -> Sequence[Any]:
        from research_fsm.sources import CompanyRef

        return [CompanyRef(name="Apple Inc.", aliases=["Apple"], tickers=["AAPL"])]

    async def search(self, company: str, context: Any) -> Any:
        from research_fsm.sources import ResearchFindings, SearchResult, SourceRef

        await asyncio.sleep(self.delay)
        self.searches += 1
        findings = ResearchFindings(
            company="Apple Inc.",
            recent_news="Apple announced new products this quarter.",
            key_developments="Services revenue keeps growing.",
            overview="Apple designs phones, computers and services.",
            stock_info="AAPL trades on NASDAQ.",
            sources=[
                SourceRef(title="Apple newsroom", url="https://www.apple.com/newsroom/"),
                SourceRef(
                    title="Apple Inc. - Wikipedia", url="https://en.wikipedia.org/wiki/Apple_Inc."
                ),
            ],
        )
        return SearchResult(findings=findings, confidence=self.confidence, source_name=self.name)


PATHS: dict[str, dict[str, Any]] = {
    "happy": {"confidence": 9, "calls": 2, "path": ["clarity", "research", "synthesis"]},
    "clarification": {
        "confidence": 9,
        "calls": 3,
        "path": ["interrupt", "clarity", "research", "synthesis"],
    },
    "retry": {
        "confidence": 3,
        "calls": 5,
        "path": ["clarity"] + ["research", "validator"] * 3 + ["synthesis"],
    },
}


async def _measure_path(path: str, root: Path, questions: int) -> dict[str, Any]:
    from research_fsm import ResearchAssistant
    from research_fsm.assistant import DEFAULT_KEEP
    from research_fsm.stores import JsonFileCheckpointStore

    llm = SimulatedLLM()
    source = SimulatedSource(PATHS[path]["confidence"])
    store = JsonFileCheckpointStore(root / path / "threads", keep=DEFAULT_KEEP)
    assistant = ResearchAssistant(llm=llm, source=source, store=store)
    t0 = time.perf_counter()
    await assistant.ask("What's happening with Apple?", thread_id="warm-up")  # builds the graph
    first_question = time.perf_counter() - t0
    first_question -= sum(llm.calls.values()) * LLM_DELAY + source.searches * SEARCH_DELAY
    latencies, criticals, usages, paths = [], [], [], []
    for i in range(questions):
        calls_before, searches_before = sum(llm.calls.values()), source.searches
        t0 = time.perf_counter()
        if path == "clarification":
            asked = await assistant.ask("Tell me about the company", thread_id=f"q{i}")
            if asked.status != "needs_clarification" or asked.token is None:
                raise AssertionError(
                    f"clarification path: the assistant did not ask back: {asked.text!r}"
                )
            reply = await assistant.clarify(asked.token, "Apple")
            replies = [asked, reply]
        else:
            reply = await assistant.ask("What's happening with Apple?", thread_id=f"q{i}")
            replies = [reply]
        latencies.append(time.perf_counter() - t0)
        calls = sum(llm.calls.values()) - calls_before
        searches = source.searches - searches_before
        criticals.append(calls * LLM_DELAY + searches * SEARCH_DELAY)
        if reply.status != "answered":
            raise AssertionError(f"{path} path: no answer: {reply.text!r}")
        # The final reply's usage covers the whole question (a clarification's
        # reply includes the call that asked back).
        usages.append(
            {
                "calls": sum(u.calls for u in reply.usage.values()),
                "calls_seen_by_llm": calls,
                "searches": searches,
                "input_tokens": sum(u.input_tokens for u in reply.usage.values()),
                "output_tokens": sum(u.output_tokens for u in reply.usage.values()),
                "per_agent": {a: u.calls for a, u in reply.usage.items()},
                "asked_back_usage_calls": sum(u.calls for u in replies[0].usage.values())
                if len(replies) > 1
                else None,
            }
        )
        paths.append(reply.path)
    expected_calls = PATHS[path]["calls"]
    for usage, taken in zip(usages, paths, strict=True):  # fail loudly
        if taken != PATHS[path]["path"]:
            raise AssertionError(f"{path} path: agents ran {taken}, expected {PATHS[path]['path']}")
        if path == "happy" and (usage["calls"] != 2 or usage["calls_seen_by_llm"] != 2):
            raise AssertionError(
                f"the happy path must take exactly 2 LLM calls; it took {usage['calls']} "
                f"(reported in reply.usage) / {usage['calls_seen_by_llm']} (seen by the LLM): "
                f"{usage['per_agent']}"
            )
        if usage["calls_seen_by_llm"] != expected_calls or usage["calls"] != expected_calls:
            raise AssertionError(
                f"{path} path: {usage['calls_seen_by_llm']} LLM calls "
                f"({usage['calls']} in reply.usage), expected {expected_calls}"
            )
    await assistant.aclose()
    latency, critical = median(latencies), median(criticals)
    return {
        "latency_ms": latency * 1e3,
        "critical_ms": critical * 1e3,
        "overhead_ms": (latency - critical) * 1e3,
        "overhead_pct": (latency - critical) / critical * 100,
        "latencies_ms": [x * 1e3 for x in latencies],
        "first_question_overhead_ms": first_question * 1e3,
        "usage": usages[0],
        "path": paths[0],
    }


async def _all(root: Path, questions: int) -> dict[str, dict[str, Any]]:
    return {path: await _measure_path(path, root, questions) for path in PATHS}


def run(sizes: Sizes, peer: bool) -> FigureResult:
    from ._common import quiet_logging

    quiet_logging()
    fig = FigureResult(6, TITLE)
    with temp_dir("fig6") as root:
        results = asyncio.run(_all(root, sizes.fig6_questions))
    for path, r in results.items():
        holds, margin = at_most(r["overhead_pct"], GOAL_OVERHEAD * 100)
        fig.rows.append(
            Row(
                metric=f"{path}: engine + agents on top of the critical path "
                f"({r['critical_ms']:.0f} ms)",
                unit="%",
                research_fsm=r["overhead_pct"],
                goal="≤ 5%",
                holds=holds,
                margin=margin,
            )
        )
    happy = results["happy"]["usage"]["calls"]
    fig.rows.append(
        Row(
            metric="LLM calls, happy path",
            unit="calls",
            research_fsm=float(happy),
            goal="exactly 2",
            holds=happy == 2,
            margin="yes" if happy == 2 else "no",
        )
    )
    table = [
        [
            path,
            fmt(r["latency_ms"]),
            fmt(r["critical_ms"]),
            fmt(r["overhead_ms"]),
            f"{r['overhead_pct']:.2f}%",
            r["usage"]["calls"],
            r["usage"]["searches"],
            f"{r['usage']['input_tokens']:,}",
            f"{r['usage']['output_tokens']:,}",
            " -> ".join(r["path"]),
        ]
        for path, r in results.items()
    ]
    fig.detail = {
        "questions_per_path": sizes.fig6_questions,
        "llm_delay_s": LLM_DELAY,
        "search_delay_s": SEARCH_DELAY,
        "paths": results,
    }
    fig.detail_md = [
        f"{sizes.fig6_questions} question(s) per path, medians; a new conversation per question; "
        "clarification = ask + clarify. Calls and tokens: the final reply's `reply.usage` (the whole "
        "question), checked against the calls the simulated LLM received; tokens are its count "
        "(4 characters per token) of the prompts the agents built and of its answers.",
        "",
        *md_table(
            [
                "path",
                "latency ms",
                "critical path ms",
                "overhead ms",
                "overhead",
                "LLM calls",
                "searches",
                "tokens in",
                "tokens out",
                "agents",
            ],
            table,
        ),
        "",
        "Overhead of the first question of a new assistant (builds the graph and the company "
        "index, loads the token counter): "
        + ", ".join(f"{p} {fmt(r['first_question_overhead_ms'], 'ms')}" for p, r in results.items())
        + ".",
    ]
    return fig
