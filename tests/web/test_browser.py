"""The page in a real browser: Debian's Chromium driven by Playwright, against uvicorn.

Marked ``slow`` (``pytest -m slow -n 0`` runs them; ``.ci/run`` does). Skipped, saying why, when /usr/bin/chromium or the playwright package is missing
(``.ci/run`` installs both). A screenshot of every step is saved under
``$RESEARCH_FSM_ARTIFACTS/web`` (default ``test-artifacts/web``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers.local_llm import LocalLLM

from research_fsm import JsonFileCheckpointStore, ResearchAssistant
from research_fsm.deep import StaticSearch
from research_fsm.llm import llm_from_env
from research_fsm.sources import DirectorySource, MockDataSource
from research_fsm.web import create_app

from .helpers import (
    HOSTILE_NEWS,
    HOSTILE_TITLE,
    LOCAL_MODEL,
    SPRING_PAGES,
    UNPARSEABLE_URLS,
    HostileSource,
    SlowTokens,
    UnparseableUrlSource,
    qa_brain,
)
from .live import CHROMIUM, LiveServer, artifacts_dir, chromium

pytestmark = pytest.mark.slow

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect
Page = Any


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, headless, a fresh profile, for the module's tests."""
    with chromium(sync_api) as launched:
        yield launched


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile (its own storage); dialogs (an alert) fail the test."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    ctx.set_default_timeout(15_000)
    dialogs: list[str] = []
    ctx.on(
        "page", lambda page: page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    )
    yield ctx
    ctx.close()
    assert not dialogs, f"the page ran a script from the data: {dialogs}"


def home_assistant(
    home: Path,
    cls: type[ResearchAssistant] = ResearchAssistant,
    source: Any = None,
    web_search: Any = None,
) -> ResearchAssistant:
    source = source if source is not None else MockDataSource()
    store = JsonFileCheckpointStore(home / "threads")
    return cls(source=source, store=store, web_search=web_search)


@pytest.fixture
def server(home: Path) -> Iterator[LiveServer]:
    with LiveServer(create_app(home_assistant(home))) as live:
        yield live


