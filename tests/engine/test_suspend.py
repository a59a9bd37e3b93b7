"""Suspend and resume: class and function nodes, tokens, staleness and signatures."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    InvalidResumeToken,
    NodeContext,
    NodeFailed,
    StaleResumeToken,
    StateGraph,
    Suspend,
    SuspendToken,
    ThreadSuspended,
)

from .helpers import Ask, Counter, ask_graph


async def test_class_node_suspends_with_payload_and_token(store: CheckpointStore) -> None:
    """Suspend returns status 'suspended' with the node's payload and a token; Suspend.update is applied."""
    ask = Ask()
    compiled = ask_graph(ask, store)
    result = await compiled.run({}, thread_id="t")
    assert (result.status, result.path) == ("suspended", ["first", "ask"])
    assert result.suspension is not None
    assert (result.suspension.node, result.suspension.payload) == ("ask", {"question": "name?"})
    assert Counter(n=2, log=["first"]) == result.state
    assert ("t", result.checkpoint_id) == (
        result.suspension.token.thread_id,
        result.suspension.token.checkpoint_id,
    )
    snapshot = await compiled.get_state("t")
    assert snapshot is not None and snapshot.suspension is not None
    assert ("suspended", "ask", Counter(n=2, log=["first"])) == (
        snapshot.status,
        snapshot.next,
        snapshot.state,
    )
    assert str(result.suspension.token) == str(snapshot.suspension.token)


