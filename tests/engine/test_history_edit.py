"""Editing and forking a thread's history (``update_state``, ``run(...,
checkpoint_id=...)``, ``fork``) and paging through it, on every store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.helpers import Ask, Counter, Gate, ask_graph, chain, recorder
from engine.test_parallel import Asker, Work, specialists
from research_fsm.engine import (
    END,
    START,
    CheckpointNotFound,
    CheckpointStore,
    InvalidUpdate,
    NodeFailed,
    NodeFinished,
    StaleResumeToken,
    StateGraph,
    ThreadBusy,
    ThreadExists,
    ThreadNotFound,
    UpdateRefused,
)


async def ids(app: Any, thread: str) -> list[str]:
    return [s.checkpoint_id async for s in app.history(thread)]


# -- update_state --------------------------------------------------------------------


async def test_update_state_merges_through_the_reducers(store: CheckpointStore) -> None:
    """Values go through each field's reducer (``log`` appends) into a new checkpoint
    after the latest; where the run goes is unchanged, and the next turn sees them."""
    app = chain("a", "b", store=store)
    done = await app.run({}, thread_id="t")
    snap = await app.update_state("t", {"n": 40, "log": ["by hand"]})
    assert (40, ["a", "b", "by hand"]) == (snap.state.n, snap.state.log)
    assert ("completed", None, "update", done.checkpoint_id) == (
        snap.status,
        snap.next,
        snap.origin,
        snap.parent_id,
    )
    latest = await app.get_state("t")
    assert latest is not None and latest.checkpoint_id == snap.checkpoint_id
    assert latest.origin == "update" and latest.state == snap.state
    again = await app.run({}, thread_id="t")
    assert (42, ["a", "b", "by hand", "a", "b"]) == (again.state.n, again.state.log)


async def test_update_state_as_node_routes_from_that_node(store: CheckpointStore) -> None:
    """With ``as_node``, the update counts as that node's: the router after it picks
    where ``run(None)`` goes on, and the nodes before it do not run again."""
    calls: list[str] = []
    graph = StateGraph(Counter)
    for name in ("plan", "cheap", "deep"):
        graph.add_node(name, recorder(name, calls))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: "deep" if s.n >= 10 else "cheap", ["cheap", "deep"])
    graph.add_edge("cheap", END).add_edge("deep", END)
    app = graph.compile(store=store)
    await app.run({}, thread_id="t")
    assert ["plan", "cheap"] == calls
    snap = await app.update_state("t", {"n": 10}, as_node="plan")
    assert ("running", "deep", "update") == (snap.status, snap.next, snap.origin)
    result = await app.run(None, thread_id="t")
    assert (["deep"], 11) == (result.path, result.state.n)
    assert ["plan", "cheap", "deep"] == calls
    ended = await app.update_state("t", {"n": 1}, as_node="cheap")
    assert ("completed", None) == (ended.status, ended.next)


async def test_update_state_answers_a_suspension_only_as_its_node(
    store: CheckpointStore,
) -> None:
    """A suspended thread refuses an update that does not answer the suspension; as the
    suspended node it answers it: the node's resume never runs, its token goes stale,
    and the run goes on after it."""
    ask = Ask()
    app = ask_graph(ask, store)
    first = await app.run({}, thread_id="t")
    token = first.suspension.token  # type: ignore[union-attr]
    for as_node in (None, "first"):
        with pytest.raises(UpdateRefused) as caught:
            await app.update_state("t", {"log": ["x"]}, as_node=as_node)
        assert "thread `t`" in str(caught.value) and "suspended at node `ask`" in str(caught.value)
        assert "as_node='ask'" in str(caught.value)
    assert [first.checkpoint_id] == (await ids(app, "t"))[:1]
    snap = await app.update_state("t", {"log": ["answered by hand"]}, as_node="ask")
    assert ("running", "after", None) == (snap.status, snap.next, snap.suspension)
    with pytest.raises(StaleResumeToken):
        await app.resume(token, "late")
    result = await app.run(None, thread_id="t")
    assert ["after"] == result.path
    assert ["first", "answered by hand", "after"] == result.state.log
    assert 0 == ask.resume_calls


async def test_update_state_is_refused_while_a_run_holds_the_thread(
    store: CheckpointStore,
) -> None:
    """update_state takes the thread's lease: ThreadBusy while a run is in a node, and
    the run then finishes as if nothing had been asked."""
    gate = Gate()
    graph = StateGraph(Counter)
    graph.add_node("gate", gate).add_edge(START, "gate").add_edge("gate", END)
    app = graph.compile(store=store)
    running = asyncio.create_task(app.run({}, thread_id="t"))
    await gate.entered.wait()
    with pytest.raises(ThreadBusy):
        await app.update_state("t", {"n": 99})
    gate.release.set()
    result = await running
    assert (1, ["gate"]) == (result.state.n, result.state.log)
    assert 99 == (await app.update_state("t", {"n": 99})).state.n


async def test_update_state_names_what_is_wrong(store: CheckpointStore) -> None:
    """An unknown field, an unknown node, values of another type, a field of the wrong
    type or an unknown thread: an engine error naming the culprit, nothing saved."""
    app = chain("a", "b", store=store)
    await app.run({}, thread_id="t")
    before = await ids(app, "t")
    with pytest.raises(InvalidUpdate) as caught:
        await app.update_state("t", {"colour": "red"})
    assert "unknown field `colour` of `Counter`; fields are: n, log" in str(caught.value)
    with pytest.raises(InvalidUpdate) as caught:
        await app.update_state("t", {"n": 1}, as_node="nope")
    assert "as_node 'nope' is not a node of this graph; nodes are: a, b" in str(caught.value)
    with pytest.raises(InvalidUpdate, match="values must be a dict of field changes"):
        await app.update_state("t", [("n", 1)])  # type: ignore[arg-type]
    with pytest.raises(InvalidUpdate, match="field `n`"):
        await app.update_state("t", {"n": "many"})
    with pytest.raises(ThreadNotFound, match="thread `nobody` does not exist"):
        await app.update_state("nobody", {"n": 1})
    assert before == await ids(app, "t")


async def test_update_state_as_a_node_that_fans_out_starts_the_fan_out(
    store: CheckpointStore,
) -> None:
    """``as_node`` whose edge fans out saves the fan-out's start: ``run(None)`` runs the
    branches and the join; an update while branches are in flight is refused."""
    calls: list[str] = []
    app = specialists(store, calls, market=Asker("market", calls)).compile(store=store)
    first = await app.run({}, thread_id="t")
    assert "suspended" == first.status
    with pytest.raises(UpdateRefused, match=r"parallel branches are in flight \(financial"):
        await app.update_state("t", {"summary": "x"})
    await app.resume(first.suspension.token, "M")  # type: ignore[union-attr]
    calls.clear()
    snap = await app.update_state("t", {"log": ["edited"]}, as_node="researcher")
    assert ("synthesizer", ["financial[0]", "market[1]", "product[2]"]) == (
        snap.next,
        [b.id for b in snap.branches],
    )
    resumed = await app.run(None, thread_id="t")
    assert "suspended" == resumed.status  # the market branch asks again
    done = await app.resume(resumed.suspension.token, "M2")  # type: ignore[union-attr]
    assert "completed" == done.status
    assert "researcher" not in calls
    assert "edited" in done.state.log and "market=M2" in done.state.log


# -- continuing from a past checkpoint -----------------------------------------------


async def test_run_from_a_past_checkpoint_starts_a_new_line(store: CheckpointStore) -> None:
    """``run(None, checkpoint_id=past)`` goes on from ``past``'s state and next node;
    history keeps both lines, the new one's first snapshot naming ``past`` its parent."""
    calls: list[str] = []
    app = chain("a", "b", "c", store=store, calls=calls)
    await app.run({}, thread_id="t")
    old_line = [s async for s in app.history("t")]
    after_a = next(s for s in old_line if s.next == "b")
    calls.clear()
    result = await app.run(None, thread_id="t", checkpoint_id=after_a.checkpoint_id)
    assert (["b", "c"], ["b", "c"], 3) == (result.path, calls, result.state.n)
    history = [s async for s in app.history("t")]
    assert len(history) == len(old_line) + 3
    assert [s.checkpoint_id for s in old_line] == [s.checkpoint_id for s in history[3:]]
    copy = history[2]
    assert ("rewind", after_a.checkpoint_id, "b") == (copy.origin, copy.parent_id, copy.next)
    assert after_a.state == copy.state
    assert [copy.checkpoint_id, history[1].checkpoint_id] == [
        history[1].parent_id,
        history[0].parent_id,
    ]


