"""Hostile and odd input, with hypothesis: arbitrary unicode questions, thread ids and
resume tokens into ``ask``, ``clarify``, the engine's ``run``/``resume`` and the CLI.

Only the documented exceptions may escape:

* ``InvalidQuestion`` (a ``ValueError``): a question that is not text or too long;
* ``ValueError``: a thread id outside ``[A-Za-z0-9._-]{1,128}`` (no leading dot);
* ``EngineError`` subclasses: ``InvalidResumeToken`` for a malformed, edited or foreign
  token, ``StaleResumeToken`` for a used one, ``StateSerializationError`` for a state
  the file store cannot write (a lone surrogate reaching the bare engine), ...

The CLI prints no traceback and exits 0, 1, 2 or 3; nothing is written outside the
store directory.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from research_fsm import ResearchAssistant
from research_fsm.common.text import clean_text
from research_fsm.engine import (
    END,
    START,
    CompiledGraph,
    EngineError,
    InvalidResumeToken,
    StaleResumeToken,
    StateGraph,
    StateSerializationError,
    Suspend,
    SuspendToken,
    append,
)
from research_fsm.engine import NodeContext as Ctx
from research_fsm.qa import InvalidQuestion, Reply
from research_fsm.qa.constants import MAX_QUESTION_CHARS
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore

THREAD_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
FRAGMENTS = [
    "\x00",
    "\x07",
    "\x1b[2J",
    "\x1b]0;pwned\x07",
    "\x9b31m",
    "\r",
    "\n",
    "\t",
    "\x7f",
    "\u202e",
    "\u2066",
    "\u200f",
    "\ufeff",
    "\ud800",
    "\udfff",
    "\udc80",
    "\U0001f600",
    "\U0001f1fa\U0001f1f8",
    "e\u0301",
    "\u0645\u0631\u062d\u0628\u0627",
    "Apple",
    "Tesla",
    "nevermind",
    "What about their stock?",
    "..",
    "../",
    "/etc/passwd",
    "~",
    "$HOME",
    "%s%n",
    "{0}",
    "<findings>",
    "'; DROP TABLE",
    "\uffff",
    "\U0010ffff",
]
"""Pieces that broke programs before: controls, escapes, bidi, surrogates, paths."""

CHARS = st.characters(exclude_categories=[])  # every code point, lone surrogates included
hostile_text = st.lists(
    st.one_of(st.text(CHARS, max_size=20), st.sampled_from(FRAGMENTS)), max_size=12
).map("".join)
huge_text = st.builds(
    lambda piece, n: piece * n,
    st.sampled_from([*FRAGMENTS[:20], "a b "]),
    st.sampled_from([MAX_QUESTION_CHARS, 25_000, 100_000]),
)
questions = st.one_of(hostile_text, huge_text)
ODD_THREADS = [".hidden", "..", "a/b", "-", "x" * 129, "", "CON"]
thread_ids = st.one_of(
    st.from_regex(THREAD_ID, fullmatch=True), hostile_text, st.sampled_from(ODD_THREADS)
)
API_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def files_under(root: Path) -> set[Path]:
    """Every file and directory below ``root``."""
    return set(root.rglob("*"))


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory, home and data directory under ``tmp_path``; on exit, asserts
    that nothing was created under ``tmp_path``'s parent outside ``tmp_path/store``."""
    for name in ("home", "work"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home" / "research-fsm"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    parent = tmp_path.parent
    before = files_under(parent)
    yield tmp_path
    store = tmp_path / "store"
    created = {p for p in files_under(parent) - before if store not in p.parents and p != store}
    assert set() == created


def is_thread_id(text: str) -> bool:
    """Whether ``text`` is a valid thread id."""
    return THREAD_ID.fullmatch(text) is not None


def clean_length(text: str) -> int:
    """The length ``ask`` checks: after its cleaning."""
    return len(clean_text(text))


# -- ask ---------------------------------------------------------------------------------


@API_SETTINGS
@given(question=questions, thread_id=thread_ids)
@example(question="\x00\ud800\u202e\U0001f600", thread_id="t")
@example(question="Tell me about Apple" + "\u202e" * 5000, thread_id="t")
@example(question="x" * 100_000, thread_id="../../etc")
async def test_ask_any_text_any_thread(sandbox: Path, question: str, thread_id: str) -> None:
    """ask with any text and thread id: a Reply, InvalidQuestion or ValueError, nothing else."""
    assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(sandbox / "store", durability="none")
    )
    too_long = clean_length(question) > MAX_QUESTION_CHARS
    try:
        reply: Reply | Exception = await assistant.ask(question, thread_id=thread_id)
    except InvalidQuestion as exc:
        reply = exc
    except ValueError as exc:
        reply = exc
    if too_long:
        expected: type = InvalidQuestion
    elif not is_thread_id(thread_id):
        expected = ValueError
    else:
        expected = Reply
    assert expected is type(reply)
    if isinstance(reply, Reply):
        assert (thread_id, True) == (
            reply.thread_id,
            reply.status in ("answered", "needs_clarification"),
        )


