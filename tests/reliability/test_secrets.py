"""Secrets: with API keys set, no log line, checkpoint file, exception message or repr,
and nothing the CLI prints, contains a key, even when the servers echo the key back in
their error messages."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from servers import FakeAnthropic, FakeTavily
from servers import anthropic as api
from servers import tavily as tv
from servers._http import Reply
from structlog.testing import capture_logs

from research_fsm import ResearchAssistant, configure_logging
from research_fsm.llm import AnthropicLLM
from research_fsm.qa.agents import ClarityVerdict
from research_fsm.sources import SearchContext
from research_fsm.sources._tavily import TavilySource
from research_fsm.stores import JsonFileCheckpointStore

CLAUDE_KEY = "sk-ant-api03-SECRETclaude-7f3e9a1b2c4d5e6f"
TAVILY_KEY = "tvly-SECRETtavily-0a1b2c3d4e5f6a7b"
KEYS = (CLAUDE_KEY, TAVILY_KEY)
NEWS = [
    tv.result(
        "Apple unveils new iPhone",
        "https://news.example.com/iphone",
        "Apple presented its new iPhone lineup at the September event.",
        0.93,
    ),
    tv.result(
        "Apple settles EU case",
        "https://www.reuters.example/apple-eu",
        "Apple reached an agreement with EU regulators on App Store rules.",
        0.88,
    ),
]
CLARITY = {"is_clear": True, "detected_company": "Apple", "intent": "news", "reasoning": "r"}


def echo(status: int) -> Reply:
    """A Claude error whose message repeats the key, as some proxies do (retry at once)."""
    message = f"request with x-api-key {CLAUDE_KEY} refused"
    return api.error(status, message=message, retry_after=0.01 if status >= 429 else None)


def tavily_echo(status: int) -> Reply:
    """A Tavily error whose message repeats the key."""
    return tv.error(status, f"key {TAVILY_KEY} refused (Bearer {TAVILY_KEY})")


def leaks(texts: list[str]) -> list[str]:
    """The texts that contain a key (shortened, with the key masked, for the message)."""
    found = []
    for text in texts:
        if any(key in text for key in KEYS):
            shown = text
            for key in KEYS:
                shown = shown.replace(key, "<KEY>")
            found.append(shown[:300])
    return found


def described(exc: BaseException) -> list[str]:
    """An exception as a user could see it: message, repr and the printed traceback
    (with every chained cause)."""
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc))]


@pytest.fixture
def keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both keys set in the environment, as in production."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", CLAUDE_KEY)
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("TAVILY_BASE_URL", raising=False)


@pytest.fixture
async def llm(keys_in_env: None, anthropic_server: FakeAnthropic) -> AsyncIterator[AnthropicLLM]:
    """Claude from the environment's key, on the loopback server, retrying fast."""
    client = AnthropicLLM(base_url=anthropic_server.url, timeout=2, backoff=0.01, max_backoff=0.02)
    yield client
    await client.aclose()


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """``configure_logging`` changes structlog globally: undo it after each test."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def script_servers(claude: FakeAnthropic, tavily: FakeTavily) -> None:
    """Answers that leak the keys everywhere they can, in the order ``converse`` asks."""
    claude.enqueue(
        # question 1: the verdict
        echo(429),
        echo(529),
        api.tool_use("respond", CLARITY),
        # its answer
        api.stream_error("overloaded_error", f"overloaded for {CLAUDE_KEY}"),
        echo(500),
        api.text("Apple is fine."),
        echo(400),  # question 2: a non-retryable error, the rules take over
        echo(401),  # question 3: the key is rejected; Claude is off from then on
    )
    tavily.enqueue(
        # question 1
        tavily_echo(429),
        tavily_echo(500),
        tv.results(NEWS),
        tavily_echo(400),  # question 2: a rejected query
        tavily_echo(401),  # question 3: a rejected key
        tavily_echo(403),  # the direct search
    )


async def converse(llm: AnthropicLLM, tavily: FakeTavily, store_dir: Path) -> list[str]:
    """Three questions through the assistant plus direct client calls that fail;
    returns everything they produced that a user could see (not the logs)."""
    source = TavilySource(base_url=tavily.url, backoff=0.0, timeout=2)
    store = JsonFileCheckpointStore(store_dir, durability="none")
    assistant = ResearchAssistant(llm=llm, source=source, store=store)
    seen = [
        repr(llm),
        str(llm),
        repr(source),
        str(source),
        repr(store),
        repr(assistant),
        repr(await assistant.graph()),
    ]
    for question in ("What's new at Apple?", "And their stock?", "Tell me about Tesla"):
        reply = await assistant.ask(question, thread_id="secrets")
        seen += [reply.text, repr(reply), json.dumps(reply.state.model_dump(), default=str)]
    try:
        await llm.structured(agent="clarity", system="s", prompt="p", schema=ClarityVerdict)
    except Exception as exc:
        seen += described(exc)
    try:
        await source.search("Apple", SearchContext(query="Apple news", intent="news"))
    except Exception as exc:
        seen += described(exc)
    seen += [path.read_text("utf-8", "replace") for path in store_dir.rglob("*") if path.is_file()]
    return seen


async def test_no_key_in_logs_files_errors_or_reprs(
    llm: AnthropicLLM, anthropic_server: FakeAnthropic, tavily_server: FakeTavily, tmp_path: Path
) -> None:
    """Servers echoing the keys: no log event, reply, checkpoint, exception or repr holds a key."""
    script_servers(anthropic_server, tavily_server)
    with capture_logs() as logs:
        seen = await converse(llm, tavily_server, tmp_path / "store")
    assert 0 == anthropic_server.pending + tavily_server.pending  # every fault was served
    logged = [json.dumps(event, default=repr) for event in logs]
    assert [] == leaks(seen + logged)
    assert any("***" in line or "refused" in line for line in logged)  # the errors were logged


@pytest.mark.parametrize("fmt", ["console", "json"])
async def test_no_key_in_configured_log_output(
    llm: AnthropicLLM,
    anthropic_server: FakeAnthropic,
    tavily_server: FakeTavily,
    tmp_path: Path,
    fmt: str,
) -> None:
    """The same conversation through configure_logging at DEBUG: the log output holds no key."""
    script_servers(anthropic_server, tavily_server)
    out = io.StringIO()
    configure_logging(level="DEBUG", fmt=fmt, stream=out)
    seen = await converse(llm, tavily_server, tmp_path / "store")
    output = out.getvalue()
    assert ([], True) == (leaks([*seen, output]), "Anthropic" in output and "Tavily" in output)


def test_keys_passed_as_arguments_are_hidden(
    monkeypatch: pytest.MonkeyPatch, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """Keys given as arguments (not in the environment) are in no repr either."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    llm = AnthropicLLM(api_key=CLAUDE_KEY, base_url=anthropic_server.url)
    source = TavilySource(TAVILY_KEY, base_url=tavily_server.url)
    assistant = ResearchAssistant(llm=llm, source=source)
    assert [] == leaks([repr(llm), str(llm), repr(source), str(source), repr(assistant)])