async def test_new_input_from_a_past_checkpoint_starts_a_turn_there(
    store: CheckpointStore,
) -> None:
    """``run(input, checkpoint_id=past)`` starts the next turn from ``past``'s state:
    what happened after it is not in the state."""
    app = chain("a", store=store)
    first = await app.run({"log": ["one"]}, thread_id="t")
    await app.run({"log": ["two"]}, thread_id="t")
    result = await app.run({"log": ["three"]}, thread_id="t", checkpoint_id=first.checkpoint_id)
    assert ["one", "a", "three", "a"] == result.state.log


async def test_the_abandoned_lines_tokens_are_stale(store: CheckpointStore) -> None:
    """Going back to a suspended checkpoint returns its suspension with a new token; the
    tokens of the abandoned line, that checkpoint's own included, are stale."""
    ask = Ask()
    app = ask_graph(ask, store)
    first = await app.run({}, thread_id="t")
    answered = await app.resume(first.suspension.token, "Ada")  # type: ignore[union-attr]
    assert "completed" == answered.status
    again = await app.run(None, thread_id="t", checkpoint_id=first.checkpoint_id)
    assert ("suspended", [], {"question": "name?"}) == (
        again.status,
        again.path,
        again.suspension.payload,  # type: ignore[union-attr]
    )
    with pytest.raises(StaleResumeToken):
        await app.resume(first.suspension.token, "Ada again")  # type: ignore[union-attr]
    other = await app.resume(again.suspension.token, "Grace")  # type: ignore[union-attr]
    assert ["first", "answer:Grace", "after"] == other.state.log
    assert 1 == ask.run_calls