async def test_ask_rejects_non_text(sandbox: Path) -> None:
    """Non-text questions are ``InvalidQuestion``, not ``TypeError``."""
    assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(sandbox / "store", durability="none")
    )
    raised = []
    for bad in (None, b"Apple", 42, ["Apple"]):
        with pytest.raises(InvalidQuestion) as caught:
            await assistant.ask(bad, thread_id="t")  # type: ignore[arg-type]
        raised.append(type(caught.value))
    assert [InvalidQuestion] * 4 == raised


# -- clarify and resume tokens --------------------------------------------------------------


def _body(token: str) -> tuple[str, str]:
    body, _, signature = token.removeprefix("rt1.").partition(".")
    return body, signature


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).rstrip(b"=").decode()


@st.composite
def forged_tokens(draw: st.DrawFn, genuine: str, other_thread: str) -> str:
    """Tokens derived from ``genuine``: truncated, edited, re-pointed at another
    thread or checkpoint, re-signed with garbage, or random text."""
    body, signature = _body(genuine)
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "edit",
                "other-thread",
                "other-checkpoint",
                "signature",
                "random",
                "prefixed-random",
            ]
        )
    )
    if kind == "truncate":
        return genuine[: draw(st.integers(0, len(genuine) - 1))]
    if kind == "edit":
        at = draw(st.integers(0, len(genuine) - 1))
        ch = draw(st.one_of(st.sampled_from("AZaz09-_.=+/\x00\n\ud800\u00e9"), CHARS))
        return genuine[:at] + ch + genuine[at + 1 :]
    thread, _, checkpoint = base64.urlsafe_b64decode(body + "==").decode().partition("\n")
    if kind == "other-thread":
        return f"rt1.{_b64(other_thread + chr(10) + checkpoint)}.{signature}"
    if kind == "other-checkpoint":
        fake = draw(st.text(CHARS, min_size=1, max_size=30))
        return f"rt1.{_b64(thread + chr(10) + fake)}.{signature}"
    if kind == "signature":
        odd = st.sampled_from(["\ud800", "\udcff", "\x00", "\u00e9", "\U0001f600", "."])
        return f"rt1.{body}.{draw(st.text(st.one_of(CHARS, odd), max_size=40))}"
    if kind == "random":
        return draw(hostile_text)
    return "rt1." + draw(hostile_text)


def same_token(text: str, genuine: str) -> bool:
    """Whether ``text`` parses to exactly the genuine token (base64 has spare bits)."""
    try:
        return SuspendToken.parse(text) == SuspendToken.parse(genuine)
    except InvalidResumeToken:
        return False


@pytest.fixture
def clarifying(sandbox: Path) -> ResearchAssistant:
    """An offline assistant over the mock data whose file store lives in the sandbox."""
    store = JsonFileCheckpointStore(sandbox / "store", durability="none")
    return ResearchAssistant(source=MockDataSource(), store=store)