async def test_echoed_key_not_in_errors_when_passed_as_argument(
    monkeypatch: pytest.MonkeyPatch, anthropic_server: FakeAnthropic, tavily_server: FakeTavily
) -> None:
    """A key passed as an argument and echoed by the server is masked in errors and logs."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    anthropic_server.default = echo(401)
    tavily_server.default = tavily_echo(400)
    llm = AnthropicLLM(api_key=CLAUDE_KEY, base_url=anthropic_server.url, backoff=0.01)
    source = TavilySource(TAVILY_KEY, base_url=tavily_server.url)
    seen: list[str] = []
    with capture_logs() as logs:
        for call in (
            llm.structured(agent="clarity", system="s", prompt="p", schema=ClarityVerdict),
            llm.generate(agent="synthesis", system="s", prompt="p"),
            source.search("Apple", SearchContext(query="Apple", intent="news")),
        ):
            try:
                await call
            except Exception as exc:
                seen += described(exc)
    await llm.aclose()
    assert ([], 9) == (leaks(seen + [json.dumps(e, default=repr) for e in logs]), len(seen))


# -- the command line ------------------------------------------------------------------------


def cli(
    home: Path, claude: FakeAnthropic, tavily: FakeTavily, *args: str, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    """The CLI with both keys and base URLs in its environment."""
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
        "ANTHROPIC_BASE_URL": claude.url,
        "TAVILY_API_KEY": TAVILY_KEY,
        "TAVILY_BASE_URL": tavily.url,
        "RESEARCH_FSM_HOME": str(home),
        "RESEARCH_DATA_SOURCE": "tavily",
        **env_extra,
    }
    return subprocess.run(
        [sys.executable, "-m", "research_fsm", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["console", "json"])
def test_cli_never_prints_a_key(
    anthropic_server: FakeAnthropic, tavily_server: FakeTavily, tmp_path: Path, fmt: str
) -> None:
    """The CLI at DEBUG with key-echoing servers: no key on stdout, stderr or in its files."""
    anthropic_server.enqueue(
        # the first verdict: overloaded twice, then unclear
        echo(529),
        echo(529),
        api.tool_use("respond", {"is_clear": False, "clarification_needed": "Which one?"}),
        echo(401),  # the answer's verdict: the key is rejected, rules from then on
    )
    tavily_server.enqueue(tavily_echo(429), tavily_echo(401))
    env = {"LOG_LEVEL": "DEBUG", "LOG_FORMAT": fmt}
    runs = [
        cli(
            tmp_path,
            anthropic_server,
            tavily_server,
            "ask",
            "Tell me about the company",
            "--thread",
            "s1",
            **env,
        ),
        cli(tmp_path, anthropic_server, tavily_server, "answer", "--thread", "s1", "Apple", **env),
        cli(tmp_path, anthropic_server, tavily_server, "ask", "Apple news", "--json", **env),
        cli(tmp_path, anthropic_server, tavily_server, "history", "--thread", "s1", **env),
    ]
    files = [p.read_text("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    outputs = [text for run in runs for text in (run.stdout, run.stderr)]
    assert [3, 0, 0, 0] == [run.returncode for run in runs], outputs
    assert [] == leaks(outputs + files)
    # ask: 3 verdicts; answer: 1 verdict, 2 searches; ask --json: 2 verdicts, 1 search, and
    # each verdict answered in plain text ("ok") is asked once more for JSON in text
    assert (8, 3) == (anthropic_server.count(), tavily_server.count())
    retold = [r for r in anthropic_server.requests if not r.body.get("tools")]
    assert 2 == len(retold), [r.body for r in retold]
