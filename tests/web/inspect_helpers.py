"""The inspector's tests: the demo graph of ``examples/inspect_demo.py`` on a file store."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import sys
from pathlib import Path
from typing import Any

from research_fsm import JsonFileCheckpointStore
from research_fsm.engine import CompiledGraph

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_STATE = '<img src=x onerror=alert(7)></script><script>alert(8)</script> "&amp;'
"""A state string a page must show as these characters (the red-team strings' kind)."""


def demo() -> Any:
    """``examples/inspect_demo.py`` as a module (``graph``, ``seed``)."""
    name = "inspect_demo"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "inspect_demo.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def seeded(folder: Path) -> CompiledGraph[Any]:
    """The demo graph on a file store in ``folder`` with the demo's three threads and
    ``hostile`` (its topic a hostile string, waiting at the review) and ``paused`` (at a
    breakpoint before the review)."""
    module = demo()
    store = JsonFileCheckpointStore(folder)
    app: CompiledGraph[Any] = module.graph.on_store(store)

    async def fill() -> None:
        await module.seed(store)
        await app.run({"topic": HOSTILE_STATE}, thread_id="hostile")
        await app.run({"topic": "kelp"}, thread_id="paused", interrupt_before=["review"])

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Playwright's loop runs here
        pool.submit(asyncio.run, fill()).result()
    return app
