"""The page's past work in a real browser: a conversation reopened, a report full width.

Marked ``slow`` as the page's other browser tests; skipped without Chromium or playwright.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from research_fsm import JsonFileCheckpointStore, ResearchAssistant
from research_fsm.reports import reports_home
from research_fsm.sources import MockDataSource
from research_fsm.web import create_app

from .helpers import HOSTILE_TITLE
from .live import CHROMIUM, CHROMIUM_ARGS, LiveServer, artifacts_dir

pytestmark = pytest.mark.slow

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect
expect.set_options(timeout=15_000)


@pytest.fixture
def page(home: Path) -> Iterator[Any]:
    """The assistant's page over a fresh home, in Chromium; a dialog fails the test."""
    assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(home / "threads")
    )
    dialogs: list[str] = []
    with LiveServer(create_app(assistant)) as live, sync_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except Exception as exc:
            pytest.skip(f"{CHROMIUM} does not start: {exc}")
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.set_default_timeout(15_000)
        tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        tab.goto(live.url)
        tab.wait_for_selector("body[data-ready=true]")
        yield tab
        browser.close()
    assert not dialogs, f"the page ran a script from the data: {dialogs}"


def test_a_past_conversation_and_report_reopen(page: Any, home: Path) -> None:
    """Ask, start another conversation, reopen the first from Past work; a saved report
    opens full width, its hostile company name as text."""
    folder = reports_home() / "evil-20261207"
    folder.mkdir(parents=True)
    meta = {"company": HOSTILE_TITLE, "generated_at": "2026-12-07T10:00:00Z"}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (folder / "report.md").write_text(f"## Overview\n\n{HOSTILE_TITLE} grew.\n", encoding="utf-8")
    page.fill("#question", "What's happening with Apple?")
    page.press("#question", "Enter")
    expect(page.locator("#log li.msg.assistant .confidence")).to_be_visible()
    page.click("#new-conversation")
    expect(page.locator("#log li")).to_have_count(0)
    page.click("#past-panel summary")
    first = page.locator("#past-conversations .past-open").first
    expect(first).to_have_text("What's happening with Apple?")
    first.click()
    expect(page.locator("#log li.msg.user")).to_have_text("What's happening with Apple?")
    expect(page.locator("#log li.msg.assistant")).to_contain_text("Apple")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("#log li.msg.assistant button.copy").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "Apple" in copied and copied == copied.strip()
    page.locator("#past-reports .past-open").first.click()
    expect(page.locator("#report-view")).to_be_visible()  # the main column, not the side
    expect(page.locator("#report-output article.report")).to_contain_text(HOSTILE_TITLE)
    assert page.locator("#report-output img").count() == 0
    page.screenshot(path=str(artifacts_dir() / "past-work-report.png"))


def test_badges_and_the_report_shown_survive_a_reload(page: Any, home: Path) -> None:
    """An answer's confidence badge and the report in the main column are there again
    after a reload; the report takes the main column's width, not the side column's."""
    page.fill("#question", "What's happening with Apple?")
    page.press("#question", "Enter")
    badge = page.locator("#log li.msg.assistant .confidence")
    expect(badge).to_have_text(re.compile("confidence"))
    label = badge.text_content()
    page.fill("#report-company", "Apple")
    page.click("#report-start")
    report = page.locator("#report-output article.report")
    expect(report.locator("h1")).to_contain_text("Apple")
    expect(page.locator("#tab-report")).to_have_attribute("aria-selected", "true")
    box, side = report.bounding_box(), page.locator("aside").bounding_box()
    assert box is not None and side is not None
    assert box["x"] + box["width"] <= side["x"] and box["width"] > side["width"] * 1.5
    page.screenshot(path=str(artifacts_dir() / "report-main-column.png"))
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(report.locator("h1")).to_contain_text("Apple")
    expect(page.locator("#report-view")).to_be_visible()
    page.click("#tab-chat")
    expect(page.locator("#log li.msg.assistant .confidence")).to_have_text(label or "?")
    page.screenshot(path=str(artifacts_dir() / "badge-after-reload.png"))
