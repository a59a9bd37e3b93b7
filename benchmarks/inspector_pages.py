"""``python -m benchmarks.inspector_pages [--quick] [--out PATH]``: the thread inspector's
first pages on a big store.

Two stores per kind (the JSON file store; PostgreSQL on a throwaway server when its
binaries and the ``postgres`` extra are there): one thread of ``CHECKPOINTS``
checkpoints (the inspector demo's graph: a run to completion, then ``update_state``
calls, with a re-run from 50 checkpoints back every 1,000: new lines of history), and
``THREADS`` threads of a one-node graph. Each request goes through the inspector's ASGI
app (``httpx.ASGITransport``: the routing, the store reads and the JSON, no socket):
the thread list's first page (``/api/threads``), a thread's first page of 50
checkpoints with their child threads and the graph (``/api/thread``), and the newest
checkpoint's state and diff (``/api/checkpoint``). Median wall ms of 21 requests (7 with
``--quick``) after 3 untimed ones; the goal: each < 200 ms (issue 38). Then the list's
first page through a store opened afresh for each request ("cold": the file store reads
its whole journal, ``.threads``, first), its wall and CPU ms (the CPU column is what a
loaded machine does not inflate). Prints a Markdown table, writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from research_fsm.engine import END, START, CheckpointStore, CompiledGraph, StateGraph
from research_fsm.stores import JsonFileCheckpointStore

from ._common import ROOT, median, postgres_server, temp_dir
from ._machine import machine_info

GOAL_MS = 200.0
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "inspector_pages.json"
FULL = {"checkpoints": 10_000, "threads": 20_000, "reads": 21}
QUICK = {"checkpoints": 500, "threads": 1_000, "reads": 7}
WARM = 3


class NoListing(Exception):
    """The store lists no threads: the thread page's numbers, and why not the list's."""

    def __init__(self, measured: dict[str, float], why: str) -> None:
        super().__init__(why)
        self.measured = measured


class Count(BaseModel):
    n: int = 0


async def _bump(state: Count) -> dict[str, int]:
    return {"n": state.n + 1}


def _one_node() -> StateGraph[Count]:
    graph = StateGraph(Count).add_node("bump", _bump)
    graph.add_edge(START, "bump").add_edge("bump", END)
    return graph


def _demo() -> Any:
    sys.path.insert(0, str(ROOT))
    from examples import inspect_demo

    return inspect_demo


async def _grow(app: CompiledGraph[Any], size: int) -> None:
    """Thread ``big``: the demo's run to completion, then edits to ``size`` checkpoints."""
    first = await app.run({"topic": "big"}, thread_id="big")
    assert first.suspension is not None
    await app.resume(first.suspension.token, "approve")
    count = len([s async for s in app.history("big")])
    while count < size:
        if count % 1_000 == 0:
            back = [s async for s in app.history("big", limit=50)][-1]
            await app.run(None, thread_id="big", checkpoint_id=back.checkpoint_id)
            count = len([s async for s in app.history("big")])
            continue
        await app.update_state("big", {"revisions": count, "verdict": f"note {count}"})
        count += 1


async def _many(store: CheckpointStore, threads: int) -> None:
    app = _one_node().compile(store=store)
    for i in range(threads):
        await app.run({}, thread_id=f"t{i:06d}")


async def _time(client: Any, url: str, params: dict[str, str], reads: int) -> float:
    for _ in range(WARM):
        response = await client.get(url, params=params)
        assert response.status_code == 200, response.text
    samples = []
    for _ in range(reads):
        started = time.perf_counter()
        response = await client.get(url, params=params)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return median(samples) * 1e3


async def _cold(fresh: Callable[[], CheckpointStore], reads: int) -> tuple[float, float]:
    """Median wall and CPU ms of the thread list's first page through a store opened
    afresh (as a new process would: the file store reads its whole journal first)."""
    import httpx

    from research_fsm.web import inspector

    walls, cpus = [], []
    for _ in range(reads):
        store = fresh()
        try:
            await store.load_latest("someone-else")  # connections open, nothing listed
            transport = httpx.ASGITransport(app=inspector(store))
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                cpu, started = time.process_time(), time.perf_counter()
                response = await client.get("/api/threads")
                walls.append(time.perf_counter() - started)
                cpus.append(time.process_time() - cpu)
                assert response.status_code == 200 and len(response.json()["threads"]) == 50
        finally:
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()
    return median(walls) * 1e3, median(cpus) * 1e3


