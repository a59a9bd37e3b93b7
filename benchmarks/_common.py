"""Shared pieces: sizes, timing helpers, result rows, goal checks, formatting."""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import importlib.util
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# -- sizes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does."""

    name: str
    reps: int
    """Repetitions of every timed batch (engines alternate; medians are reported)."""
    fig1_runs: int
    """Sequential runs per timed batch, figure 1."""
    fig2_runs: int
    """Sequential runs per timed batch, figure 2."""
    fig3_trips: int
    """Interrupt + resume round trips per timed batch, figure 3."""
    fig4_turns: int
    """Turns of the growth thread, figure 4."""
    fig4_reps: int
    """Repetitions of the whole growth experiment, figure 4."""
    fig5_threads: int
    """Threads in flight at once, figure 5."""
    fig5_reps: int
    """Repetitions of each concurrent batch, figure 5."""
    fig6_questions: int
    """Questions per path, figure 6."""
    fig7_runs: int
    """Cold subprocesses per measurement, figure 7."""
    fig8_builds: int
    """Index builds, figure 8."""
    fig8_rounds: int
    """Rounds over the query list, figure 8."""
    fig9_runs: int
    """Sequential runs of the static fan-out per timed batch, figure 9 (a tenth for the map)."""
    fig9_items: int
    """Items of the ``Send`` map, figure 9."""
    fig9_io_runs: int
    """Sequential runs of the fan-out with simulated I/O per timed batch, figure 9."""
    fig9_durable_runs: int
    """Sequential runs of the ``Send`` map per timed batch with a durable store, figure 9."""
    fig13_threads: tuple[int, ...]
    """Threads in the store when runs and loads are timed, figure 13."""
    fig13_created: int
    """Conversations created one after another from an empty store, figure 13."""
    fig13_probes: int
    """Runs on new threads (and cold loads) per timed batch, figure 13."""


FULL = Sizes(
    name="full",
    reps=7,
    fig1_runs=300,
    fig2_runs=60,
    fig3_trips=40,
    fig4_turns=200,
    fig4_reps=5,
    fig5_threads=1000,
    fig5_reps=2,
    fig6_questions=5,
    fig7_runs=7,
    fig8_builds=5,
    fig8_rounds=50,
    fig9_runs=200,
    fig9_items=100,
    fig9_io_runs=20,
    fig9_durable_runs=4,
    fig13_threads=(0, 1_000, 20_000),
    fig13_created=10_000,
    fig13_probes=40,
)
QUICK = Sizes(
    name="quick",
    reps=5,
    fig1_runs=20,
    fig2_runs=10,
    fig3_trips=5,
    fig4_turns=10,
    fig4_reps=1,
    fig5_threads=20,
    fig5_reps=1,
    fig6_questions=1,
    fig7_runs=2,
    fig8_builds=2,
    fig8_rounds=3,
    fig9_runs=10,
    fig9_items=20,
    fig9_io_runs=3,
    fig9_durable_runs=1,
    fig13_threads=(0, 20, 200),
    fig13_created=100,
    fig13_probes=5,
)


# -- the peer ----------------------------------------------------------------------


def langgraph_available() -> bool:
    """Whether LangGraph and its SQLite checkpointer are importable."""
    try:
        return (
            importlib.util.find_spec("langgraph.graph") is not None
            and importlib.util.find_spec("langgraph.checkpoint.sqlite") is not None
            and importlib.util.find_spec("aiosqlite") is not None
        )
    except ModuleNotFoundError:
        return False


def throwaway_server() -> Any:
    """A started PostgreSQL server like the tests' own, but with ``fsync=on``;
    ``RuntimeError`` saying why when there is none (no server binaries, no tests folder)."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    if not (tests / "servers" / "postgres.py").is_file():
        raise RuntimeError(f"no {tests / 'servers' / 'postgres.py'} to start a server with")
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    from servers.postgres import PostgresServer

    server = PostgresServer(fsync=True)  # commits reach the disk
    server.start()
    return server


def postgres_server() -> tuple[Any, str | None]:
    """A throwaway PostgreSQL server (``benchmarks.postgres``; the caller stops it), or
    ``(None, why not)``: the ``postgres`` extra missing, or no server binaries."""
    for module in ("psycopg", "psycopg_pool"):
        if importlib.util.find_spec(module) is None:
            return None, f"the postgres extra is not installed (no {module})"
    try:
        return throwaway_server(), None
    except RuntimeError as exc:
        return None, f"no PostgreSQL server could be started: {exc}"


def version_of(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# -- timing ------------------------------------------------------------------------


@dataclass
class Sample:
    """One timed batch."""

    wall: float
    """Seconds of wall time (``time.perf_counter``)."""
    cpu: float
    """Seconds of CPU time of the whole process, all threads (``time.process_time``)."""


@contextlib.contextmanager
def timed() -> Iterator[Sample]:
    """``with timed() as s: ...`` fills ``s.wall`` and ``s.cpu`` on exit."""
    sample = Sample(0.0, 0.0)
    gc.collect()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        yield sample
    finally:
        sample.wall = time.perf_counter() - wall0
        sample.cpu = time.process_time() - cpu0


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def alternate(rep: int, *names: str) -> list[str]:
    """The engines' order for repetition ``rep``: rotated every repetition."""
    shift = rep % len(names)
    return [*names[shift:], *names[:shift]]


