"""Figure 11: deep research, the parallel analyses, LLM calls per stage, local documents.

* The real ``ResearchAssistant.stream_deep_research`` (its deep-research graph, nodes,
  session files and a ``JsonFileCheckpointStore`` with fsync) with ``DeepLLM``, an
  implementation of the ``LLM`` protocol that waits 200 ms per call (``asyncio.sleep``;
  the analyses of S1/S2/S3/S4 wait 150/250/350/200 ms, so "parallel" is checked against
  the slowest) and answers every schema validly, quoting sentences copied from the
  ``<source>`` blocks of its prompt, and ``StaticSearch`` (web mode, 100 ms per search)
  over five pages: four about the topic, one about pasta.
* (a) The deep-analysis phase (first ``deep_analysis`` branch started -> last finished,
  from the ``DeepProgress`` events) against the slowest single analysis (350 ms).
* (b) Latency of the whole session (``stream_deep_research`` to its report) against its
  critical path: query LLM + search + relevance LLM + slowest analysis + synthesis LLM +
  verification LLM. Everything else (graph, checkpoints with fsync, session files,
  ``report.md``) is the overhead.
* (c) LLM calls per stage and per report, without verification against the seed's
  pipeline (6-7), and what verification adds: one call a round, and a session whose
  first draft holds one made-up claim (verification fails, the gap round runs).
* (d) Local documents: ``benchmarks.documents.measure`` (index a 1,000-file / 20 MB
  corpus cold, query it, reopen it warm) and the cold offline
  ``research-fsm deep TOPIC --docs DIR`` over a small folder, when those modules exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from research_fsm.llm import LLM

from ._common import FigureResult, Row, Sizes, at_most, fmt, md_table, median, temp_dir
from .fig7_startup import _wall, cli_command

TITLE = "Deep research: parallel analyses (simulated LLM 200 ms), LLM calls, local documents"
LLM_DELAY = 0.200
SEARCH_DELAY = 0.100
ANALYSIS_DELAYS = {"S1": 0.150, "S2": 0.250, "S3": 0.350, "S4": 0.200}
"""Seconds each source's analysis waits (S4 is analysed only in the gap round)."""
GOAL_PARALLEL = 1.3
GOAL_OVERHEAD = 0.05
SEED_CALLS = 7
"""LLM calls of the seed's pipeline per report (6-7; the upper end is the goal)."""
STAGE_ORDER = ("query_parser", "relevance_filter", "deep_analysis", "synthesis", "verification")
TOPIC = "Spring Boot 2 to 3 migration"
MADE_UP = "Spring Boot 3 compiles every bean to WebAssembly at start-up."
"""The claim the failing scenario's first draft adds (no source says it)."""
DOCS_SNIPPET = "Spring Boot 2 to 3 migration"
M = TypeVar("M", bound=BaseModel)

_SOURCE = re.compile(r'<source id="(S\d+)"([^>]*)>\n(.*?)\n</source>', re.S)
_CLAIM = re.compile(r"^(C\d+): (.*) \(cites (.*)\)$", re.M)
_FACT = re.compile(r"^- \((step|finding|caveat)\) (.*) \[(S\d+)\]$", re.M)


def _page(title: str, slug: str, text: str) -> Any:
    from research_fsm.deep import Found

    return Found(kind="web", title=title, locator=f"https://example.com/{slug}", text=text)


def corpus() -> list[Any]:
    """Four pages holding every term of ``TOPIC`` (the first search finds them all) and
    one that does not."""
    return [
        _page(
            "Spring Boot 2 to 3 migration guide",
            "guide",
            "Spring Boot 3.0 requires Java 17 as a minimum version. Upgrade to the latest "
            "2.7.x release before you start the migration.",
        ),
        _page(
            "Jakarta EE in the Spring Boot 2 to 3 migration",
            "jakarta",
            "Spring Boot 3.0 has upgraded to Jakarta EE 10 APIs. Replace javax imports with "
            "jakarta imports in every module.",
        ),
        _page(
            "Security changes in the Spring Boot 2 to 3 migration",
            "security",
            "WebSecurityConfigurerAdapter was removed in Spring Security 6. Declare a "
            "SecurityFilterChain bean to configure security instead.",
        ),
        _page(
            "Properties in the Spring Boot 2 to 3 migration",
            "properties",
            "Renamed configuration properties are reported by the "
            "spring-boot-properties-migrator module. Remove the module once the migration "
            "is done.",
        ),
        _page("Cooking pasta", "pasta", "Boil water and add salt. Pasta cooks in ten minutes."),
    ]


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _terms(text: str) -> set[str]:
    from research_fsm.deep._text import terms

    return set(terms(text))