async def test_going_back_inside_a_fan_out_makes_branch_tokens_new(
    store: CheckpointStore,
) -> None:
    """Back at a checkpoint with two suspended branches, the old branch tokens are stale
    and the new ones resume; the finished branches are not run again."""
    calls: list[str] = []
    graph = specialists(
        store, calls, market=Asker("market", calls), product=Asker("product", calls)
    )
    app = graph.compile(store=store)
    first = await app.run({}, thread_id="t")
    old_tokens = [s.token for s in first.suspensions]
    await app.resume(old_tokens[1], "P")
    calls.clear()
    back = await app.run(None, thread_id="t", checkpoint_id=first.checkpoint_id)
    assert ["market[1]", "product[2]"] == [s.branch for s in back.suspensions]
    for token in old_tokens:
        with pytest.raises(StaleResumeToken):
            await app.resume(token, "old")
    await app.resume(back.suspensions[1].token, "P2")
    done = await app.resume(back.suspensions[0].token, "M2")
    assert "completed" == done.status
    assert ["resume product", "resume market"] == calls
    assert not any(c.startswith(("researcher", "financial")) for c in calls)
    assert {"market=M2", "product=P2"} <= set(done.state.log)
    assert "product=P" not in done.state.log


async def test_a_checkpoint_of_another_thread_or_unknown_is_refused(
    store: CheckpointStore,
) -> None:
    """``checkpoint_id`` naming no checkpoint of the thread: CheckpointNotFound naming
    both, and the thread unchanged."""
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    other = await app.run({}, thread_id="u")
    before = await ids(app, "t")
    for wrong in (other.checkpoint_id, "nope"):
        with pytest.raises(CheckpointNotFound) as caught:
            await app.run(None, thread_id="t", checkpoint_id=wrong)
        assert ("t", wrong) == (caught.value.thread_id, caught.value.checkpoint_id)
        with pytest.raises(CheckpointNotFound):
            await app.get_state("t", checkpoint_id=wrong)
        with pytest.raises(CheckpointNotFound):
            await app.fork("t", wrong, "v")
    assert before == await ids(app, "t")
    with pytest.raises(ThreadNotFound):
        await app.run(None, thread_id="nobody", checkpoint_id=other.checkpoint_id)


