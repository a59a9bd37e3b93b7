"""Profiles of research_fsm's hot paths, to find what dominates a figure.

``python -m benchmarks.profile engine``       cProfile, MemoryCheckpointStore runs (figure 1)
``python -m benchmarks.profile file``         cProfile + direct timing of the file store's
                                              operations, durability "none" (figure 2)
``python -m benchmarks.profile concurrency``  py-spy (if installed: it sees the worker
                                              threads) of 1,000 threads with the file store
                                              (figure 5); else cProfile of the event loop

Options: ``--path happy|retry``, ``--runs N``, ``--top N``, ``--durability none|fsync``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import dataclasses
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import ROOT, quiet_logging, raise_fd_limit
from ._graphs import build_rfsm, question_input


async def _runs(store: Any, path: str, n: int, tag: str) -> float:
    app = build_rfsm(store)
    inputs = [question_input(path) for _ in range(n)]
    t0 = time.perf_counter()
    for i in range(n):
        await app.run(inputs[i], thread_id=f"{tag}{i}")
    return time.perf_counter() - t0


def _cprofile(fn: Any, top: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def profile_engine(path: str, runs: int, top: int) -> None:
    from research_fsm.engine import MemoryCheckpointStore

    asyncio.run(_runs(MemoryCheckpointStore(), path, 200, "w"))
    seconds = asyncio.run(_runs(MemoryCheckpointStore(), path, runs, "t"))
    print(f"unprofiled: {seconds / runs * 1e6:.1f} µs per {path} run\n")
    _cprofile(lambda: asyncio.run(_runs(MemoryCheckpointStore(), path, runs, "p")), top)


def profile_file(path: str, runs: int, top: int, durability: str) -> None:
    from research_fsm.engine import MemoryCheckpointStore
    from research_fsm.stores import JsonFileCheckpointStore
    from research_fsm.stores._codec.logformat import encode_line

    root = Path(tempfile.mkdtemp(prefix="rfsm-profile-"))
    try:
        store = JsonFileCheckpointStore(root / "a", durability=durability)  # type: ignore[arg-type]
        seconds = asyncio.run(_runs(store, path, runs, "t"))
        print(f"unprofiled: {seconds / runs * 1e6:.1f} µs per {path} run ({durability})\n")

        # The checkpoints of one run, replayed synchronously against the store's
        # private blocking methods: the file work alone, without thread hops.
        checkpoints: list[Any] = []

        class Recorder(MemoryCheckpointStore):
            saves_changes = True  # so the engine hands over each step's changes

            async def save(self, checkpoint: Any) -> None:
                checkpoints.append(checkpoint)
                await super().save(checkpoint)

        asyncio.run(build_rfsm(Recorder()).run(question_input(path), thread_id="r"))
        sync_store = JsonFileCheckpointStore(root / "b", durability=durability)  # type: ignore[arg-type]
        parts: dict[str, float] = collections.defaultdict(float)
        for i in range(runs):
            thread = f"s{i}"
            t0 = time.perf_counter()
            sync_store._lock(thread)
            t1 = time.perf_counter()
            sync_store._load_latest(thread, True)
            t2 = time.perf_counter()
            for cp in checkpoints:
                cp = dataclasses.replace(cp, thread_id=thread)
                t3 = time.perf_counter()
                encode_line(cp, cp.changes if cp.parent_id is not None else None, {})
                t4 = time.perf_counter()
                sync_store._save(cp)
                parts["encode (included in save)"] += t4 - t3
                parts["save"] += time.perf_counter() - t4
            sync_store._release(thread)
            parts["lock"] += t1 - t0
            parts["load_latest"] += t2 - t1
        print("the file work alone, blocking calls, µs per run:")
        for name, total in parts.items():
            print(f"  {name:28s} {total / runs * 1e6:8.1f}")
        sync_total = parts["lock"] + parts["load_latest"] + parts["save"]
        print(
            f"  {'total':28s} {sync_total / runs * 1e6:8.1f}   (async run: "
            f"{seconds / runs * 1e6:.1f}; the rest is thread hops and the engine)\n"
        )
        store = JsonFileCheckpointStore(root / "c", durability=durability)  # type: ignore[arg-type]
        _cprofile(lambda: asyncio.run(_runs(store, path, runs, "p")), top)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def profile_concurrency(path: str, runs: int, top: int, durability: str) -> None:
    spy = shutil.which("py-spy")
    code = (
        "import asyncio, sys, tempfile\n"
        "from pathlib import Path\n"
        "from benchmarks._common import quiet_logging, raise_fd_limit\n"
        "from benchmarks import fig5_concurrency as f\n"
        "quiet_logging(); raise_fd_limit()\n"
        f"variant = {'rfsm_fsync' if durability == 'fsync' else 'rfsm_none'!r}\n"
        "for _ in range(3):\n"
        f"    s = asyncio.run(f._batch(variant, Path(tempfile.mkdtemp()) / 'x', {path!r}, {runs}, False))\n"
        "    print(f'{variant}: {s.wall * 1e3:.0f} ms wall, {s.cpu * 1e3:.0f} ms CPU')\n"
    )
    if spy is None:
        print("py-spy not found (pip install py-spy): cProfile sees the event loop only\n")
        _cprofile(lambda: exec(code, {}), top)
        return
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "spy.txt"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        record = [spy, "record", "-o", str(raw), "-f", "raw", "-r", "250", "--"]
        subprocess.run([*record, sys.executable, "-c", code], check=True, env=env)
        own: collections.Counter[str] = collections.Counter()
        inclusive: collections.Counter[str] = collections.Counter()
        total = 0
        for line in raw.read_text().splitlines():
            stack, samples = line.rsplit(" ", 1)
            frames = stack.split(";")
            total += int(samples)
            own[frames[-1]] += int(samples)
            for frame in set(frames):
                inclusive[frame] += int(samples)
    print(f"\npy-spy, {total} samples, all threads. Own time (where the samples landed):")
    for frame, count in own.most_common(top):
        print(f"  {count / total * 100:5.1f}%  {frame}")
    print("\nInclusive time, research_fsm and the thread machinery:")
    shown = 0
    for frame, count in inclusive.most_common():
        if any(k in frame for k in ("research_fsm", "thread.py", "threads.py", "base_events")):
            print(f"  {count / total * 100:5.1f}%  {frame}")
            shown += 1
            if shown >= top:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("what", choices=["engine", "file", "concurrency"])
    parser.add_argument("--path", choices=["happy", "retry"], default="happy")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--durability", choices=["none", "fsync"], default="none")
    args = parser.parse_args(argv)
    quiet_logging()
    raise_fd_limit()
    if args.what == "engine":
        profile_engine(args.path, args.runs or 3000, args.top)
    elif args.what == "file":
        profile_file(args.path, args.runs or 1000, args.top, args.durability)
    else:
        profile_concurrency(args.path, args.runs or 1000, args.top, args.durability)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