class DeepLLM(LLM):
    """The ``LLM`` protocol: a fixed delay per call (per source for the analyses) and
    honest, schema-valid answers read from the prompt: the first sentence of a source as
    its fact, quotes copied from the ``<source>`` blocks.

    Args:
        made_up: how many first drafts get ``MADE_UP`` as an extra caveat citing S1.
    """

    model = "simulated"

    def __init__(self, *, made_up: int = 0) -> None:
        self.made_up = made_up
        self.calls: Counter[str] = Counter()

    async def structured(self, *, agent: str, system: str, prompt: str, schema: type[M]) -> Any:
        from research_fsm.deep import _claude as claude
        from research_fsm.deep._text import sentences
        from research_fsm.llm import StructuredReply, Usage

        found = _SOURCE.findall(prompt)
        blocks = {sid: text for sid, _, text in found}
        delay = LLM_DELAY
        answer: dict[str, Any]
        if schema is claude.EnhancedQuery:
            lines = prompt.splitlines()
            gaps = [line[2:] for line in lines if line.startswith("- ")]
            topic = re.search(r"<topic>\n(.*?)\n</topic>", prompt, re.S)
            answer = {"query": gaps[0] if gaps else topic.group(1) if topic else lines[0]}
        elif schema is claude.RatedSources:
            answer = {
                "results": [
                    {"id": sid, "score": round(0.95 - 0.05 * int(sid[1:]), 2), "reason": "on topic"}
                    if "spring" in f"{head} {text}".lower()
                    else {"id": sid, "score": 0.1, "reason": "off topic"}
                    for sid, head, text in found
                ]
            }
        elif schema is claude.SourceFacts:
            ((sid, text),) = blocks.items()
            delay = ANALYSIS_DELAYS.get(sid, LLM_DELAY)
            first = sentences(text)[0].text
            answer = {"facts": [{"kind": "finding", "statement": first, "quote": first}]}
        elif schema is claude.ProposedQuotes:
            answer = {
                "quotes": [
                    self._quote(cid, claim, cites, blocks)
                    for cid, claim, cites in _CLAIM.findall(prompt)
                ]
            }
        else:
            raise AssertionError(f"unexpected schema {schema.__name__} from agent {agent}")
        await asyncio.sleep(delay)
        self.calls[agent] += 1
        value = schema.model_validate(answer)
        usage = Usage(
            input_tokens=_tokens(system + prompt),
            output_tokens=_tokens(value.model_dump_json()),
            calls=1,
        )
        return StructuredReply(value=value, usage=usage)

    @staticmethod
    def _quote(cid: str, claim: str, cites: str, blocks: dict[str, str]) -> dict[str, Any]:
        """The sentence of a cited source holding most of the claim's terms (>= 60%)."""
        from research_fsm.deep._text import sentences

        wanted = _terms(claim)
        best: tuple[float, str | None, str | None] = (0.0, None, None)
        for sid in (c.strip() for c in cites.split(",")):
            for sentence in sentences(blocks.get(sid, "")):
                score = len(wanted & _terms(sentence.text)) / max(len(wanted), 1)
                if score > best[0]:
                    best = (score, sentence.text, sid)
        if best[0] < 0.6:
            return {"claim": cid, "source": None, "quote": None}
        return {"claim": cid, "source": best[2], "quote": best[1]}

    async def generate(
        self,
        *,
        agent: str,
        system: str,
        prompt: str,
        on_token: Callable[[str], None] | None = None,
    ) -> Any:
        from research_fsm.llm import TextReply, Usage

        facts = _FACT.findall(prompt)
        summary = " ".join(f"{statement} [{sid}]" for _, statement, sid in facts)
        text = f"## Summary\n{summary}\n"
        if self.made_up > 0:
            self.made_up -= 1
            text += f"## Caveats\n- {MADE_UP} [S1]\n"
        await asyncio.sleep(LLM_DELAY)
        self.calls[agent] += 1
        if on_token is not None:
            for line in text.splitlines(keepends=True):
                on_token(line)
        usage = Usage(input_tokens=_tokens(system + prompt), output_tokens=_tokens(text), calls=1)
        return TextReply(text=text, usage=usage)


@contextlib.contextmanager
def _home(path: Path) -> Iterator[None]:
    """``RESEARCH_FSM_HOME`` (where the session folders go) set to ``path`` for a while."""
    before = os.environ.get("RESEARCH_FSM_HOME")
    os.environ["RESEARCH_FSM_HOME"] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RESEARCH_FSM_HOME", None)
        else:
            os.environ["RESEARCH_FSM_HOME"] = before