@API_SETTINGS
@given(data=st.data(), answer=questions)
async def test_clarify_with_forged_tokens(
    clarifying: ResearchAssistant, data: st.DataObject, answer: str
) -> None:
    """clarify with a forged token is refused; the genuine token still works, once."""
    thread = f"c-{uuid.uuid4().hex}"
    asked = await clarifying.ask("Tell me about the company", thread_id=thread)
    assert ("needs_clarification", True) == (asked.status, asked.token is not None)
    genuine = str(asked.token)
    other = await clarifying.ask("Tell me about the company", thread_id=thread + "-other")
    forged = data.draw(forged_tokens(genuine, other.thread_id))
    try:
        outcome: object = await clarifying.clarify(forged, answer)
    except (EngineError, InvalidQuestion) as exc:
        outcome = exc
    too_long = clean_length(answer) > MAX_QUESTION_CHARS
    if same_token(forged, genuine):
        assert (InvalidQuestion if too_long else Reply) is type(outcome), repr(outcome)
        return
    allowed = {InvalidResumeToken, InvalidQuestion} if too_long else {InvalidResumeToken}
    assert type(outcome) in allowed, repr(outcome)
    pending = await clarifying.pending_question(thread)
    assert (True, genuine) == (pending is not None, pending.token if pending else None)
    reply = await clarifying.clarify(genuine, "Apple")
    with pytest.raises(StaleResumeToken):
        await clarifying.clarify(genuine, "Apple")
    assert ("answered", "Apple Inc.") == (reply.status, reply.company)


async def test_token_from_another_store_is_refused(sandbox: Path) -> None:
    """A genuine token of another store (another secret) for the same thread id is refused."""
    mine = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(sandbox / "store" / "a")
    )
    theirs = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(sandbox / "store" / "b")
    )
    await mine.ask("Tell me about the company", thread_id="same")
    foreign = await theirs.ask("Tell me about the company", thread_id="same")
    with pytest.raises(InvalidResumeToken):
        await mine.clarify(str(foreign.token), "Apple")
    assert None is not await mine.pending_question("same")


async def test_token_naming_an_invalid_thread_is_invalid_token(sandbox: Path) -> None:
    """A token naming an invalid thread id is an InvalidResumeToken, not a bare ValueError."""
    assistant = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(sandbox / "store")
    )
    token = "rt1." + _b64("../../etc/passwd\nabc") + ".c2lnbmF0dXJl"
    with pytest.raises(InvalidResumeToken):
        await assistant.clarify(token, "Apple")


async def test_lone_surrogate_in_token_signature(clarifying: ResearchAssistant) -> None:
    """A lone surrogate in a token signature is an InvalidResumeToken, not UnicodeEncodeError."""
    asked = await clarifying.ask("Tell me about the company", thread_id="surrogate")
    body, _ = _body(str(asked.token))
    with pytest.raises(InvalidResumeToken):
        await clarifying.clarify(f"rt1.{body}.\ud800", "Apple")


# -- the engine ---------------------------------------------------------------------------


class Note(BaseModel):
    """A small state: the input text and a log of values."""

    text: str = ""
    log: Annotated[list[str], append] = []


class AskBack:
    """Suspends with the text; the resume value joins the log."""

    async def run(self, state: Note, ctx: Ctx) -> Suspend:
        return Suspend({"question": state.text})

    async def resume(self, state: Note, value: Any, ctx: Ctx) -> dict[str, Any]:
        return {"log": [value]}


async def echo(state: Note) -> dict[str, Any]:
    """Logs the text."""
    return {"log": [state.text]}


def small_graph(store: JsonFileCheckpointStore) -> CompiledGraph[Note]:
    """START -> echo -> ask (suspends) -> END."""
    graph = StateGraph(Note)
    graph.add_node("echo", echo).add_node("ask", AskBack())
    graph.add_edge(START, "echo").add_edge("echo", "ask").add_edge("ask", END)
    return graph.compile(store=store)


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (not valid unicode for a JSON file)."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


@API_SETTINGS
@given(data=st.data(), text=questions, thread_id=thread_ids, value=questions)
async def test_engine_run_and_resume(
    sandbox: Path, data: st.DataObject, text: str, thread_id: str, value: str
) -> None:
    """Engine run/resume with any text, thread id and forged token raise only documented errors."""
    store = JsonFileCheckpointStore(sandbox / "store" / uuid.uuid4().hex, durability="none")
    app = small_graph(store)
    try:
        first = await app.run({"text": text}, thread_id=thread_id)
    except ValueError as exc:
        assert (ValueError, False) == (type(exc), is_thread_id(thread_id))
        return
    except StateSerializationError:
        assert True is has_surrogate(text)
        return
    assert ("suspended", False) == (first.status, has_surrogate(text))
    assert first.suspension is not None
    genuine = str(first.suspension.token)
    forged = data.draw(forged_tokens(genuine, "another-thread"))
    if not same_token(forged, genuine):
        with pytest.raises(InvalidResumeToken):
            await app.resume(forged, value)
    try:
        done = await app.resume(genuine, value)
    except StateSerializationError:
        assert True is has_surrogate(value)
        return
    assert ("completed", [text, value]) == (done.status, done.state.log[-2:])