async def _measure(
    big: CheckpointStore,
    many: CheckpointStore,
    sizes: dict[str, int],
    fresh: Callable[[], CheckpointStore],
) -> dict[str, float]:
    import httpx

    from research_fsm.web import inspector

    demo = _demo()
    await _grow(demo.graph.on_store(big), sizes["checkpoints"])
    await _many(many, sizes["threads"])
    out: dict[str, float] = {}
    reads = sizes["reads"]
    base = "http://127.0.0.1"
    app = inspector(demo.graph.on_store(big))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as client:
        page = (await client.get("/api/thread", params={"thread": "big"})).json()
        assert len(page["rows"]) == 50 and page["next"], "a page of 50 and more to come"
        out["thread page (50 of the thread)"] = await _time(
            client, "/api/thread", {"thread": "big"}, reads
        )
        newest = page["rows"][0]["id"]
        out["checkpoint state + diff"] = await _time(
            client, "/api/checkpoint", {"thread": "big", "checkpoint": newest}, reads
        )
    listing = inspector(many)
    transport = httpx.ASGITransport(app=listing)
    async with httpx.AsyncClient(transport=transport, base_url=base) as client:
        first = (await client.get("/api/threads")).json()
        if "threads" not in first:  # a store without a listing yet
            raise NoListing(out, first.get("message", str(first)))
        assert len(first["threads"]) == 50 and first["next"]
        out["thread list (first 50)"] = await _time(client, "/api/threads", {}, reads)
        out["thread list (next page)"] = await _time(
            client, "/api/threads", {"cursor": first["next"]}, reads
        )
        out["thread list (prefix t0001)"] = await _time(
            client, "/api/threads", {"prefix": "t0001"}, reads
        )
    wall, cpu = await _cold(fresh, reads)
    out["thread list (first 50, cold store)"] = wall
    out["thread list (first 50, cold store), CPU ms"] = cpu
    return out


async def _kind(kind: str, root: Path, sizes: dict[str, int], dsn: str | None) -> dict[str, float]:
    stores: list[Any]
    fresh: Callable[[], CheckpointStore]
    if kind == "file":
        stores = [
            JsonFileCheckpointStore(root / "big", durability="none"),
            JsonFileCheckpointStore(root / "many", durability="none"),
        ]

        def fresh() -> CheckpointStore:
            return JsonFileCheckpointStore(root / "many")

    else:
        from research_fsm.stores.postgres import PostgresCheckpointStore

        assert dsn is not None
        stores = [
            PostgresCheckpointStore(dsn, schema="inspect_big"),
            PostgresCheckpointStore(dsn, schema="inspect_many"),
        ]

        def fresh() -> CheckpointStore:
            return PostgresCheckpointStore(dsn, schema="inspect_many")

    try:
        return await _measure(stores[0], stores[1], sizes, fresh)
    finally:
        for store in stores:
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inspector_pages")
    parser.add_argument("--quick", action="store_true", help="a small store (a smoke run)")
    parser.add_argument("--no-postgres", action="store_true", help="the file store only")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    results: dict[str, Any] = {}
    notes: list[str] = []
    with temp_dir("inspector-pages") as root:
        results["file"] = asyncio.run(_kind("file", root / "file", sizes, None))
        if not args.no_postgres:
            server, why = postgres_server()
            if server is None:
                notes.append(f"PostgreSQL skipped: {why}")
            else:
                try:
                    results["postgres"] = asyncio.run(_kind("postgres", root, sizes, server.dsn))
                except NoListing as missing:
                    results["postgres"] = missing.measured
                    notes.append(f"PostgreSQL thread list not measured: {missing}")
                except Exception as exc:
                    notes.append(f"PostgreSQL failed: {type(exc).__name__}: {exc}")
                finally:
                    server.stop()
    kinds = list(results)
    print(
        f"The inspector's first pages: a thread of {sizes['checkpoints']:,} checkpoints, "
        f"a store of {sizes['threads']:,} threads (median ms of {sizes['reads']}; "
        f"goal < {GOAL_MS:.0f} ms; load average {os.getloadavg()[0]:.1f})\n"
    )
    print("| request | " + " | ".join(kinds) + " |")
    print("| --- |" + " ---: |" * len(kinds))
    for name in results[kinds[0]]:
        cells = [f"{results[k][name]:.1f}" if name in results[k] else "—" for k in kinds]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for note in notes:
        print(f"\n{note}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"sizes": sizes, "goal_ms": GOAL_MS, "ms": results, "notes": notes}
    payload["machine"] = machine_info()
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    met = all(v < GOAL_MS for kind in results.values() for v in kind.values())  # CPU too
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
