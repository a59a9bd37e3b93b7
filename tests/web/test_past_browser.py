"""The page's past work in a real browser: a conversation reopened, a report full width.

Marked ``slow`` as the page's other browser tests; skipped without Chromium or playwright.
"""

from __future__ import annotations

import json
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
    expect(page.locator("#report-output article.report.wide")).to_contain_text(HOSTILE_TITLE)
    assert page.locator("#report-output img").count() == 0
    page.screenshot(path=str(artifacts_dir() / "past-work-report.png"))