def io_write_bytes() -> int | None:
    """Bytes this process passed to write(2) and friends so far (Linux ``wchar``)."""
    try:
        with open("/proc/self/io") as file:
            for line in file:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=f"rfsm-bench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def dir_bytes(path: Path) -> tuple[int, int]:
    """(apparent size, allocated size) of every file under ``path``."""
    apparent = allocated = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(os.path.join(root, name))
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return apparent, allocated


def raise_fd_limit() -> None:
    """Figure 5 holds one lock file descriptor per in-flight file-store thread."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def quiet_logging() -> None:
    """structlog's defaults print every line to stdout; keep WARNING+ on stderr."""
    from research_fsm import configure_logging

    configure_logging(level="WARNING")


# -- results -----------------------------------------------------------------------


@dataclass
class Row:
    """One line of the summary table."""

    metric: str
    unit: str
    research_fsm: float | None
    langgraph: float | None = None
    goal: str = ""
    holds: bool | None = None
    margin: str = ""
    ratio: float | None = None

    def __post_init__(self) -> None:
        if self.ratio is None and self.research_fsm is not None and self.langgraph:
            self.ratio = self.research_fsm / self.langgraph


@dataclass
class FigureResult:
    number: int
    title: str
    rows: list[Row] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    detail_md: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    skipped: str | None = None
    """Why the figure did not run here (something it needs is missing), or ``None``."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = [asdict(row) for row in self.rows]
        return data


# -- goal checks -------------------------------------------------------------------


def at_most(value: float | None, limit: float) -> tuple[bool | None, str]:
    """``value <= limit``, with the margin as a factor."""
    if value is None:
        return None, "n/a"
    if value <= limit:
        return True, f"yes ({limit / value:.1f}x margin)" if value > 0 else "yes"
    return False, f"no ({value / limit:.2f}x over)"


def faster_row(metric: str, unit: str, mine: float | None, peer: float | None) -> Row:
    """A row whose goal is "cheaper than LangGraph" (lower is better)."""
    holds, margin = (None, "n/a") if peer is None or mine is None else at_most(mine, peer)
    if holds is not None:
        margin = margin.replace("margin", "faster") if holds else margin.replace("over", "slower")
    return Row(
        metric=metric,
        unit=unit,
        research_fsm=mine,
        langgraph=peer,
        goal="faster than LangGraph",
        holds=holds,
        margin=margin,
    )


def at_least(value: float | None, limit: float) -> tuple[bool | None, str]:
    """``value >= limit``, with the margin as a factor."""
    if value is None:
        return None, "n/a"
    if value >= limit:
        return True, f"yes ({value / limit:.1f}x margin)"
    return False, f"no ({limit / value:.1f}x short)" if value > 0 else "no"


def both(*checks: tuple[bool | None, str]) -> tuple[bool | None, str]:
    """All checks hold; ``None`` when any is unknown and none failed."""
    values = [c[0] for c in checks]
    text = "; ".join(c[1] for c in checks)
    if any(v is False for v in values):
        return False, text
    if any(v is None for v in values):
        return None, text
    return True, text


# -- formatting --------------------------------------------------------------------


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    magnitude = abs(value)
    if magnitude == 0:
        text = "0"
    elif magnitude >= 100:
        text = f"{value:,.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "n/a"
    if ratio == 0:
        return "0"
    if ratio < 1:
        return f"{ratio:.3g} (1/{1 / ratio:.1f})"
    return f"{ratio:.3g}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |")
    return lines


def summary_table(figures: Sequence[FigureResult]) -> list[str]:
    header = ["fig", "metric", "research_fsm", "LangGraph", "ratio rfsm/LG", "goal", "holds?"]
    rows: list[list[object]] = []
    for fig in figures:
        if fig.error is not None:
            rows.append(
                [
                    fig.number,
                    f"{fig.title}: FAILED",
                    fig.error.splitlines()[-1][:80],
                    "",
                    "",
                    "",
                    "no",
                ]
            )
            continue
        if fig.skipped is not None:
            rows.append([fig.number, f"{fig.title}: skipped", fig.skipped[:80], "", "", "", "-"])
            continue
        for row in fig.rows:
            holds = row.margin or ("" if row.holds is None else ("yes" if row.holds else "no"))
            rows.append(
                [
                    fig.number,
                    f"{row.metric} ({row.unit})" if row.unit else row.metric,
                    fmt(row.research_fsm),
                    fmt(row.langgraph),
                    fmt_ratio(row.ratio),
                    row.goal or "-",
                    holds or "-",
                ]
            )
    return md_table(header, rows)
