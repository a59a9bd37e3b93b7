"""``delete_thread`` racing or cut short, and tokens after a thread is deleted and
forked back onto its id (issue 36, bugs 12 and 13), on every store."""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    ChildThreadMissing,
    CompiledGraph,
    NodeContext,
    Send,
    StaleResumeToken,
    StateGraph,
    Suspend,
    ThreadBusy,
    append,
)


class Notes(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []


class Calls:
    """What the nodes did: each node's runs, the answers taken, and a gate the
    asking node's resume waits on when it is closed."""

    def __init__(self) -> None:
        self.runs: Tally[str] = Tally()
        self.answers: list[Any] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()

    def note(self, name: str) -> Any:
        async def node(state: Notes) -> dict[str, Any]:
            self.runs[name] += 1
            return {"notes": [f"{name}:{state.topic}"]}

        return node

    def asking(self) -> Any:
        calls = self

        class Ask:
            async def run(self, state: Notes, ctx: NodeContext) -> Suspend:
                calls.runs["ask"] += 1
                return Suspend({"question": state.topic})

            async def resume(self, state: Notes, value: Any, ctx: NodeContext) -> dict[str, Any]:
                calls.waiting.set()
                await calls.gate.wait()
                calls.answers.append(value)
                return {"notes": [f"ask={value}"]}

        return Ask()


def child(store: CheckpointStore, calls: Calls) -> CompiledGraph[Notes]:
    """gather -> ask (suspends) -> END."""
    graph = StateGraph(Notes).add_node("gather", calls.note("gather"))
    graph.add_node("ask", calls.asking())
    graph.add_edge(START, "gather").add_edge("gather", "ask").add_edge("ask", END)
    return graph.compile(store=store)


def parent(store: CheckpointStore, calls: Calls) -> CompiledGraph[Notes]:
    """plan -> research (the asking child) -> write."""
    graph = StateGraph(Notes).add_node("plan", calls.note("plan"))
    graph.add_node("research", child(store, calls)).add_node("write", calls.note("write"))
    graph.add_edge(START, "plan").add_edge("plan", "research")
    graph.add_edge("research", "write").add_edge("write", END)
    return graph.compile(store=store)


def fanning(store: CheckpointStore, calls: Calls) -> CompiledGraph[Notes]:
    """plan -> a `Send` to the asking child per topic -> write."""
    graph = StateGraph(Notes).add_node("plan", calls.note("plan"))
    graph.add_node("each", child(store, calls)).add_node("write", calls.note("write"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: [Send("each", {"topic": t}) for t in ("a", "b")], ["each"])
    graph.add_edge("each", "write").add_edge("write", END)
    return graph.compile(store=store)


async def test_delete_thread_while_a_resume_runs_is_busy_and_deletes_nothing(
    store: CheckpointStore,
) -> None:
    """A resume of the parent holds its lease while its child's node runs: a
    ``delete_thread`` meanwhile raises ``ThreadBusy`` before deleting any child, and
    the resume finishes with the user's answer, no finished step run again."""
    calls = Calls()
    app = parent(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    calls.gate.clear()
    resuming = asyncio.create_task(app.resume(first.suspension.token, "yes"))
    await asyncio.wait_for(calls.waiting.wait(), 10)
    with pytest.raises(ThreadBusy):
        await app.delete_thread("p")
    calls.gate.set()
    done = await resuming
    assert done.state.notes == ["plan:t", "gather:t", "ask=yes", "write:t"]
    assert calls.answers == ["yes"]
    assert calls.runs == {"plan": 1, "gather": 1, "ask": 1, "write": 1}
    await app.delete_thread("p")
    assert (await app.get_state("p")) is None


async def test_a_resume_waits_out_a_delete_in_progress_and_finds_nothing(
    store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delete_thread`` holds the parent's lease from before its first child goes
    to after the parent goes: a resume of the parent meanwhile is ``ThreadBusy``
    (it never runs the child afresh), and after the delete its token is stale."""
    calls = Calls()
    app = parent(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    real = store.delete
    outcomes: list[str] = []

    async def racing(thread_id: str, **kwargs: Any) -> None:
        await real(thread_id, **kwargs)
        if thread_id != "p":  # a child is gone, the parent not yet: a resume comes
            try:
                await app.resume(first.suspension.token, "yes")  # type: ignore[union-attr]
                outcomes.append("ran")
            except ThreadBusy:
                outcomes.append("busy")

    monkeypatch.setattr(store, "delete", racing)
    await app.delete_thread("p")
    monkeypatch.undo()
    assert outcomes == ["busy"]
    assert calls.answers == [] and calls.runs["gather"] == 1
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspension.token, "yes")


async def delete_cut_short_after_the_children(
    app: CompiledGraph[Notes], store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delete_thread("p")`` that deletes p's child threads, then fails (a power cut)
    before deleting p itself."""
    real = store.delete

    async def crashing(thread_id: str, **kwargs: Any) -> None:
        if thread_id == "p":
            raise OSError("power cut")
        await real(thread_id, **kwargs)

    monkeypatch.setattr(store, "delete", crashing)
    with pytest.raises(OSError, match="power cut"):
        await app.delete_thread("p")
    monkeypatch.undo()


async def test_a_delete_cut_short_after_the_child_leaves_a_resume_that_runs_nothing(
    store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``delete_thread`` that stops between the child's deletion and the parent's
    (a crash) leaves the parent suspended: its resume raises ``ChildThreadMissing``
    naming the node and the child, runs no node, takes no answer and saves nothing;
    deleting again finishes the job."""
    calls = Calls()
    app = parent(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    await delete_cut_short_after_the_children(app, store, monkeypatch)
    before = await app.get_state("p")
    assert before is not None and before.status == "suspended"
    with pytest.raises(ChildThreadMissing, match="research") as raised:
        await app.resume(first.suspension.token, "yes")
    assert raised.value.thread_id == "p" and raised.value.node == "research"
    assert raised.value.child.startswith("p.research.")
    assert await store.load_latest(raised.value.child) is None
    assert calls.answers == [] and calls.runs == {"plan": 1, "gather": 1, "ask": 1}
    after = await app.get_state("p")
    assert after is not None and after.checkpoint_id == before.checkpoint_id
    assert after.status == "suspended"
    await app.delete_thread("p")
    assert (await app.get_state("p")) is None


async def test_a_branch_whose_child_was_deleted_raises_child_thread_missing(
    store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a ``Send`` branch waiting on its child: resuming the branch whose
    child is gone raises ``ChildThreadMissing``; nothing reruns, nothing is saved."""
    calls = Calls()
    app = fanning(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.status == "suspended" and len(first.suspensions) == 2
    await delete_cut_short_after_the_children(app, store, monkeypatch)
    before = await app.get_state("p")
    assert before is not None
    with pytest.raises(ChildThreadMissing, match="each"):
        await app.resume(first.suspensions[0].token, "yes")
    assert calls.answers == [] and calls.runs == {"plan": 1, "gather": 2, "ask": 2}
    after = await app.get_state("p")
    assert after is not None and after.checkpoint_id == before.checkpoint_id
    await app.delete_thread("p")
    assert (await app.get_state("p")) is None


async def test_delete_thread_of_a_store_without_the_lease_argument_still_works(
    store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written for the older protocol (``delete(thread_id)`` only) is still
    deleted through: the lease is let go just before its own delete takes one."""
    calls = Calls()
    app = parent(store, calls)
    await app.run({"topic": "t"}, thread_id="p")
    real = store.delete
    deleted: list[str] = []

    async def older(thread_id: str) -> None:
        deleted.append(thread_id)
        await real(thread_id)

    monkeypatch.setattr(store, "delete", older)
    await app.delete_thread("p")
    assert deleted[-1] == "p" and len(deleted) == 2
    assert (await app.get_state("p")) is None


# -- bug 13: tokens never outlive the line they were issued on ----------------


def branching(store: CheckpointStore, calls: Calls) -> CompiledGraph[Notes]:
    """plan -> two asking branches (`Send`) -> write, without subgraphs."""
    graph = StateGraph(Notes).add_node("plan", calls.note("plan"))
    graph.add_node("ask", calls.asking()).add_node("write", calls.note("write"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: [Send("ask", {"topic": t}) for t in ("a", "b")], ["ask"])
    graph.add_edge("ask", "write").add_edge("write", END)
    return graph.compile(store=store)


async def test_a_used_branch_token_stays_stale_after_delete_and_a_fork_back(
    store: CheckpointStore,
) -> None:
    """A branch's token used on `p`, then `p` deleted and a fork of it forked back onto
    `p`: the used token is ``StaleResumeToken`` (the fork's branches have new ids),
    while the new `p`'s own tokens answer it."""
    calls = Calls()
    app = branching(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.status == "suspended" and len(first.suspensions) == 2
    await app.fork("p", first.checkpoint_id, "q")
    used = first.suspensions[0].token
    await app.resume(used, "first")
    await app.delete_thread("p")
    back = await app.fork("q", None, "p")
    assert len(back.suspensions) == 2
    with pytest.raises(StaleResumeToken):
        await app.resume(used, "again")
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspensions[1].token, "again")
    assert calls.answers == ["first"]
    await app.resume(back.suspensions[0].token, "x")
    done = await app.resume(back.suspensions[1].token, "y")
    assert done.status == "completed" and calls.answers == ["first", "x", "y"]


async def test_fork_gives_every_suspended_branch_a_new_token(store: CheckpointStore) -> None:
    """A fork's suspended branches are signed anew: no token of the source's (nor of
    an earlier fork's) names one of the fork's suspensions."""
    calls = Calls()
    app = branching(store, calls)
    first = await app.run({"topic": "t"}, thread_id="p")
    q = await app.fork("p", None, "q")
    r = await app.fork("q", None, "r")
    ids = [{s.token.checkpoint_id for s in snap.suspensions} for snap in (first, q, r)]
    assert all(len(found) == 2 for found in ids)
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2]) and not (ids[0] & ids[2])


async def test_a_used_token_stays_stale_after_delete_and_a_fork_back(
    store: CheckpointStore,
) -> None:
    """The same for a node's own suspension (no branches): the fork back is a new
    checkpoint, so the token used on the deleted thread answers nothing."""
    calls = Calls()
    graph = StateGraph(Notes).add_node("ask", calls.asking())
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(store=store)
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    await app.fork("p", None, "q")
    await app.resume(first.suspension.token, "first")
    await app.delete_thread("p")
    back = await app.fork("q", None, "p")
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspension.token, "again")
    assert back.suspension is not None
    await app.resume(back.suspension.token, "new")
    assert calls.answers == ["first", "new"]
