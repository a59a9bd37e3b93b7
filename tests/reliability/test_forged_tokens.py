"""Forged tokens: a resume token is bound to its thread and checkpoint and signed.

Every edit of ``str(token)`` (each position, each character; insertions, deletions,
truncations), a token minted for another thread with or without the right key, and
a genuine token replayed too late are refused with ``InvalidResumeToken`` or
``StaleResumeToken``, and no node code runs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import string
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from research_fsm import ResearchAssistant
from research_fsm.engine import (
    END,
    START,
    CompiledGraph,
    InvalidResumeToken,
    NodeContext,
    StaleResumeToken,
    StateGraph,
    Suspend,
    SuspendToken,
    append,
)
from research_fsm.sources import MockDataSource
from research_fsm.stores import JsonFileCheckpointStore


class Ledger(BaseModel):
    n: int = 0
    log: Annotated[list[str], append] = []


class Calls:
    """Every node call of a graph, in order: what must not grow on a refused resume."""

    def __init__(self) -> None:
        self.made: list[str] = []


class Ask:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    async def run(self, state: Ledger, ctx: NodeContext) -> Suspend:
        self.calls.made.append("ask.run")
        return Suspend({"question": "amount?"})

    async def resume(self, state: Ledger, value: Any, ctx: NodeContext) -> dict[str, Any]:
        self.calls.made.append(f"ask.resume {value}")
        return {"n": state.n + 1, "log": [f"paid {value}"]}


def pay_app(store: JsonFileCheckpointStore, calls: Calls) -> CompiledGraph[Ledger]:
    """START -> ask -> after -> END, every node call recorded in ``calls``."""

    async def after(state: Ledger) -> dict[str, Any]:
        calls.made.append("after")
        return {"log": ["after"]}

    graph = StateGraph(Ledger)
    graph.add_node("ask", Ask(calls)).add_node("after", after)
    graph.add_edge(START, "ask").add_edge("ask", "after").add_edge("after", END)
    return graph.compile(store=store)


def spell(thread_id: str, checkpoint_id: str, signature: str) -> str:
    """The string form of a token with these parts."""
    return str(SuspendToken(thread_id=thread_id, checkpoint_id=checkpoint_id, signature=signature))


def mint(key: bytes, thread_id: str, checkpoint_id: str) -> str:
    """A token made the way the engine makes one, with ``key``."""
    digest = hmac.new(key, f"{thread_id}\n{checkpoint_id}".encode(), hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(digest[:18]).rstrip(b"=").decode()
    return spell(thread_id, checkpoint_id, signature)


EDIT_CHARS = string.ascii_letters + string.digits + "-_+/=.!~ %\n\x00\u00e9\u202e\U0001f600"
"""Replacement characters: the token alphabet, base64's other spellings, and junk."""


async def suspended(tmp_path: Path, thread_id: str) -> tuple[CompiledGraph[Ledger], Calls, str]:
    """A file-store graph with ``thread_id`` suspended; the token as a string."""
    calls = Calls()
    app = pay_app(JsonFileCheckpointStore(tmp_path / "store"), calls)
    result = await app.run({}, thread_id=thread_id)
    assert result.suspension is not None
    return app, calls, str(result.suspension.token)


async def assert_untouched(app: CompiledGraph[Ledger], calls: Calls, token: str) -> None:
    """No node ran since the suspension, and the genuine token still works."""
    assert ["ask.run"] == calls.made
    result = await app.resume(token, "genuine")
    assert (["ask", "after"], ["paid genuine", "after"]) == (result.path, result.state.log)


@pytest.mark.parametrize("thread_id", ["t", "alice", "thread-0042", "Bob.Smith_99"])
async def test_every_single_character_edit_is_refused(tmp_path: Path, thread_id: str) -> None:
    """Replacing any one character of str(token) with any other character gets InvalidResumeToken and runs no node."""
    app, calls, token = await suspended(tmp_path, thread_id)
    accepted: list[tuple[int, str]] = []
    for position in range(len(token)):
        for char in EDIT_CHARS:
            if char == token[position]:
                continue
            edited = token[:position] + char + token[position + 1 :]
            try:
                await app.resume(edited, "forged")
            except InvalidResumeToken:
                continue
            accepted.append((position, char))
    assert [] == accepted
    await assert_untouched(app, calls, token)


async def test_every_truncation_is_refused(tmp_path: Path) -> None:
    """Every proper prefix and suffix of str(token) gets InvalidResumeToken and runs no node."""
    app, calls, token = await suspended(tmp_path, "alice")
    refused = 0
    for cut in range(len(token)):
        for piece in (token[:cut], token[cut + 1 :]):
            with pytest.raises(InvalidResumeToken):
                await app.resume(piece, "forged")
            refused += 1
    assert 2 * len(token) == refused
    await assert_untouched(app, calls, token)


