"""The thread inspector in a real browser: Debian's Chromium driven by Playwright.

Marked ``slow`` as the page's other browser tests (``pytest -m slow -n 0``); skipped,
saying why, without /usr/bin/chromium or playwright. Screenshots of each step go under
``$RESEARCH_FSM_ARTIFACTS/web`` (default ``test-artifacts/web``).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from research_fsm import JsonFileCheckpointStore
from research_fsm.engine import END, START, StateGraph
from research_fsm.web import inspector

from .inspect_helpers import HOSTILE_STATE, seeded
from .live import CHROMIUM, LiveServer, artifacts_dir, chromium

pytestmark = pytest.mark.slow

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect
expect.set_options(timeout=15_000)  # two cores shared by many: a reload may take seconds
Page = Any


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, headless, for the module's tests."""
    with chromium(sync_api) as launched:
        yield launched


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[Page]:
    """The inspector over the demo's threads, open in a fresh profile; a dialog (a script
    from the data) fails the test."""
    graph = seeded(tmp_path / "threads")
    dialogs: list[str] = []
    with LiveServer(inspector(graph)) as live:
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        ctx.set_default_timeout(15_000)
        tab = ctx.new_page()
        tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        tab.goto(live.url)
        tab.wait_for_selector("body[data-ready=true]")
        yield tab
        ctx.close()
    assert not dialogs, f"the page ran a script from the data: {dialogs}"


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(artifacts_dir() / f"inspect-{name}.png"))


def open_thread(page: Page, thread: str) -> None:
    page.click(f"#threads li.thread[data-id='{thread}'] button")
    expect(page.locator("#thread-title")).to_have_text(thread)


def checkpoint(page: Page, seq: int) -> Any:
    return page.locator(
        f"#timeline > li.cp[data-seq='{seq}'], #timeline .parallel li.cp[data-seq='{seq}']"
    )


def test_open_a_subgraph_child_from_the_parent_timeline(page: Page) -> None:
    """The child thread of the ``draft`` subgraph opens nested under the parent's row."""
    expect(page.locator("#threads li.thread")).to_have_count(6)
    page.wait_for_timeout(300)
    shot(page, "01-thread-list")
    open_thread(page, "article-3")
    first = checkpoint(page, 1)
    first.locator(".child-open").click()
    nested = first.locator(".child-timeline li.cp")
    expect(nested).to_have_count(3)
    expect(nested.first.locator(".node")).to_have_text("write")
    nested.first.locator(".cp-open").click()
    expect(page.locator("#cp-title")).to_contain_text("(child article-3.draft.")
    expect(page.locator("#diff")).to_contain_text("draft")
    expect(page.locator("#graph svg")).to_be_visible()
    shot(page, "02-subgraph-child")


def test_edit_a_paused_thread_and_resume_it(page: Page) -> None:
    """At a breakpoint: edit the draft, continue, and the review asks about the edit;
    answering it completes the run."""
    open_thread(page, "paused")
    expect(page.locator("#suspension")).to_contain_text("paused before review")
    page.click("#edit summary")
    page.fill("#edit-values", '{"draft": "Edited by hand."}')
    page.click("#edit-save")
    expect(page.locator("#message")).to_contain_text("Saved checkpoint")
    expect(page.locator("#timeline li.cp").first).to_contain_text("edited by hand")
    page.click("#continue")
    expect(page.locator("#suspension")).to_contain_text("Edited by hand.")
    page.fill("#resume-value", '"approve"')
    page.click("#resume")
    expect(page.locator("#thread-status")).to_have_text("completed")
    expect(page.locator("#timeline li.cp").first.locator(".node")).to_have_text("publish")


def test_rerun_from_the_third_checkpoint_draws_a_new_line(page: Page) -> None:
    """Re-running from #3 adds a line that starts there, beside the first one."""
    open_thread(page, "article-2")
    checkpoint(page, 3).locator(".cp-open").click()
    expect(page.locator("#cp-title")).to_contain_text("#3")
    page.click("#cp-rerun")
    expect(page.locator("#message")).to_contain_text("a new line")
    new_line = page.locator("#timeline li.cp[data-line='1']")
    expect(new_line.first).to_be_visible()
    expect(page.locator("#timeline")).to_contain_text("re-run from #3 (a new line)")
    expect(page.locator("#timeline li.cp[data-line='0']")).to_have_count(6)
    page.wait_for_timeout(300)
    shot(page, "03-timeline-rerun-line")