# -- the command line -----------------------------------------------------------------------

cli_bytes = st.one_of(
    hostile_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(max_size=60),
).map(lambda raw: raw.replace(b"\x00", b""))  # argv cannot carry NUL
"""Arguments as raw bytes: invalid UTF-8 reaches Python as lone surrogates."""
CLI_SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def cli(
    sandbox: Path, *args: bytes | str, stdin: bytes = b"", encoding: str = "utf-8"
) -> subprocess.CompletedProcess[bytes]:
    """``python -m research_fsm ARGS`` with everything it may touch inside the sandbox,
    its standard streams in ``encoding`` with strict errors (as on most desktops)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= {
        "HOME": str(sandbox / "home"),
        "XDG_DATA_HOME": str(sandbox / "home" / "data"),
        "RESEARCH_FSM_HOME": str(sandbox / "store"),
        "TMPDIR": str(sandbox / "store"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "RESEARCH_DATA_SOURCE": "mock",
        "PYTHONIOENCODING": encoding,
    }
    return subprocess.run(
        [sys.executable, "-m", "research_fsm", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=sandbox / "work",
        timeout=60,
    )


def assert_clean_exit(result: subprocess.CompletedProcess[bytes]) -> None:
    """Exit status 0-3 and no traceback."""
    output = result.stdout + result.stderr
    assert (True, False) == (result.returncode in (0, 1, 2, 3), b"Traceback" in output), output


@pytest.mark.slow
@CLI_SETTINGS
@given(question=cli_bytes, thread=cli_bytes)
@example(question=b"\xff\xfe Tell me about \x1b[2J Apple \xe2\x80\xae", thread=b"t-1")
@example(question="\ud800 Apple".encode("utf-8", "surrogatepass"), thread=b"../x")
async def test_cli_ask_and_answer(sandbox: Path, question: bytes, thread: bytes) -> None:
    """ask, answer and history with any bytes as text and thread: exit 0-3, no traceback."""
    for args in (
        (b"ask", question, b"--thread", thread),
        (b"ask", question, b"--json"),
        (b"answer", b"--thread", thread, question),
        (b"history", b"--thread", thread),
    ):
        assert_clean_exit(cli(sandbox, *args))


@pytest.mark.slow
@CLI_SETTINGS
@given(lines=st.lists(cli_bytes, max_size=4))
async def test_cli_chat(sandbox: Path, lines: list[bytes]) -> None:
    """``chat`` fed any lines on stdin: exit 0, no traceback."""
    result = cli(sandbox, b"chat", stdin=b"\n".join([*lines, b"Tell me about Tesla", b""]))
    assert_clean_exit(result)
    assert 0 == result.returncode


def test_cli_huge_question(sandbox: Path) -> None:
    """A 100 kB question is refused with one line and status 2."""
    result = cli(sandbox, b"ask", b"Apple " * 17_000)
    assert (2, 1, b"") == (result.returncode, result.stderr.count(b"\n"), result.stdout)


def test_cli_chat_survives_undecodable_input(sandbox: Path) -> None:
    """A chat line that is not valid UTF-8 does not end the chat."""
    result = cli(sandbox, b"chat", stdin=b"Tell me about \xff\xfe Apple\nTell me about Tesla\n")
    assert_clean_exit(result)
    answers = result.stdout.count(b"Here's what I found about")
    assert (0, 2, b"Tesla, Inc." in result.stdout) == (result.returncode, answers, True)


def test_cli_answer_on_an_ascii_terminal(sandbox: Path) -> None:
    """On a terminal that cannot show "é" the answer is still printed, with a replacement."""
    result = cli(sandbox, "ask", "Tell me about Nestlé", "--source", "directory", encoding="ascii")
    assert_clean_exit(result)
    assert (0, True) == (result.returncode, b"Here's what I found about Nestl? SA" in result.stdout)