def shot(page: Page, name: str) -> Path:
    path = artifacts_dir() / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_page(context: Any, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    return page


def ask(page: Page, text: str) -> None:
    """Type and send a message, once the previous one is finished (Ask is enabled)."""
    expect(page.locator("#send")).to_be_enabled()
    page.fill("#question", text)
    page.press("#question", "Enter")


def answers(page: Page) -> Any:
    return page.locator("#log li.msg.assistant")


def test_ask_clarify_and_follow_up(context: Any, server: LiveServer) -> None:
    page = open_page(context, server.url)
    shot(page, "01-empty")
    ask(page, "Tell me about the company")
    expect(page.locator("#clarify-banner")).to_be_visible()
    expect(answers(page).last).to_contain_text("Which company")
    expect(page.locator("#send")).to_have_text("Answer")
    shot(page, "02-clarification-asked")
    ask(page, "Apple")
    expect(answers(page).last.locator(".confidence")).to_have_text(re.compile("High confidence"))
    expect(page.locator("#clarify-banner")).to_be_hidden()
    links = answers(page).last.locator(".sources a")
    expect(links.first).to_have_attribute("href", "https://investor.apple.com/")
    expect(links.first).to_have_attribute("rel", "noopener noreferrer")
    expect(answers(page).last.locator("strong").first).to_have_text("Key developments")
    shot(page, "03-clarified-answer")
    ask(page, "What about its stock price?")
    expect(answers(page)).to_have_count(3)
    expect(answers(page).last).to_contain_text("AAPL trading at $195")
    expect(answers(page).last.locator(".confidence")).to_be_visible()
    shot(page, "04-follow-up")


def test_streaming_is_visible_before_the_answer_completes(context: Any, home: Path) -> None:
    SlowTokens.pause = 0.05
    assistant = home_assistant(home, SlowTokens, MockDataSource(delay=0.8))
    with LiveServer(create_app(assistant)) as live:
        page = open_page(context, live.url)
        ask(page, "What's happening with Tesla?")
        researching = answers(page).last.locator(".progress li.active")
        expect(researching).to_have_text("Researching Tesla, Inc...")
        assert answers(page).last.locator(".confidence").count() == 0
        shot(page, "05-progress-while-researching")
        streaming = answers(page).last.locator(".bubble.streaming")
        expect(streaming).to_contain_text("Here's what I found")
        partial = streaming.text_content() or ""
        assert answers(page).last.locator(".confidence").count() == 0
        shot(page, "06-tokens-streaming")
        expect(answers(page).last.locator(".confidence")).to_be_visible()
        final = answers(page).last.locator(".bubble").text_content() or ""
        assert len(partial) < len(final)
        shot(page, "07-streamed-answer-complete")


def test_forged_and_replayed_tokens_show_a_clear_message(context: Any, server: LiveServer) -> None:
    page = open_page(context, server.url)
    ask(page, "Tell me about the company")
    expect(page.locator("#clarify-banner")).to_be_visible()
    token = page.get_attribute("#ask-form", "data-token") or ""
    page.evaluate("t => { document.getElementById('ask-form').dataset.token = t; }", token + "x")
    ask(page, "Apple")
    expect(answers(page).last).to_contain_text("token is not valid")
    expect(page.locator("#clarify-banner")).to_be_visible()  # the real question still waits
    shot(page, "08-forged-token")
    ask(page, "Microsoft")
    expect(answers(page).last.locator(".confidence")).to_be_visible()  # the answer is complete
    expect(answers(page).last).to_contain_text("Microsoft Corporation")
    page.evaluate("t => { document.getElementById('ask-form').dataset.token = t; }", token)
    ask(page, "Apple")
    expect(answers(page).last).to_contain_text("already answered")
    expect(page.locator("#clarify-banner")).to_be_hidden()
    shot(page, "09-replayed-token")


def test_report_download(context: Any, server: LiveServer) -> None:
    page = open_page(context, server.url)
    page.fill("#report-company", "Apple")
    page.check("#report-pdf")
    page.click("#report-start")
    link = page.locator("#report-output a.download", has_text="report.md")
    expect(link).to_be_visible()
    expect(page.locator("#report-output .progress li.active")).to_have_count(0)
    shot(page, "10-report-written")
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename.endswith("-report.md")
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.startswith("#") and "Apple Inc." in text
    with page.expect_download() as pdf:
        page.locator("#report-output a.download", has_text="report.pdf").click()
    assert Path(pdf.value.path()).read_bytes().startswith(b"%PDF")


def test_hostile_search_result_is_rendered_as_text(context: Any, home: Path) -> None:
    with LiveServer(create_app(home_assistant(home, source=HostileSource()))) as live:
        page = open_page(context, live.url)
        ask(page, "What's the news on Apple?")
        answer = answers(page).last
        expect(answer.locator(".confidence")).to_be_visible()
        expect(answer).to_contain_text(HOSTILE_NEWS)
        expect(answer).to_contain_text(HOSTILE_TITLE)
        assert page.locator("#log img, #log script, #log b, #log i").count() == 0
        assert answer.locator("a[href^='javascript']").count() == 0
        assert answer.locator(".sources a").count() == 1  # only the https source is a link
        shot(page, "11-hostile-result-as-text")


def test_two_tabs_hold_two_conversations_at_once(context: Any, home: Path) -> None:
    assistant = home_assistant(home, source=MockDataSource(delay=0.6))
    with LiveServer(create_app(assistant)) as live:
        first, second = open_page(context, live.url), open_page(context, live.url)
        ask(first, "What's happening with Apple?")
        ask(second, "What's happening with Tesla?")
        expect(first.locator(".progress li.active")).to_have_text(re.compile("Researching"))
        expect(second.locator(".progress li.active")).to_have_text(re.compile("Researching"))
        expect(answers(first).last.locator(".confidence")).to_be_visible()
        expect(answers(second).last.locator(".confidence")).to_be_visible()
        expect(answers(first).last).to_contain_text("Apple Inc.")
        expect(answers(second).last).to_contain_text("Tesla, Inc.")
        assert "Tesla" not in (answers(first).last.text_content() or "")
        threads = [
            p.evaluate("sessionStorage.getItem('research-fsm-thread')") for p in (first, second)
        ]
        assert threads[0] != threads[1]
        shot(first, "12-tab-one")
        shot(second, "13-tab-two")


def test_reopen_after_a_server_restart(context: Any, home: Path) -> None:
    with LiveServer(create_app(home_assistant(home))) as live:
        port = live.port
        page = open_page(context, live.url)
        ask(page, "What's happening with Amazon?")
        expect(answers(page).last.locator(".confidence")).to_be_visible()
        ask(page, "Tell me about another company")
        expect(page.locator("#clarify-banner")).to_be_visible()
    with LiveServer(create_app(home_assistant(home)), port=port):  # a new process's state
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#log li.msg")).to_have_count(4)
        expect(answers(page).first).to_contain_text("Amazon.com, Inc.")
        expect(answers(page).first.locator(".sources a").first).to_be_visible()
        expect(page.locator("#clarify-banner")).to_be_visible()
        shot(page, "14-reopened-after-restart")
        ask(page, "Google")
        expect(answers(page).last).to_contain_text("Alphabet")
        shot(page, "15-answered-after-restart")
        page.click("#new-conversation")
        expect(page.locator("#log li")).to_have_count(0)
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#log li")).to_have_count(0)


def test_a_comparison_table_is_a_table(context: Any, home: Path) -> None:
    """ "Compare Nvidia with AMD" shows an HTML table, not Markdown pipes."""
    with LiveServer(create_app(home_assistant(home, source=DirectorySource()))) as live:
        page = open_page(context, live.url)
        ask(page, "Compare Nvidia with AMD")
        answer = answers(page).last
        expect(answer.locator(".confidence")).to_be_visible()
        table = answer.locator(".bubble table")
        expect(table).to_have_count(1)
        expect(table.locator("th").nth(1)).to_have_text("Nvidia")
        expect(table.locator("th").nth(2)).to_have_text("AMD")
        expect(table.locator("td", has_text="Revenue").first).to_be_visible()
        assert "|---|" not in (answer.text_content() or "")
        shot(page, "16-comparison-table")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(answers(page).last.locator(".bubble table")).to_have_count(1)  # restored too


@pytest.mark.parametrize(
    ("lang", "heading", "summary"), [("en", "Sources", "Summary"), ("ja", "出典", "概要")]
)
def test_the_whole_report_is_shown_with_linked_sources(
    context: Any, server: LiveServer, lang: str, heading: str, summary: str
) -> None:
    """The report panel shows the whole report, in its language, [S#] linking its sources."""
    page = open_page(context, server.url)
    page.fill("#report-company", "Apple")
    page.select_option("#report-lang", lang)
    page.click("#report-start")
    report = page.locator("#report-output article.report")
    expect(report.locator("h1")).to_contain_text("Apple")
    expect(report).to_have_attribute("lang", lang)
    expect(report.locator("h2").first).to_have_text(summary)
    expect(report.locator("h2", has_text=heading)).to_have_count(1)
    cite = report.locator("a.cite").first
    expect(cite).to_have_text(re.compile(r"^\[S\d+\]$"))
    expect(cite).to_have_attribute("href", re.compile(r"^https://"))
    expect(page.locator("#report-output a.download", has_text="report.md")).to_be_visible()
    expect(page.locator("#report-output p.result")).to_have_count(0)  # no English one-liner
    shot(page, f"17-report-{lang}")
    page.click("#report-output button.widen")
    expect(report).to_have_class(re.compile(r"\bwide\b"))
    shot(page, f"18-report-{lang}-full-width")
    page.keyboard.press("Escape")
    expect(report).not_to_have_class(re.compile(r"\bwide\b"))


@pytest.mark.parametrize(("lang", "heading"), [("en", "Sources"), ("ja", "出典")])
def test_a_deep_research_report_is_shown_with_its_sources(
    context: Any, home: Path, lang: str, heading: str
) -> None:
    """Deep research shows its whole report, in its language, each [S#] a link."""
    web = StaticSearch(SPRING_PAGES, mode="web")
    with LiveServer(create_app(home_assistant(home, web_search=web))) as live:
        page = open_page(context, live.url)
        page.fill("#deep-topic", "Spring Boot 2 to 3 migration")
        page.select_option("#deep-lang", lang)
        page.click("#deep-start")
        report = page.locator("#deep-output article.report")
        expect(report.locator("h1")).to_contain_text("Spring Boot")
        expect(report).to_have_attribute("lang", lang)
        sources = report.locator("h2", has_text=heading).locator("xpath=following-sibling::ul[1]")
        expect(sources.locator("li").first).to_contain_text("[S")
        expect(sources.locator("a.cite").first).to_have_attribute("href", re.compile("^https://"))
        expect(report.locator("table").first).to_be_visible()  # the verification counts
        expect(report.locator("a.cite")).not_to_have_count(0)
        shot(page, f"19-deep-research-{lang}")


def test_unparseable_source_urls_are_text_and_the_conversation_restores(
    context: Any, home: Path
) -> None:
    """Sources at URLs the browser cannot parse show as text; reloading restores it all."""
    with LiveServer(create_app(home_assistant(home, source=UnparseableUrlSource()))) as live:
        page = open_page(context, live.url)
        ask(page, "What's happening with Apple?")
        expect(answers(page).last.locator(".confidence")).to_be_visible()
        ask(page, "What's happening with Tesla?")
        expect(answers(page).last.locator(".confidence")).to_be_visible()
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#log li.msg")).to_have_count(4)
        expect(answers(page).last).to_contain_text("Tesla, Inc.")
        sources = answers(page).last.locator(".sources li")
        expect(sources).to_have_count(len(UNPARSEABLE_URLS))
        for i, url in enumerate(UNPARSEABLE_URLS):
            expect(sources.nth(i)).to_have_text(f"Odd {i} — {url}")
        assert answers(page).last.locator(".sources a").count() == 0
        shot(page, "20-unparseable-urls-as-text")


TEN_QUESTIONS = (
    "Tell me about Apple",
    "Who runs Microsoft?",
    "Tell me about Toyota",
    "What about their revenue?",
    "Tell me about Siemens",
    "Compare Nvidia with AMD",
    "Tell me about Tesla",
    "Who are Intel's competitors?",
    "Tell me about Sony",
    "What about their products?",
)


def test_ten_questions_all_come_back_after_a_reload(context: Any, home: Path) -> None:
    """After ten questions (past the point where the agents' summary starts) a reload
    shows all twenty messages, the first question first, and a profile answer's
    fields as a list."""
    with LiveServer(create_app(home_assistant(home, source=DirectorySource()))) as live:
        page = open_page(context, live.url)
        for number, question in enumerate(TEN_QUESTIONS, start=1):
            ask(page, question)
            expect(answers(page)).to_have_count(number)
            expect(page.locator("#send")).to_be_enabled()
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        messages = page.locator("#log li.msg")
        expect(messages).to_have_count(20)
        users = page.locator("#log li.msg.user")
        assert list(TEN_QUESTIONS) == [text.strip() for text in users.all_text_contents()]
        assert ["user", "assistant"] * 10 == [
            "user" if "user" in (m.get_attribute("class") or "") else "assistant"
            for m in messages.all()
        ]
        apple = answers(page).first
        expect(apple).to_contain_text("Apple Inc.")
        fields = apple.locator(".bubble li", has_text="Country:")
        expect(fields).to_have_count(1)
        expect(fields).to_have_text("Country: United States")
        page.evaluate("document.getElementById('log').scrollTop = 0")
        shot(page, "20-ten-questions-reloaded-top")
        page.evaluate("document.getElementById('log').scrollTop = 1e9")
        expect(page.locator("#log li.msg.user").last).to_be_in_viewport()
        shot(page, "21-ten-questions-reloaded-bottom")


LOADED_MS = 60_000
"""How long an answer through the local-model stand-in may take on a loaded machine (each
structured call is asked twice: through the tool, then for JSON in text)."""


def test_what_degraded_is_shown_once_per_answer(
    context: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local model that answers forced tool calls in text: each answer shows, under
    it, what degraded (JSON asked for in text), once, as text; an offline answer shows none."""
    wanted = (
        f"clarity: the model {LOCAL_MODEL} did not answer through the tool (schema); "
        "its answer was asked for as JSON in text"
    )
    with LocalLLM(qa_brain, mode="text_for_tool") as local:
        monkeypatch.setenv("RESEARCH_FSM_LLM_URL", local.url)
        monkeypatch.setenv("RESEARCH_FSM_MODEL", LOCAL_MODEL)
        store = JsonFileCheckpointStore(home / "threads")
        helper = ResearchAssistant(llm=llm_from_env(), source=MockDataSource(), store=store)
        with LiveServer(create_app(helper)) as live:
            page = open_page(context, live.url)
            ask(page, "What does Apple do?")
            first = answers(page).last
            expect(first.locator(".notes li")).to_have_text([wanted], timeout=LOADED_MS)
            ask(page, "Where is Apple based?")
            expect(answers(page).nth(1).locator(".notes li")).to_have_text(
                [wanted], timeout=LOADED_MS
            )
            assert page.locator(".notes").count() == 2  # one list per answer
            assert first.locator(".notes b, .notes script").count() == 0
            shot(page, "21-what-degraded")
    with LiveServer(create_app(home_assistant(home / "offline"))) as offline:
        page = open_page(context, offline.url)
        ask(page, "What does Apple do?")
        expect(answers(page).last.locator(".confidence")).to_be_visible(timeout=LOADED_MS)
        assert page.locator(".notes").count() == 0
