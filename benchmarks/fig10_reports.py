"""Figure 10: company reports, the parallel specialists and a cold offline report.

* The real ``ResearchAssistant.report`` (its report graph, agents and default file
  store, fsync) with ``ReportLLM``, an implementation of the ``LLM`` protocol that
  waits 200 ms per call (``asyncio.sleep``) and answers with schema-valid facts
  citing a URL it was given, and ``ReportSource``, a web-like ``DataSource`` whose
  searches wait 100 ms (researcher), 150 ms (financial), 100 ms (market) and
  50 ms (product): the specialists differ, so "parallel" is checked against the
  slowest one. One iteration: the quality verdict is 90, 5 LLM calls.
* (a) The specialist phase (first specialist started -> last finished, from the
  progress events) against the slowest single specialist (its own timing).
* (b) Latency of the whole report against its critical path: researcher search
  + slowest specialist (search + LLM) + synthesiser LLM + quality LLM.
* (c) ``research-fsm report "Nvidia"`` offline from a cold process (a new
  ``RESEARCH_FSM_HOME`` each run, subprocess wall time, median of ``fig7_runs``),
  and the same with ``--pdf``.
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
from .fig7_startup import _wall, cli_command

TITLE = "Company reports: parallel specialists (simulated LLM 200 ms), cold offline report"
LLM_DELAY = 0.200
RESEARCH_DELAY = 0.100
SEARCH_DELAYS = {"financials": 0.150, "competitors": 0.100, "products": 0.050}
SPECIALISTS = ("financial", "market", "product")
GOAL_PARALLEL = 1.3
GOAL_OVERHEAD = 0.05
GOAL_COLD_S = 1.5
CALLS_PER_ITERATION = 5
COMPANY = "Example Corp"
URLS = {
    "overview": "https://example.com/about",
    "financials": "https://example.com/investors",
    "competitors": "https://example.com/market",
    "products": "https://example.com/products",
}
M = TypeVar("M", bound=BaseModel)


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


class ReportLLM(LLM):
    """The ``LLM`` protocol: a fixed delay per call, facts citing the first URL given."""

    model = "simulated"

    def __init__(self, delay: float = LLM_DELAY) -> None:
        self.delay = delay
        self.calls: Counter[str] = Counter()

    async def structured(self, *, agent: str, system: str, prompt: str, schema: type[M]) -> Any:
        from research_fsm.llm import StructuredReply, Usage

        await asyncio.sleep(self.delay)
        self.calls[agent] += 1
        if schema.__name__ == "Extraction":
            url = prompt.split('url="', 1)[1].split('"', 1)[0]  # the first <finding>'s
            facts = [
                {"label": f"{agent} fact {i}", "value": f"{agent} value {i}", "source_url": url}
                for i in range(4)
            ]
            value: BaseModel = schema.model_validate({"facts": facts})
        elif schema.__name__ == "Verdict":
            verdict = {"completeness": 36, "accuracy": 27, "depth": 27, "missing": []}
            value = schema.model_validate(verdict)
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
        text = f"{COMPANY} makes products, reports results and competes in its market."
        usage = Usage(input_tokens=_tokens(system + prompt), output_tokens=_tokens(text), calls=1)
        return TextReply(text=text, usage=usage)


class ReportSource(DataSource):
    """A web-like ``DataSource``: one page per intent, a fixed delay per intent."""

    name = "Simulated Search"

    def __init__(self) -> None:
        self.searches: Counter[str] = Counter()

    def is_available(self) -> bool:
        return True

    async def companies(self) -> Sequence[Any]:
        from research_fsm.sources import CompanyRef

        return [CompanyRef(name=COMPANY, aliases=["Example"], tickers=["EXMP"])]

    async def search(self, company: str, context: Any) -> Any:
        from research_fsm.sources import ResearchFindings, SearchResult, SourceRef

        intent = context.intent if context.intent in SEARCH_DELAYS else "overview"
        await asyncio.sleep(SEARCH_DELAYS.get(intent, RESEARCH_DELAY))
        self.searches[intent] += 1
        findings = ResearchFindings(
            company=COMPANY,
            overview=f"{COMPANY} is a company ({intent}).",
            # The page states what ReportLLM extracts: a fact is kept only when its value
            # is in the page it cites.
            key_developments=f"News about {intent}. Stated: "
            + ", ".join(f"{agent} value {i}" for agent in SPECIALISTS for i in range(4))
            + ".",
            sources=[SourceRef(title=f"{COMPANY} {intent}", url=URLS[intent])],
        )
        return SearchResult(findings=findings, confidence=9, source_name=self.name)


async def _measure(root: Path, reports: int) -> dict[str, Any]:
    from research_fsm import ResearchAssistant
    from research_fsm.assistant import DEFAULT_KEEP
    from research_fsm.reports import Report, ReportProgress
    from research_fsm.stores import JsonFileCheckpointStore

    llm, source = ReportLLM(), ReportSource()
    store = JsonFileCheckpointStore(root / "threads", keep=DEFAULT_KEEP)
    assistant = ResearchAssistant(llm=llm, source=source, store=store)
    await assistant.report(COMPANY, out=root / "warm-up")  # builds the graph and index
    runs: list[dict[str, Any]] = []
    for i in range(reports):
        calls_before = sum(llm.calls.values())
        first_start: float | None = None
        last_finish = 0.0
        report: Report | None = None
        t0 = time.perf_counter()
        async for event in assistant.stream_report(COMPANY, out=root / f"r{i}"):
            now = time.perf_counter()
            if isinstance(event, ReportProgress) and event.agent in SPECIALISTS:
                if not event.finished and first_start is None:
                    first_start = now
                if event.finished:
                    last_finish = now
            elif isinstance(event, Report):
                report = event
        latency = time.perf_counter() - t0
        if report is None or report.status != "completed" or first_start is None:
            raise AssertionError(f"no completed report: {report!r}")
        calls = sum(llm.calls.values()) - calls_before
        if report.iterations != 1 or calls != CALLS_PER_ITERATION:
            raise AssertionError(
                f"expected 1 iteration and {CALLS_PER_ITERATION} LLM calls; got "
                f"{report.iterations} and {calls}"
            )
        slowest = max(report.timings[name] for name in SPECIALISTS)
        critical = (
            RESEARCH_DELAY  # the researcher's search
            + max(SEARCH_DELAYS.values())  # the slowest specialist's search
            + LLM_DELAY  # and its LLM call
            + 2 * LLM_DELAY  # synthesiser, quality
        )
        runs.append(
            {
                "latency_s": latency,
                "critical_s": critical,
                "phase_s": last_finish - first_start,
                "slowest_s": slowest,
                "serial_s": sum(report.timings[n] for n in SPECIALISTS),
                "calls": calls,
                "cost_usd": report.cost_usd,
                "per_agent_calls": {a: u.calls for a, u in report.usage.items()},
            }
        )
    await assistant.aclose()
    return {
        "latency_s": median([r["latency_s"] for r in runs]),
        "critical_s": runs[0]["critical_s"],
        "phase_s": median([r["phase_s"] for r in runs]),
        "slowest_s": median([r["slowest_s"] for r in runs]),
        "serial_s": median([r["serial_s"] for r in runs]),
        "runs": runs,
    }


def run(sizes: Sizes, peer: bool) -> FigureResult:
    from ._common import quiet_logging

    quiet_logging()
    fig = FigureResult(10, TITLE)
    with temp_dir("fig10") as root:
        sim = asyncio.run(_measure(root, max(2, sizes.fig6_questions)))
    ratio = sim["phase_s"] / sim["slowest_s"]
    overhead = (sim["latency_s"] - sim["critical_s"]) / sim["critical_s"] * 100
    command = [*cli_command(), "report", "Nvidia"]
    cold_md = _wall(command, sizes.fig7_runs, check="report.md")
    cold_pdf = _wall([*command, "--pdf"], sizes.fig7_runs, check="report.pdf")
    holds, margin = at_most(ratio, GOAL_PARALLEL)
    fig.rows.append(
        Row(
            metric=f"specialist phase / slowest specialist ({sim['slowest_s'] * 1e3:.0f} ms)",
            unit="x",
            research_fsm=ratio,
            goal=f"≤ {GOAL_PARALLEL}x",
            holds=holds,
            margin=margin,
        )
    )
    holds, margin = at_most(overhead, GOAL_OVERHEAD * 100)
    fig.rows.append(
        Row(
            metric=f"report: engine + agents on top of the critical path "
            f"({sim['critical_s'] * 1e3:.0f} ms)",
            unit="%",
            research_fsm=overhead,
            goal="≤ 5%",
            holds=holds,
            margin=margin,
        )
    )
    holds, margin = at_most(cold_md, GOAL_COLD_S)
    fig.rows.append(
        Row(
            metric='cold offline `research-fsm report "Nvidia"` (Markdown)',
            unit="s",
            research_fsm=cold_md,
            goal=f"< {GOAL_COLD_S} s",
            holds=holds,
            margin=margin,
        )
    )
    fig.rows.append(
        Row(
            metric="what `--pdf` adds to the cold report",
            unit="s",
            research_fsm=cold_pdf - cold_md,
            goal="(reported)",
        )
    )
    fig.detail = {
        "simulated": sim,
        "cold_md_s": cold_md,
        "cold_pdf_s": cold_pdf,
        "llm_delay_s": LLM_DELAY,
        "search_delays_s": SEARCH_DELAYS,
    }
    fig.detail_md = [
        f"{len(sim['runs'])} simulated report(s), medians; {CALLS_PER_ITERATION} LLM calls per "
        "iteration (financial, market, product, synthesizer, quality).",
        "",
        *md_table(
            [
                "latency ms",
                "critical path ms",
                "specialist phase ms",
                "slowest specialist ms",
                "specialists if serial ms",
                "cold md s",
                "cold md+pdf s",
            ],
            [
                [
                    fmt(sim["latency_s"] * 1e3),
                    fmt(sim["critical_s"] * 1e3),
                    fmt(sim["phase_s"] * 1e3),
                    fmt(sim["slowest_s"] * 1e3),
                    fmt(sim["serial_s"] * 1e3),
                    fmt(cold_md),
                    fmt(cold_pdf),
                ]
            ],
        ),
    ]
    return fig