CRITICAL_S = (
    LLM_DELAY  # query parser
    + SEARCH_DELAY  # search
    + LLM_DELAY  # relevance filter
    + max(ANALYSIS_DELAYS[s] for s in ("S1", "S2", "S3"))  # the slowest analysis
    + LLM_DELAY  # synthesis
    + LLM_DELAY  # verification
)


def _union(spans: list[tuple[float, float, str]]) -> float:
    """Seconds covered by at least one of ``spans`` (parallel branches overlap)."""
    covered, reach = 0.0, float("-inf")
    for start, end, _ in sorted(spans):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered


async def _session(assistant: Any, llm: DeepLLM) -> dict[str, Any]:
    """One session, timed from its events; its report checked for grounding."""
    from research_fsm.deep import DeepProgress, ResearchReport, grounding_problems

    before = Counter(llm.calls)
    starts: dict[tuple[str, str | None], float] = {}
    nodes: list[tuple[float, float, str]] = []
    first_event = 0.0
    report: ResearchReport | None = None
    t0 = time.perf_counter()
    async for event in assistant.stream_deep_research(TOPIC):
        now = time.perf_counter() - t0
        first_event = first_event or now
        if isinstance(event, DeepProgress):
            key = (event.stage, event.branch)
            if not event.finished:
                starts[key] = now
            else:
                nodes.append((starts.pop(key), now, event.stage))
        elif isinstance(event, ResearchReport):
            report = event
    latency = time.perf_counter() - t0
    spans = [(start, end) for start, end, stage in nodes if stage == "deep_analysis"]
    if report is None or report.status != "completed" or not spans:
        raise AssertionError(f"no completed deep-research report: {report!r}")
    problems = grounding_problems(report.folder) if report.folder else ["no session folder"]
    if problems:
        raise AssertionError(f"the report is not grounded: {problems}")
    counted = Counter(llm.calls)
    counted.subtract(before)
    if report.llm_calls != {k: v for k, v in counted.items() if v}:
        raise AssertionError(f"usage {report.llm_calls} != calls made {dict(counted)}")
    round0 = sorted(spans)[:3]
    return {
        "latency_s": latency,
        "outside_nodes_s": latency - _union(nodes),
        "before_first_node_s": first_event,
        "report_node_s": sum(end - start for start, end, stage in nodes if stage == "report"),
        "phase_s": max(end for _, end in round0) - min(start for start, _ in round0),
        "slowest_measured_s": max(end - start for start, end in round0),
        "analyses": len(spans),
        "calls": dict(report.llm_calls),
        "total_calls": sum(report.llm_calls.values()),
        "verification": dict(report.verification),
        "timings": dict(report.timings),
        "cost_usd": report.cost_usd,
    }


async def _measure(root: Path, sessions: int, failing: int) -> dict[str, Any]:
    from research_fsm import ResearchAssistant
    from research_fsm.assistant import DEFAULT_KEEP
    from research_fsm.deep import StaticSearch
    from research_fsm.stores import JsonFileCheckpointStore

    llm = DeepLLM()
    search = StaticSearch(corpus(), mode="web", latency=SEARCH_DELAY)
    store = JsonFileCheckpointStore(root / "threads", keep=DEFAULT_KEEP)
    assistant = ResearchAssistant(llm=llm, store=store, web_search=search)
    out: dict[str, Any] = {}
    with _home(root / "home"):
        await _session(assistant, llm)  # builds the graph
        for name, made_up, count in (("pass", 0, sessions), ("gap", 1, failing)):
            runs = []
            for _ in range(count):
                llm.made_up = made_up
                runs.append(await _session(assistant, llm))
            out[name] = runs
    await assistant.aclose()
    for run in out["pass"]:
        if run["verification"].get("rounds") != 1 or not run["verification"].get("passed"):
            raise AssertionError(f"expected one passing verification round: {run['verification']}")
    for run in out["gap"]:
        if run["verification"].get("rounds") != 2:
            raise AssertionError(f"expected a gap round: {run['verification']}")
    return out


# -- local documents ---------------------------------------------------------------


def _documents(quick: bool) -> tuple[dict[str, float] | None, str | None]:
    """``benchmarks.documents.measure(quick)``, or why it could not run."""
    name = f"{__package__}.documents"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None, "n/a (benchmarks.documents missing)"
    return {str(k): float(v) for k, v in module.measure(quick).items()}, None