def test_fork_to_a_new_thread(page: Page) -> None:
    """A fork opens as a thread of its own that names its source; the list shows it."""
    open_thread(page, "article-3")
    checkpoint(page, 5).locator(".cp-open").click()
    page.fill("#fork-id", "article-3-fork")
    page.click("#cp-fork")
    expect(page.locator("#thread-title")).to_have_text("article-3-fork")
    expect(page.locator("#timeline .fork-source")).to_contain_text("forked from article-3")
    expect(page.locator("#threads li.thread[data-id='article-3-fork']")).to_be_visible()
    checkpoint(page, 1).locator(".cp-open").click()
    expect(page.locator("#diff")).to_contain_text("No field changed")
    page.wait_for_timeout(300)
    shot(page, "04-fork")
    page.click("#timeline .fork-source")
    expect(page.locator("#thread-title")).to_have_text("article-3")
    expect(page.locator("#timeline li.cp.current")).to_have_attribute("data-seq", "5")
    branch = checkpoint(page, 5).locator(".fork-to")  # drawn under the checkpoint it left
    expect(branch).to_have_text(re.compile(r"^↳ forked to article-3-fork \(\w+\)$"))
    expect(page.locator("#forks-note")).to_have_text("· 1 fork of this thread")
    shot(page, "07-fork-on-source-timeline")
    branch.click()
    expect(page.locator("#thread-title")).to_have_text("article-3-fork")


class _State(BaseModel):
    n: int = 0


def _slow_run(folder: Path, gate: threading.Event, started: threading.Event) -> None:
    """A run of three steps on its own store over ``folder`` (as another process would),
    its second step held until ``gate``."""

    async def step(state: _State) -> dict[str, int]:
        return {"n": state.n + 1}

    async def held(state: _State) -> dict[str, int]:
        started.set()
        while not gate.is_set():
            await asyncio.sleep(0.02)
        return {"n": state.n + 1}

    graph = StateGraph(_State)
    graph.add_node("first", step).add_node("held", held).add_node("last", step)
    graph.add_edge(START, "first").add_edge("first", "held").add_edge("held", "last")
    graph.add_edge("last", END)
    app = graph.compile(store=JsonFileCheckpointStore(folder))
    asyncio.run(app.run({}, thread_id="live-run"))


def test_a_running_thread_is_followed_live(page: Page, tmp_path: Path) -> None:
    """A thread another process is running shows its new checkpoints, then its end,
    without a reload."""
    gate, started = threading.Event(), threading.Event()
    runner = threading.Thread(target=_slow_run, args=(tmp_path / "threads", gate, started))
    runner.start()
    try:
        assert started.wait(30)
        page.fill("#open-id", "live-run")
        page.click("#open-form button")
        expect(page.locator("#thread-status")).to_contain_text("running")
        expect(page.locator("#live")).to_be_visible()
        count = page.locator("#timeline li.cp").count()
        shot(page, "08-live-running")
        gate.set()
        expect(page.locator("#thread-status")).to_have_text("completed", timeout=20_000)
        assert page.locator("#timeline li.cp").count() > count
        expect(page.locator("#live")).to_be_hidden()
        shot(page, "09-live-completed")
    finally:
        gate.set()
        runner.join(30)


def test_a_hostile_state_string_stays_text(page: Page) -> None:
    """Markup in a state is shown as its characters: no element, no script runs."""
    open_thread(page, "hostile")
    markup = HOSTILE_STATE.split(' "')[0]  # the tree shows a string JSON-quoted
    expect(page.locator("#suspension")).to_contain_text(markup)
    checkpoint(page, 1).locator(".cp-open").click()
    page.click("#tab-state")
    expect(page.locator("#state-tree")).to_contain_text(markup)
    assert page.locator("main img, main script").count() == 0
    checkpoint(page, 2).locator(".cp-open").click()
    page.click("#tab-diff")
    expect(page.locator("#diff")).to_contain_text("<img src=x onerror=alert(7)>")
    shot(page, "05-state-diff")


def test_a_refused_action_shows_the_engine_message(page: Page) -> None:
    """Editing a thread that waits on a question is refused in the engine's words."""
    open_thread(page, "article-1")
    page.click("#edit summary")
    page.fill("#edit-values", '{"topic": "anything"}')
    page.click("#edit-save")
    message = page.locator("#message")
    expect(message).to_contain_text("UpdateRefused: update_state refused on thread `article-1`")
    expect(message).to_have_class(re.compile("error"))
    shot(page, "06-refused")