# -- fork -------------------------------------------------------------------------------


async def test_fork_copies_a_checkpoint_to_a_new_thread(store: CheckpointStore) -> None:
    """The fork goes on from the copied checkpoint on its own; the source is unchanged."""
    app = chain("a", "b", "c", store=store)
    await app.run({}, thread_id="t")
    source = await ids(app, "t")
    after_a = [s async for s in app.history("t") if s.next == "b"].pop()
    snap = await app.fork("t", after_a.checkpoint_id, "t2")
    assert ("fork", ("t", after_a.checkpoint_id), None) == (
        snap.origin,
        snap.forked_from,
        snap.parent_id,
    )
    assert (after_a.state, "b") == (snap.state, snap.next)
    result = await app.run(None, thread_id="t2")
    assert (["b", "c"], 3) == (result.path, result.state.n)
    assert source == await ids(app, "t")
    assert 1 + 2 == len(await ids(app, "t2"))
    latest_copy = await app.fork("t", None, "t3")
    assert latest_copy.state == (await app.get_state("t")).state  # type: ignore[union-attr]


async def test_fork_refuses_an_existing_thread(store: CheckpointStore) -> None:
    """Forking onto a thread with checkpoints (or onto itself) raises ThreadExists."""
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    await app.run({}, thread_id="u")
    for target in ("u", "t"):
        with pytest.raises(ThreadExists, match=f"thread `{target}` already exists"):
            await app.fork("t", None, target)
    with pytest.raises(ThreadNotFound):
        await app.fork("nobody", None, "v")
    assert None is await app.get_state("v")


async def test_a_fork_mid_fan_out_keeps_every_branch_result(store: CheckpointStore) -> None:
    """A fork of a fan-out in flight keeps what its branches wrote: the finished
    branches are not run again and their updates reach the join; the pending ones run."""
    calls: list[str] = []
    fail = {"market": True}

    async def market(state: Work, ctx: Any) -> dict[str, Any]:
        calls.append("market")
        if fail["market"]:
            raise RuntimeError("market down")
        return {"log": ["market"], "count": 1}

    graph = specialists(store, calls, market=market)
    app = graph.compile(store=store, max_concurrency=1)
    with pytest.raises(NodeFailed):
        await app.run({}, thread_id="t")
    failed = await app.get_state("t")
    assert failed is not None
    branches = {b.id: (b.status, b.node) for b in failed.branches}
    assert {
        "financial[0]": ("pending", "financial_review"),  # financial ran, its review did not
        "market[1]": ("failed", "market"),
        "product[2]": ("done", None),
    } == branches
    mid = [s async for s in app.history("t") if s.branches]
    earliest = mid[-1]  # the fan-out's start: no branch has run
    assert {"pending"} == {b.status for b in earliest.branches}
    fail["market"] = False
    for thread, at, runs in (
        ("latest", failed.checkpoint_id, ["financial_review", "market"]),
        ("start", earliest.checkpoint_id, ["financial", "financial_review", "market", "product"]),
    ):
        await app.fork("t", at, thread)
        calls.clear()
        result = await app.run(None, thread_id=thread)
        assert "completed" == result.status
        assert runs == sorted(calls)
        names = ["researcher", "financial", "financial_review", "market", "product"]
        assert sorted(names) == sorted(result.state.log)
        assert 5 == result.state.count
    assert "failed" == (await app.get_state("t")).status  # type: ignore[union-attr]


