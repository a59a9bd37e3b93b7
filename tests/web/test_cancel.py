"""Cancelling a running report or research session from the page: the run stops, its
thread is free, what it finished stays saved, and it can be continued."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from research_fsm import JsonFileCheckpointStore, ResearchAssistant
from research_fsm.deep import Found, StaticSearch, sessions_home
from research_fsm.sources import MockDataSource, SearchContext, SearchResult
from research_fsm.web import create_app

from .helpers import SPRING_PAGES, parse_sse
from .live import LiveServer, artifacts_dir

GATE_WAIT = 30.0


class Gate:
    """Holds every search until ``open``: the run is under way, and stays so."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.waiting = threading.Event()

    async def wait(self) -> None:
        self.waiting.set()
        for _ in range(int(GATE_WAIT / 0.01)):
            if self.event.is_set():
                return
            await asyncio.sleep(0.01)


class GatedSource(MockDataSource):
    """The mock companies, each search held at ``gate``."""

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self.gate = gate

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        await self.gate.wait()
        return await super().search(company, context)


class GatedSearch(StaticSearch):
    """The Spring pages as a web search, each search held at ``gate``."""

    def __init__(self, gate: Gate) -> None:
        super().__init__(SPRING_PAGES, mode="web")
        self.gate = gate

    async def search(self, query: str, *, limit: int, broadened: bool) -> list[Found]:
        await self.gate.wait()
        return await super().search(query, limit=limit, broadened=broadened)


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def live(home: Path, gate: Gate) -> Iterator[LiveServer]:
    store = JsonFileCheckpointStore(home / "threads")
    assistant = ResearchAssistant(
        source=GatedSource(gate), store=store, web_search=GatedSearch(gate)
    )
    with LiveServer(create_app(assistant)) as server:
        yield server


def saved(home: Path, thread: str) -> list[Any]:
    """The thread's checkpoints, newest first, read by a store of its own."""

    async def read() -> list[Any]:
        store = JsonFileCheckpointStore(home / "threads")
        return [c async for c in store.history(thread)]

    return asyncio.run(read())


JOBS = [
    ("/api/report", {"company": "Apple"}, "report"),
    ("/api/deep", {"topic": "Spring Boot 2 to 3 migration"}, "deep"),
]


@pytest.mark.parametrize(("path", "body", "result"), JOBS, ids=["report", "deep"])
def test_a_cancelled_run_stops_keeps_its_steps_and_continues(
    live: LiveServer, home: Path, gate: Gate, path: str, body: dict[str, Any], result: str
) -> None:
    """Cancel mid-run: the stream ends with ``cancelled``, the thread keeps its saved
    checkpoints (a session says ``cancelled``), and ``/api/continue`` finishes it."""
    with httpx.Client(base_url=live.url, timeout=GATE_WAIT) as client:
        with client.stream("POST", path, json=body) as response:
            assert response.status_code == 200
            run = response.headers["X-Run-Id"]
            lines = response.iter_lines()
            assert next(lines).startswith("event: progress")
            assert gate.waiting.wait(GATE_WAIT)  # the run is held inside a search
            cancelled = client.post("/api/cancel", json={"thread_id": run})
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json() == {"thread_id": run, "status": "cancelled"}
            rest = "\n".join(lines)
        assert "event: cancelled" in rest and f"event: {result}" not in rest
        before = saved(home, run)
        assert before and before[0].status == "running"  # stopped midway, nothing lost
        if result == "deep":
            meta = json.loads((sessions_home() / run / "session.json").read_text("utf-8"))
            assert meta["status"] == "cancelled"
        again = client.post("/api/cancel", json={"thread_id": run})
        assert again.status_code == 409 and run in again.json()["message"]
        gate.event.set()
        finished = parse_sse(client.post("/api/continue", json={"thread_id": run}).text)
        assert [kind for kind, _ in finished][-2:] == [result, "done"]
        after = saved(home, run)
        assert after[0].status == "completed"
        assert {c.checkpoint_id for c in before} <= {c.checkpoint_id for c in after}
        if result == "deep":
            meta = json.loads((sessions_home() / run / "session.json").read_text("utf-8"))
            assert meta["status"] == "completed"


def test_cancel_and_continue_name_what_they_take(live: LiveServer) -> None:
    """A thread id that is no report's nor session's is refused, naming both forms."""
    with httpx.Client(base_url=live.url) as client:
        for path in ("/api/cancel", "/api/continue"):
            response = client.post(path, json={"thread_id": "../../etc"})
            assert response.status_code == 400
            assert "report-" in response.json()["message"]
            assert "deep-" in response.json()["message"]


@contextmanager
def ready_page(live: LiveServer) -> Iterator[tuple[Any, Any]]:
    """Chromium on the live page once it is ready: the page and Playwright's ``expect``
    (the test is skipped without Chromium or Playwright)."""
    from .live import CHROMIUM, chromium

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with chromium(sync_api) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.goto(live.url)
        page.wait_for_selector("body[data-ready=true]")
        yield page, sync_api.expect


@pytest.mark.slow
def test_cancel_and_continue_in_the_browser(live: LiveServer, gate: Gate) -> None:
    """In Chromium: Cancel stops a running report (the page says so and offers Continue);
    Continue finishes it."""
    with ready_page(live) as (page, expect):
        page.fill("#report-company", "Apple")
        page.click("#report-start")
        cancel = page.locator("#report-output button.cancel")
        expect(cancel).to_be_visible()
        assert gate.waiting.wait(GATE_WAIT)
        cancel.click()
        expect(page.locator("#report-output p.cancelled")).to_contain_text("Cancelled")
        expect(page.locator("#report-output p.error")).to_have_count(0)
        expect(page.locator("#report-start")).to_be_enabled()
        page.screenshot(path=str(artifacts_dir() / "report-cancelled.png"))
        gate.event.set()
        page.click("#report-output button.continue")
        expect(page.locator("#report-output article.report h1")).to_contain_text("Apple")
        page.screenshot(path=str(artifacts_dir() / "report-continued.png"))


@pytest.mark.slow
def test_a_run_left_by_a_reload_offers_continue(live: LiveServer, gate: Gate) -> None:
    """In Chromium: reloading the page while a research runs stops the run; the reloaded
    page says so and its Continue finishes the research."""
    with ready_page(live) as (page, expect):
        page.fill("#deep-topic", "Spring Boot 2 to 3 migration")
        page.click("#deep-start")
        expect(page.locator("#deep-output button.cancel")).to_be_visible()
        assert gate.waiting.wait(GATE_WAIT)
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#deep-view")).to_be_visible()
        expect(page.locator("#deep-output p.cancelled")).to_contain_text("The page was left")
        page.screenshot(path=str(artifacts_dir() / "deep-left-by-reload.png"))
        gate.event.set()
        page.click("#deep-output button.continue")
        expect(page.locator("#deep-output article.report h1")).to_contain_text("Spring Boot")