@pytest.mark.slow
def test_random_edits_are_refused(tmp_path: Path) -> None:
    """Hypothesis: any insertion, deletion or replacement of arbitrary unicode in str(token) gets InvalidResumeToken, through the engine and the assistant."""
    with asyncio.Runner() as runner:
        app, calls, token = runner.run(suspended(tmp_path, "alice-42"))
        assistant = ResearchAssistant(source=MockDataSource(), store=app.store)

        @settings(
            max_examples=300,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(
            start=st.integers(0, len(token)),
            length=st.integers(0, 4),
            insert=st.text(max_size=4),
        )
        def check(start: int, length: int, insert: str) -> None:
            edited = token[:start] + insert + token[start + length :]
            if edited == token:
                return
            with pytest.raises(InvalidResumeToken):
                runner.run(app.resume(edited, "forged"))
            with pytest.raises(InvalidResumeToken):
                runner.run(assistant.clarify(edited, "Apple"))

        check()
        runner.run(assert_untouched(app, calls, token))


async def test_tokens_minted_for_another_thread_are_refused(tmp_path: Path) -> None:
    """A token re-targeted at another thread, or minted without the store's key, gets InvalidResumeToken; minted with the key it is accepted."""
    app, calls, alice = await suspended(tmp_path, "alice")
    bob = await app.run({}, thread_id="bob")
    assert bob.suspension is not None
    genuine = SuspendToken.parse(alice)
    bob_checkpoint = bob.suspension.token.checkpoint_id
    other_key = await JsonFileCheckpointStore(tmp_path / "elsewhere").secret()
    forgeries = {
        "alice's signature on bob": spell("bob", bob_checkpoint, genuine.signature),
        "alice's checkpoint under bob": spell("bob", genuine.checkpoint_id, genuine.signature),
        "made-up signature": spell("bob", bob_checkpoint, "A" * 24),
        "another store's key": mint(other_key, "bob", bob_checkpoint),
        "empty key": mint(b"", "bob", bob_checkpoint),
    }
    refused = {}
    for name, forged in forgeries.items():
        with pytest.raises(InvalidResumeToken) as info:
            await app.resume(forged, "forged")
        refused[name] = "signature does not match" in str(info.value)
    assert dict.fromkeys(forgeries, True) == refused
    assert ["ask.run", "ask.run"] == calls.made  # alice's and bob's runs only
    own_key = await app.store.secret()  # type: ignore[attr-defined]
    result = await app.resume(mint(own_key, "bob", bob_checkpoint), "with the key")
    assert ["paid with the key", "after"] == result.state.log


async def test_forged_token_through_the_assistant_leaves_the_other_conversation_alone(
    tmp_path: Path,
) -> None:
    """assistant.clarify with alice's token re-targeted at bob's conversation gets InvalidResumeToken; bob's conversation is unchanged."""
    store = JsonFileCheckpointStore(tmp_path / "store")
    assistant = ResearchAssistant(source=MockDataSource(), store=store)
    alice = await assistant.ask("Tell me about the company", thread_id="alice")
    bob = await assistant.ask("Tell me about the company", thread_id="bob")
    assert alice.token is not None and bob.token is not None
    app = await assistant.graph()
    before = await app.get_state("bob")
    stolen = SuspendToken.parse(alice.token)
    forged = SuspendToken(
        thread_id="bob",
        checkpoint_id=SuspendToken.parse(bob.token).checkpoint_id,
        signature=stolen.signature,
    )
    for attempt in (forged, str(forged)):
        with pytest.raises(InvalidResumeToken):
            await assistant.clarify(attempt, "Tesla")
    after = await app.get_state("bob")
    assert before is not None and after is not None
    assert (before.checkpoint_id, "suspended") == (after.checkpoint_id, after.status)
    reply = await assistant.clarify(bob.token, "Tesla")
    assert ("answered", "Tesla, Inc.") == (reply.status, reply.company)


async def test_genuine_token_replayed_late_is_stale(tmp_path: Path) -> None:
    """A genuine token used again, after the thread moved on, or after it was deleted (and recreated) gets StaleResumeToken and runs no node."""
    app, calls, first = await suspended(tmp_path, "alice")
    await app.resume(first, "once")
    with pytest.raises(StaleResumeToken, match="already used, or the thread has moved on"):
        await app.resume(first, "twice")
    second = await app.run({}, thread_id="alice")  # the next turn suspends again
    assert second.suspension is not None
    with pytest.raises(StaleResumeToken):
        await app.resume(first, "replayed after the next turn")
    restarted = pay_app(JsonFileCheckpointStore(tmp_path / "store"), calls)  # a new process
    with pytest.raises(StaleResumeToken):
        await restarted.resume(first, "replayed after a restart")
    await app.delete_thread("alice")
    with pytest.raises(StaleResumeToken, match="the thread no longer exists"):
        await app.resume(second.suspension.token, "after delete")
    again = await app.run({}, thread_id="alice")  # recreated under the same id and key
    assert again.suspension is not None
    for old in (first, second.suspension.token):
        with pytest.raises(StaleResumeToken):
            await app.resume(old, "after recreate")
    assert ["ask.run", "ask.resume once", "after", "ask.run", "ask.run"] == calls.made
    result = await app.resume(again.suspension.token, "fresh")
    assert ["paid fresh", "after"] == result.state.log


@pytest.mark.parametrize(
    "other_secret, accepted",
    [
        ("app-key-1", True),
        (b"app-key-1", True),
        ("app-key-2", False),
        ("app-key-", False),
        (None, False),
    ],
    ids=["same-str", "same-bytes", "different", "prefix", "generated"],
)
async def test_app_secret_decides_who_accepts_a_token(
    tmp_path: Path, other_secret: str | bytes | None, accepted: bool
) -> None:
    """A token from a store with secret= is accepted by an assistant whose store has the same secret and refused by any other."""
    directory = tmp_path / "store"
    first = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(directory, secret="app-key-1")
    )
    asked = await first.ask("Tell me about the company", thread_id="alice")
    assert asked.token is not None
    second = ResearchAssistant(
        source=MockDataSource(), store=JsonFileCheckpointStore(directory, secret=other_secret)
    )
    if accepted:
        reply = await second.clarify(asked.token, "Apple")
        assert ("answered", "Apple Inc.") == (reply.status, reply.company)
    else:
        with pytest.raises(InvalidResumeToken):
            await second.clarify(asked.token, "Apple")
        pending = await first.pending_question("alice")
        assert pending is not None and asked.token == pending.token