async def test_a_forked_suspension_has_tokens_of_its_own(store: CheckpointStore) -> None:
    """A fork of a suspended thread is suspended too, with its own token: the source's
    token does not resume the fork, and each resumes its own thread once."""
    app = ask_graph(Ask(), store)
    first = await app.run({}, thread_id="t")
    fork = await app.fork("t", None, "f")
    assert fork.suspension is not None and fork.suspension.token.thread_id == "f"
    done = await app.resume(fork.suspension.token, "Fork")
    assert ["first", "answer:Fork", "after"] == done.state.log
    source = await app.resume(first.suspension.token, "Source")  # type: ignore[union-attr]
    assert ["first", "answer:Source", "after"] == source.state.log


# -- history --------------------------------------------------------------------------


async def test_history_pages_through_snapshots(store: CheckpointStore) -> None:
    """``history(limit=, before=)`` gives the snapshots of ``history()`` a page at a time,
    each naming its parent; a bad limit is refused naming it."""
    app = chain("a", "b", store=store)
    for _ in range(4):
        await app.run({}, thread_id="t")
    whole = [s async for s in app.history("t")]
    paged: list[Any] = []
    before = None
    while page := [s async for s in app.history("t", limit=5, before=before)]:
        paged.extend(page)
        before = page[-1].checkpoint_id
    assert [s.checkpoint_id for s in whole] == [s.checkpoint_id for s in paged]
    assert [s.checkpoint_id for s in whole[1:]] == [s.parent_id for s in whole[:-1]]
    assert None is whole[-1].parent_id
    for limit in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="limit must be None"):
            _ = [s async for s in app.history("t", limit=limit)]  # type: ignore[arg-type]
    past = await app.get_state("t", checkpoint_id=whole[3].checkpoint_id)
    assert past is not None and (past.checkpoint_id, past.state) == (
        whole[3].checkpoint_id,
        whole[3].state,
    )


async def test_history_says_what_wrote_each_checkpoint(store: CheckpointStore) -> None:
    """Snapshots read back from the store (the file and Postgres codecs keep it) say
    whether a run, update_state, a new line or fork wrote them."""
    app = chain("a", "b", store=store)
    await app.run({}, thread_id="t")
    first = (await ids(app, "t"))[-1]
    await app.update_state("t", {"n": 7}, as_node="a")
    await app.run(None, thread_id="t", checkpoint_id=first)
    await app.fork("t", first, "f")
    kinds = [s.origin async for s in app.history("t")]
    assert ["run", "run", "rewind", "update", "run", "run", "run"] == kinds
    forked = [s async for s in app.history("f")]
    assert [("fork", ("t", first))] == [(s.origin, s.forked_from) for s in forked]


async def test_stream_from_a_past_checkpoint(store: CheckpointStore) -> None:
    """``stream(..., checkpoint_id=past)`` streams the new line's nodes, as ``run`` runs them."""
    app = chain("a", "b", store=store)
    await app.run({}, thread_id="t")
    start = (await ids(app, "t"))[-1]
    async with app.stream(None, thread_id="t", checkpoint_id=start) as events:
        finished = [e.node async for e in events if isinstance(e, NodeFinished)]
    assert ["a", "b"] == finished
    assert 2 == (await app.get_state("t")).state.n  # type: ignore[union-attr]


async def test_a_checkpoint_id_that_is_not_a_str_is_refused(store: CheckpointStore) -> None:
    """A checkpoint id of another type (or empty) is a ValueError naming the argument."""
    app = chain("a", store=store)
    await app.run({}, thread_id="t")
    with pytest.raises(ValueError, match="checkpoint_id must be a checkpoint id"):
        await app.run(None, thread_id="t", checkpoint_id=7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="before must be a checkpoint id"):
        _ = [s async for s in app.history("t", before="")]
    with pytest.raises(ValueError, match=r"checkpoint_id must be a checkpoint id .*, got 3"):
        await app.fork("t", 3, "u")  # type: ignore[arg-type]
