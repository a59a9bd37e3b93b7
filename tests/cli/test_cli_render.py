"""Answers in the terminal: Markdown drawn on a terminal, plain text in a pipe, the
confidence shown; ``chat``'s commands are never sent as questions."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from homes import seeded_home

from research_fsm.cli._render import AnswerView, plain_text

from .test_cli import cli

ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class FakeTerminal(io.StringIO):
    """A text buffer that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_plain_text_has_no_markup() -> None:
    """Bold, headings, lists, tables and links become plain words, a list and aligned
    columns: no ``**``, ``#`` or table pipes."""
    markdown = (
        "## Overview\n\n**Overview**\n\n- **Country:** Japan\n- **Employees:** 375,235\n\n"
        "| | Toyota | Honda |\n|---|---|--:|\n| Revenue | ¥45.1 trillion | ¥20.43 trillion |\n\n"
        "_Figures as of FY2024._ See [the page](https://example.com/a)."
    )
    text = plain_text(markdown)
    assert "**" not in text and "|" not in text and "#" not in text and "_" not in text
    assert text.split("\n\n")[:3] == [
        "Overview",
        "Overview",
        "- Country: Japan\n- Employees: 375,235",
    ]
    table = text.split("\n\n")[3].split("\n")
    assert ["", "Revenue"] == [row.split("  ")[0].strip() for row in (table[0], table[2])]
    assert table[0].index("Toyota") == table[2].index("¥45.1")  # columns line up
    assert text.endswith("See the page (https://example.com/a).")


def test_wide_characters_line_up_in_a_plain_table() -> None:
    """A Japanese cell takes two columns a character: the next column still lines up."""
    text = plain_text("| 項目 | 値 |\n|---|---|\n| 売上高 | 1 |\n| CEO | 2 |\n")
    rows = text.split("\n")
    positions = {
        row.rstrip()[-1]: sum(2 if ord(c) > 0x2E80 else 1 for c in row) for row in rows[2:]
    }
    assert positions["1"] == positions["2"]


def test_a_terminal_gets_the_markdown_drawn_block_by_block() -> None:
    """On a terminal each finished block is drawn as it is written (bold as an escape
    sequence, not ``**``), the rest at the end; nothing is drawn twice."""
    out = FakeTerminal()
    view = AnswerView(out)
    view.token("Here's what I found:\n\n**Overview**\n\n- **Country:** Ja")
    drawn = out.getvalue()
    assert "Overview" in drawn and "Country" not in drawn
    view.token("pan\n- **Employees:** 10\n")
    view.finish("ignored: the streamed text was drawn")
    text = out.getvalue()
    assert "**" not in text and "\x1b[1m" in text
    visible = ESCAPE.sub("", text)
    assert 1 == visible.count("Overview") == visible.count("Country: Japan")
    assert "ignored" not in visible


def test_a_pipe_gets_plain_text_and_the_confidence(tmp_path: Path) -> None:
    """``ask`` piped prints the profile as plain lines, then how confident it is;
    ``--json`` still holds the Markdown."""
    result = cli(tmp_path, "ask", "Tell me about Apple")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "- Country: United States" in lines and "Overview" in lines
    assert "**" not in result.stdout and "\x1b" not in result.stdout
    assert re.search(r"^High confidence \(\d+/10\)$", result.stdout, re.M)
    raw = json.loads(cli(tmp_path, "ask", "Tell me about Apple", "--json").stdout)
    assert "- **Country:** United States" in raw["text"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_terminal_gets_formatted_text(tmp_path: Path) -> None:
    """``ask`` on a terminal draws the Markdown: bold by escape sequence, bullets, no ``**``."""
    leader, follower = pty.openpty()
    env = {**os.environ, "RESEARCH_FSM_HOME": str(seeded_home(tmp_path)), "LOG_LEVEL": "WARNING"}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("TAVILY_API_KEY", None)
    env.update(COLUMNS="100", TERM="xterm-256color")
    process = subprocess.Popen(
        [sys.executable, "-m", "research_fsm", "ask", "Tell me about Apple"],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    text = b"".join(chunks).decode()
    assert "**" not in text and "\x1b[1m" in text
    assert "Country:" in ESCAPE.sub("", text) and "•" in text


def test_chat_commands_are_never_questions(tmp_path: Path) -> None:
    """``/help`` lists the commands, ``/new`` starts a new conversation, an unknown
    command says so, ``/quit`` leaves: none reaches the assistant."""
    result = cli(
        tmp_path,
        "chat",
        "--thread",
        "chat-c",
        stdin="/help\nTell me about Apple\n/bogus\n/new\nWhat about their revenue?\n/quit\n"
        "Tell me about Tesla\n",
    )
    assert result.returncode == 0, result.stderr
    assert "/new    start a new conversation" in result.stderr
    assert "unknown command /bogus" in result.stderr
    new_thread = re.search(r"New conversation (q-[0-9a-f]+)\.", result.stderr)
    assert new_thread is not None
    assert re.search(r"^High confidence \(\d+/10\)$", result.stdout, re.M)
    first = json.loads(cli(tmp_path, "history", "--thread", "chat-c", "--json").stdout)
    assert ["Tell me about Apple"] == [m["content"] for m in first if m["role"] == "user"]
    second = json.loads(cli(tmp_path, "history", "--thread", new_thread[1], "--json").stdout)
    assert ["What about their revenue?"] == [m["content"] for m in second if m["role"] == "user"]
    # (nothing after /quit was asked: "Tell me about Tesla" is in neither conversation)
    assert second[-1]["content"].startswith("Which company")  # no company carried over


def test_no_confidence_after_a_reply_without_research(tmp_path: Path) -> None:
    """ "thanks" after a company answer gets no confidence line (no research went into it)."""
    result = cli(tmp_path, "chat", "--thread", "chat-t", stdin="Tell me about Apple\nthanks\n")
    assert result.returncode == 0, result.stderr
    assert 1 == len(re.findall(r"confidence \(\d+/10\)", result.stdout))


def test_without_rich_a_terminal_gets_plain_text_and_one_notice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When ``rich`` cannot be imported, answers on a terminal print as plain text and
    the missing package is said once, on stderr."""
    from research_fsm.cli import _render

    monkeypatch.setitem(sys.modules, "rich.console", None)
    monkeypatch.setattr(_render, "_warned", [])
    out = FakeTerminal()
    for _ in range(2):
        view = AnswerView(out)
        view.token("**Overview**\n\n- **Country:** Japan\n")
        view.finish("**Overview**\n\n- **Country:** Japan\n")
    assert "Overview\n\n- Country: Japan\n" * 2 == out.getvalue()
    assert 1 == capsys.readouterr().err.count("the `rich` package is missing")