async def test_resume_runs_resume_not_run_and_continues(store: CheckpointStore) -> None:
    """Resuming calls ``resume`` once, never re-runs ``run`` or earlier nodes, and continues routing."""
    ask = Ask()
    compiled = ask_graph(ask, store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    result = await compiled.resume(suspended.suspension.token, "Ada")
    assert (result.status, result.path) == ("completed", ["ask", "after"])
    assert (ask.run_calls, ask.resume_calls) == (1, 1)
    assert Counter(n=3, log=["first", "answer:Ada", "after"]) == result.state


async def test_function_node_is_rerun_with_resume_value(store: CheckpointStore) -> None:
    """A ``(state, ctx)`` function node is called again with ``ctx.resume_value`` set."""
    seen: list[tuple[bool, Any]] = []

    async def approve(state: Counter, ctx: NodeContext) -> Any:
        seen.append((ctx.resuming, ctx.resume_value))
        if not ctx.resuming:
            return Suspend("approve?")
        return {"log": [f"approved:{ctx.resume_value}"]}

    graph = StateGraph(Counter)
    graph.add_node("approve", approve)
    graph.add_edge(START, "approve")
    graph.add_edge("approve", END)
    compiled = graph.compile(store=store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    result = await compiled.resume(suspended.suspension.token, {"ok": True})
    assert seen == [(False, None), (True, {"ok": True})]
    assert result.state.log == ["approved:{'ok': True}"]


async def test_state_only_node_cannot_suspend(store: CheckpointStore) -> None:
    """A ``(state)``-only node returning Suspend fails with a message saying it cannot suspend."""

    async def lonely(state: Counter) -> Suspend:
        return Suspend("?")

    graph = StateGraph(Counter)
    graph.add_node("lonely", lonely)
    graph.add_edge(START, "lonely")
    graph.add_edge("lonely", END)
    with pytest.raises(NodeFailed) as info:
        await graph.compile(store=store).run({}, thread_id="t")
    assert info.value.node == "lonely"
    assert "node `lonely` takes only (state) and cannot suspend" in str(info.value.cause)


async def test_node_suspending_twice_issues_two_tokens(store: CheckpointStore) -> None:
    """A node that suspends again on resume gets a new token; the first one becomes stale."""
    ask = Ask(again=1)
    compiled = ask_graph(ask, store)
    first = await compiled.run({}, thread_id="t")
    assert first.suspension is not None
    second = await compiled.resume(first.suspension.token, "one")
    assert second.suspension is not None
    assert (
        second.status,
        second.path,
        second.suspension.payload,
    ) == ("suspended", ["ask"], {"question": "again 1"})
    assert str(first.suspension.token) != str(second.suspension.token)
    with pytest.raises(StaleResumeToken):
        await compiled.resume(first.suspension.token, "late")
    done = await compiled.resume(second.suspension.token, "two")
    assert (done.status, done.state.log[1:2]) == ("completed", ["answer:two"])
    assert (ask.run_calls, ask.resume_calls) == (1, 2)


async def test_used_token_is_stale(store: CheckpointStore) -> None:
    """Resuming with an already-used token raises StaleResumeToken and runs nothing."""
    ask = Ask()
    compiled = ask_graph(ask, store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    await compiled.resume(token, "x")
    with pytest.raises(StaleResumeToken, match="thread `t` is stale") as info:
        await compiled.resume(token, "y")
    assert ("t", token.checkpoint_id) == (info.value.thread_id, info.value.checkpoint_id)
    assert ask.resume_calls == 1


async def test_token_string_round_trips(store: CheckpointStore) -> None:
    """``str(token)`` is short, parses back to an equal token, and resumes as a string."""
    compiled = ask_graph(Ask(), store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    text = str(token)
    assert len(text) < 100
    assert token == SuspendToken.parse(text)
    assert (await compiled.resume(text, "via string")).status == "completed"


async def test_edited_token_is_invalid(store: CheckpointStore) -> None:
    """A token whose signature was altered raises InvalidResumeToken."""
    compiled = ask_graph(Ask(), store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    sig = token.signature
    edited = SuspendToken(
        thread_id="t",
        checkpoint_id=token.checkpoint_id,
        signature=("A" if sig[0] != "A" else "B") + sig[1:],
    )
    with pytest.raises(InvalidResumeToken, match="signature does not match"):
        await compiled.resume(str(edited), "x")


async def test_token_minted_for_another_thread_is_invalid(store: CheckpointStore) -> None:
    """Re-targeting a genuine token at another thread raises InvalidResumeToken."""
    compiled = ask_graph(Ask(), store)
    one = await compiled.run({}, thread_id="one")
    two = await compiled.run({}, thread_id="two")
    assert one.suspension is not None and two.suspension is not None
    forged = SuspendToken(
        thread_id="two",
        checkpoint_id=two.suspension.token.checkpoint_id,
        signature=one.suspension.token.signature,
    )
    with pytest.raises(InvalidResumeToken):
        await compiled.resume(forged, "x")


async def test_token_from_another_store_secret_is_invalid(
    store: CheckpointStore, make_store: Callable[..., CheckpointStore]
) -> None:
    """A token signed by a store with another secret raises InvalidResumeToken."""
    suspended = await ask_graph(Ask(), store).run({}, thread_id="t")
    assert suspended.suspension is not None
    other = ask_graph(Ask(), make_store())
    await other.run({}, thread_id="t")
    with pytest.raises(InvalidResumeToken):
        await other.resume(suspended.suspension.token, "x")


async def test_app_secret_is_used_for_signing(
    store: CheckpointStore, make_store: Callable[..., CheckpointStore]
) -> None:
    """Two stores given the same ``secret=`` accept each other's signatures; another secret does not."""
    mine = ask_graph(Ask(), make_store(secret="app-secret"))
    suspended = await mine.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    same_secret = ask_graph(Ask(), make_store(secret=b"app-secret"))
    with pytest.raises(StaleResumeToken):  # signature accepted; that store has no such checkpoint
        await same_secret.resume(token, "x")
    with pytest.raises(InvalidResumeToken):
        await ask_graph(Ask(), make_store(secret="other")).resume(token, "x")


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "garbage",
        "rt1.",
        "rt1..",
        "rt1.!!!!.sig",
        "rt1.%%%%",
        "rt1." + _b64("no-newline") + ".sig",
        "rt1." + _b64("t\nckpt"),
        "rt1." + _b64("\nckpt") + ".sig",
        "rt1." + _b64("../../etc\nckpt") + ".sig",
        "rt1." + "A" * 5000 + ".sig",
        "rt1.\u00e9\u00e9.sig",
        123,
        None,
    ],
)
async def test_malformed_tokens_are_invalid(store: CheckpointStore, bad: Any) -> None:
    """Malformed token strings (or non-strings) raise InvalidResumeToken, never another error."""
    compiled = ask_graph(Ask(), store)
    with pytest.raises(InvalidResumeToken):
        await compiled.resume(bad, "x")


async def test_new_input_on_suspended_thread_raises_thread_suspended(
    store: CheckpointStore,
) -> None:
    """``run`` with new input on a suspended thread raises ThreadSuspended carrying a usable token."""
    ask = Ask()
    compiled = ask_graph(ask, store)
    await compiled.run({}, thread_id="t")
    with pytest.raises(ThreadSuspended) as info:
        await compiled.run({"log": ["interrupting"]}, thread_id="t")
    assert info.value.thread_id == "t"
    with pytest.raises(ThreadSuspended):
        await compiled.run(None, thread_id="t")
    result = await compiled.resume(info.value.token, "fine")
    assert (result.status, ask.run_calls) == ("completed", 1)
    assert "interrupting" not in result.state.log


async def test_failed_resume_keeps_token_valid(store: CheckpointStore) -> None:
    """If ``resume`` raises, the thread stays suspended and the same token works later."""
    ask = Ask()
    ask.fail_resume = True
    compiled = ask_graph(ask, store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    with pytest.raises(NodeFailed, match="resume broke"):
        await compiled.resume(suspended.suspension.token, "x")
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("suspended", suspended.checkpoint_id) == (snapshot.status, snapshot.checkpoint_id)
    ask.fail_resume = False
    result = await compiled.resume(suspended.suspension.token, "y")
    assert (result.status, ask.resume_calls) == ("completed", 2)


async def test_deleted_and_recreated_thread_keeps_old_token_stale(store: CheckpointStore) -> None:
    """After delete_thread (and recreating the thread) an old token is stale, never reused."""
    compiled = ask_graph(Ask(), store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    token = suspended.suspension.token
    await compiled.delete_thread("t")
    assert None is await compiled.get_state("t")
    with pytest.raises(StaleResumeToken, match="no longer exists"):
        await compiled.resume(token, "x")
    await compiled.run({}, thread_id="t")
    with pytest.raises(StaleResumeToken):
        await compiled.resume(token, "x")


async def test_resume_value_none_is_delivered(store: CheckpointStore) -> None:
    """``resume(token, None)`` still resumes (None is a legitimate answer)."""
    ask = Ask()
    compiled = ask_graph(ask, store)
    suspended = await compiled.run({}, thread_id="t")
    assert suspended.suspension is not None
    result = await compiled.resume(suspended.suspension.token, None)
    assert result.state.log == ["first", "answer:None", "after"]
