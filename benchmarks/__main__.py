"""``python -m benchmarks [--quick] [--only 1,4] [--out PATH]``: run the figures,
print the Markdown table and per-figure detail, write JSON."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._common import (
    FULL,
    QUICK,
    FigureResult,
    langgraph_available,
    quiet_logging,
    raise_fd_limit,
    summary_table,
)
from ._machine import machine_info

FIGURES = {
    1: "fig1_overhead",
    2: "fig2_persistence",
    3: "fig3_interrupt",
    4: "fig4_growth",
    5: "fig5_concurrency",
    6: "fig6_assistant",
    7: "fig7_startup",
    8: "fig8_directory",
    9: "fig9_parallel",
    10: "fig10_reports",
    11: "fig11_deep",
    12: "fig12_postgres",
    13: "fig13_many_threads",
    14: "fig14_update_state",
    15: "fig15_history_pages",
    16: "fig16_inspector",
    17: "fig17_floor",
}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"


def _parse_only(text: str | None) -> list[int]:
    if not text:
        return sorted(FIGURES)
    chosen: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            first, last = (int(x) for x in part.split("-", 1))
            chosen.extend(range(first, last + 1))
        else:
            chosen.append(int(part))
    unknown = sorted(set(chosen) - set(FIGURES))
    if unknown:
        raise SystemExit(f"unknown figure(s) {unknown}; figures are 1-{max(FIGURES)}")
    return sorted(set(chosen))


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _run_figure(number: int, sizes: Any, peer: bool) -> FigureResult:
    """Run figure ``number``; a figure that raises is a result with its traceback."""
    module = importlib.import_module(f".{FIGURES[number]}", __package__)
    print(f"... figure {number}: {module.TITLE}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        result: FigureResult = module.run(sizes, peer)
    except Exception:
        result = FigureResult(number, module.TITLE, error=traceback.format_exc())
        print(result.error, file=sys.stderr, flush=True)
    result.seconds = time.perf_counter() - t0
    print(f"    done in {result.seconds:.1f} s", file=sys.stderr, flush=True)
    gc.collect()
    return result


def _print_header(info: dict[str, Any], sizes: str, peer: bool) -> None:
    print(f"# research_fsm vs LangGraph ({sizes} sizes)\n", flush=True)
    print(
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}; {info['platform']}; "
        f"Python {info['python']}; research_fsm {info['research_fsm']} ({info['git']}); "
        f"LangGraph {info['langgraph'] if peer else 'n/a (not installed)'}; "
        f"temp files on {info['filesystem_tmp']}.\n",
        flush=True,
    )


def _print_detail(result: FigureResult) -> None:
    print(f"## Figure {result.number}: {result.title} ({result.seconds:.1f} s)\n")
    if result.error is not None:
        print("FAILED:\n```\n" + result.error.rstrip() + "\n```\n")
        return
    if result.skipped is not None:
        print(f"Skipped: {result.skipped}\n")
        return
    for line in result.detail_md:
        print(line)
    for note in result.notes:
        print(f"\n* {note}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="research_fsm side by side with LangGraph (figures 1-8 of the benchmark issue, 9: parallel branches, 10: company reports, 11: deep research, 12: the PostgreSQL store, 13: a store holding many threads, 14: update_state and history pages, 15: a page of history as the thread grows, 16: the inspector's pages, 17: each store beside its floor).",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run for CI")
    parser.add_argument("--only", metavar="N[,N...]", help="figures to run, e.g. 1,4 or 1-3")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})"
    )
    parser.add_argument("--no-peer", action="store_true", help="skip LangGraph even if installed")
    args = parser.parse_args(argv)

    sizes = QUICK if args.quick else FULL
    figures = _parse_only(args.only)
    peer = langgraph_available() and not args.no_peer
    quiet_logging()
    raise_fd_limit()
    started = time.perf_counter()
    info = machine_info()
    info["load_average_at_start"] = _load()
    _print_header(info, sizes.name, peer)
    results = [_run_figure(number, sizes, peer) for number in figures]

    total = time.perf_counter() - started
    info["load_average_at_end"] = _load()
    if sizes is QUICK:
        print(
            "Quick sizes: a smoke run. The numbers are too small to judge the goals by; "
            "run `python -m benchmarks` for that.\n"
        )
    print("\n".join(summary_table(results)))
    print(
        f"\nTotal time: {total:.1f} s; load average (1 min) {info['load_average_at_start']} "
        f"at the start, {info['load_average_at_end']} at the end. Ratio < 1 means research_fsm is cheaper / faster "
        "(for runs/s rows, higher is better and the ratio > 1 favours research_fsm).\n"
    )
    for result in results:
        _print_detail(result)

    payload: dict[str, Any] = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sizes": sizes.__dict__,
        "machine": info,
        "peer": peer,
        "total_seconds": total,
        "figures": {str(r.number): r.to_json() for r in results},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    print(f"JSON written to {args.out}")
    failed = [r.number for r in results if r.error is not None]
    if failed:
        print(f"FAILED figures: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