def _unit(key: str) -> tuple[str, float]:
    """A measure key's unit and the factor to it (``index_s`` -> s, ``query_ms`` -> ms)."""
    if key.endswith("_ms"):
        return "ms", 1.0
    if key.endswith("_s"):
        return ("ms", 1e3) if "query" in key else ("s", 1.0)
    return "", 1.0


def _docs_folder(folder: Path, files: int) -> Path:
    """A small folder of Markdown notes about ``TOPIC`` (the CLI's offline input)."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = [p for p in corpus() if "migration" in p.title.lower()]
    for i in range(files):
        page = pages[i % len(pages)]
        (folder / f"note-{i:03d}.md").write_text(
            f"# {page.title}\n\n{page.text}\n\nNote {i} on the {DOCS_SNIPPET}.\n", encoding="utf-8"
        )
    return folder


def _cold_cli(runs: int, files: int) -> tuple[float | None, str | None]:
    """Median wall time of a cold ``research-fsm deep TOPIC --docs DIR`` (offline)."""
    if importlib.util.find_spec("research_fsm.documents") is None:
        return None, "n/a (research_fsm.documents missing)"
    with temp_dir("fig11-docs") as root:
        folder = _docs_folder(root / "notes", files)
        command = [*cli_command(), "deep", TOPIC, "--docs", str(folder)]
        return _wall(command, runs, check="session"), None


# -- the figure --------------------------------------------------------------------


def _calls_table(passing: dict[str, Any], gap: dict[str, Any]) -> list[str]:
    def without(calls: dict[str, int]) -> int:
        return sum(n for stage, n in calls.items() if stage != "verification")

    rows = []
    for stage in STAGE_ORDER:
        a, b = passing["calls"].get(stage, 0), gap["calls"].get(stage, 0)
        rows.append([stage, a, b])
    rows.append(["**per report**", passing["total_calls"], gap["total_calls"]])
    rows.append(
        ["per report without verification", without(passing["calls"]), without(gap["calls"])]
    )
    rows.append(
        ["verification rounds", passing["verification"]["rounds"], gap["verification"]["rounds"]]
    )
    return md_table(["stage", "verified at once (1 round)", "first draft fails (gap round)"], rows)


def run(sizes: Sizes, peer: bool) -> FigureResult:
    from ._common import QUICK, quiet_logging

    quiet_logging()
    quick = sizes is QUICK
    fig = FigureResult(11, TITLE)
    with temp_dir("fig11") as root:
        sim = asyncio.run(_measure(root, max(2, sizes.fig6_questions), 1 if quick else 3))
    passing, gap = sim["pass"], sim["gap"]
    latency = median([r["latency_s"] for r in passing])
    phase = median([r["phase_s"] for r in passing])
    slowest_measured = median([r["slowest_measured_s"] for r in passing])
    slowest = max(ANALYSIS_DELAYS[s] for s in ("S1", "S2", "S3"))
    overhead = (latency - CRITICAL_S) / CRITICAL_S * 100
    gap_latency = median([r["latency_s"] for r in gap])
    outside = median([r["outside_nodes_s"] for r in passing])
    before = median([r["before_first_node_s"] for r in passing])
    calls = passing[0]["calls"]
    calls_total = passing[0]["total_calls"]
    calls_without = calls_total - calls.get("verification", 0)
    gap_calls = gap[0]["total_calls"]

    holds, margin = at_most(phase / slowest, GOAL_PARALLEL)
    fig.rows.append(
        Row(
            metric=f"deep-analysis phase (3 sources in parallel) / slowest analysis "
            f"({slowest * 1e3:.0f} ms)",
            unit="x",
            research_fsm=phase / slowest,
            goal=f"≤ {GOAL_PARALLEL}x",
            holds=holds,
            margin=margin,
        )
    )
    holds, margin = at_most(overhead, GOAL_OVERHEAD * 100)
    fig.rows.append(
        Row(
            metric=f"session: engine + nodes + files on top of the critical path "
            f"({CRITICAL_S * 1e3:.0f} ms)",
            unit="%",
            research_fsm=overhead,
            goal="≤ 5%",
            holds=holds,
            margin=margin,
        )
    )
    holds, margin = at_most(calls_without, SEED_CALLS)
    fig.rows.append(
        Row(
            metric="LLM calls per report without verification",
            unit="calls",
            research_fsm=calls_without,
            goal="≤ seed's 6-7",
            holds=holds,
            margin=margin,
        )
    )
    fig.rows.append(
        Row(
            metric="LLM calls verification adds (1 round, draft verified at once)",
            unit="calls",
            research_fsm=calls.get("verification", 0),
            goal="(reported)",
        )
    )
    fig.rows.append(
        Row(
            metric="LLM calls per report when the first draft fails verification (gap round)",
            unit="calls",
            research_fsm=gap_calls,
            goal="(reported)",
        )
    )

    docs, docs_missing = _documents(quick)
    doc_rows: list[list[str]] = []
    if docs is None:
        doc_rows.append(["index / query / warm reopen, 1,000 files / 20 MB", docs_missing or ""])
    else:
        for key, value in docs.items():
            unit, factor = _unit(key)
            fig.rows.append(
                Row(
                    metric=f"local documents: {key}",
                    unit=unit,
                    research_fsm=value * factor,
                    goal="(reported)",
                )
            )
            doc_rows.append([key, fmt(value * factor, unit)])
    cli_files = 5 if quick else 20
    cold_cli, cli_missing = _cold_cli(sizes.fig7_runs, cli_files)
    cli_label = f'cold offline `research-fsm deep "{TOPIC}" --docs DIR` ({cli_files} files)'
    if cold_cli is None:
        doc_rows.append([cli_label, cli_missing or ""])
    else:
        fig.rows.append(Row(metric=cli_label, unit="s", research_fsm=cold_cli, goal="(reported)"))
        doc_rows.append([cli_label, fmt(cold_cli, "s")])

    fig.detail = {
        "simulated": sim,
        "critical_s": CRITICAL_S,
        "latency_s": latency,
        "phase_s": phase,
        "slowest_analysis_s": slowest,
        "slowest_analysis_measured_s": slowest_measured,
        "gap_latency_s": gap_latency,
        "llm_delay_s": LLM_DELAY,
        "search_delay_s": SEARCH_DELAY,
        "analysis_delays_s": ANALYSIS_DELAYS,
        "documents": docs,
        "cold_cli_s": cold_cli,
        "missing": [m for m in (docs_missing, cli_missing) if m],
    }
    fig.detail_md = [
        f"{len(passing)} simulated session(s) verified at once and {len(gap)} whose first draft "
        f"holds one made-up claim, medians. Critical path {CRITICAL_S * 1e3:.0f} ms = query LLM "
        f"{LLM_DELAY * 1e3:.0f} + search {SEARCH_DELAY * 1e3:.0f} + relevance LLM "
        f"{LLM_DELAY * 1e3:.0f} + slowest analysis {slowest * 1e3:.0f} + synthesis LLM "
        f"{LLM_DELAY * 1e3:.0f} + verification LLM {LLM_DELAY * 1e3:.0f}.",
        "",
        *md_table(
            [
                "latency ms",
                "critical path ms",
                "analysis phase ms",
                "slowest analysis ms (simulated / measured)",
                "analyses if serial ms",
                "gap-round session ms",
                "outside any node ms (before the first)",
                "report node ms",
            ],
            [
                [
                    fmt(latency * 1e3),
                    fmt(CRITICAL_S * 1e3),
                    fmt(phase * 1e3),
                    f"{fmt(slowest * 1e3)} / {fmt(slowest_measured * 1e3)}",
                    fmt(sum(ANALYSIS_DELAYS[s] for s in ("S1", "S2", "S3")) * 1e3),
                    fmt(gap_latency * 1e3),
                    f"{fmt(outside * 1e3)} ({fmt(before * 1e3)})",
                    fmt(median([r["report_node_s"] for r in passing]) * 1e3),
                ]
            ],
        ),
        "",
        "LLM calls per stage and per report (the seed's pipeline: 6-7 per report):",
        "",
        *_calls_table(passing[0], gap[0]),
        "",
        "Local documents:",
        "",
        *md_table(["measure", "value"], doc_rows),
    ]
    extra = {st: gap[0]["calls"].get(st, 0) - calls.get(st, 0) for st in STAGE_ORDER}
    fig.notes.append(
        f"Verification adds one LLM call per round. When the first round fails (here "
        f"{gap[0]['verification']['claims']} claims in the end, one made-up claim in the first "
        f"draft), the gap round costs {gap_calls - calls_total} calls more ("
        + ", ".join(f"{st} +{n}" for st, n in extra.items() if n)
        + "): a (broadened) query for the unsupported claims, a search, a relevance call only "
        "for sources not seen before, an analysis of each relevant source not analysed yet, a "
        f"new draft and its verification; latency {gap_latency * 1e3:,.0f} ms against "
        f"{latency * 1e3:,.0f} ms."
    )
    return fig
