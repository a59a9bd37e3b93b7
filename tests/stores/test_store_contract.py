"""The CheckpointStore contract, checked on every store implementation."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine.helpers import Counter, chain
from pydantic import BaseModel, Field

from research_fsm.engine import (
    END,
    START,
    Checkpoint,
    CheckpointConflict,
    CheckpointNotFound,
    CheckpointStore,
    InvalidThreadQuery,
    Lease,
    MemoryCheckpointStore,
    StateGraph,
    ThreadBusy,
    ThreadPage,
)
from research_fsm.engine.store import BranchRecord, OriginRecord, SuspensionRecord, UpdateEntry
from research_fsm.engine.store import ThreadListing
from stores.helpers import close_store, reopen


def checkpoint(seq: int, parent: str | None, *, thread: str = "t", **over: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "thread_id": thread,
        "checkpoint_id": secrets.token_urlsafe(12),
        "parent_id": parent,
        "seq": seq,
        "run_id": "run",
        "step": seq - 1,
        "status": "running",
        "next": "a",
        "state": Counter(n=seq),
        "created_at": "2024-01-01T00:00:00.000+00:00",
        "last_node": "a",
    }
    fields.update(over)
    return Checkpoint(**fields)


def state_of(cp: Checkpoint) -> Counter:
    return Counter.model_validate(cp.state) if isinstance(cp.state, dict) else cp.state  # type: ignore[return-value]


def test_implements_the_protocol(store: CheckpointStore) -> None:
    """Every store satisfies the runtime-checkable CheckpointStore protocol."""
    assert isinstance(store, CheckpointStore)


async def test_unknown_thread_loads_none(store: CheckpointStore) -> None:
    """load_latest of a thread without checkpoints is None and history is empty."""
    assert None is await store.load_latest("nobody")
    assert [] == [cp async for cp in store.history("nobody")]


async def test_save_and_load_round_trip(store: CheckpointStore) -> None:
    """A saved checkpoint loads back with every field intact."""
    first = checkpoint(
        1,
        None,
        status="suspended",
        suspension=SuspensionRecord("a", {"q": [1, "x"]}, child="c1", trace="00-ab-cd-01"),
        error=None,
    )
    await store.save(first)
    loaded = await store.load_latest("t")
    assert loaded is not None
    keys = (
        "thread_id",
        "checkpoint_id",
        "parent_id",
        "seq",
        "run_id",
        "step",
        "status",
        "next",
        "created_at",
        "suspension",
        "error",
        "last_node",
    )
    assert [getattr(first, k) for k in keys] == [getattr(loaded, k) for k in keys]
    assert Counter(n=1) == state_of(loaded)


async def test_records_load_back_equal(store: CheckpointStore) -> None:
    """A checkpoint's branch records (every field set: a sent item, a key, a pause, an
    update with a ``Replace``, a failure, a trace), its origin and a pause's suspension load
    back equal, and so do the records a later checkpoint changes or removes."""
    entry = UpdateEntry("a", {"n": 2, "log": ["x"]}, ("n",))
    paused = BranchRecord(
        0,
        "",
        None,
        "suspended",
        "j",
        (entry,),
        {"k": [1]},
        "key0",
        "s1",
        None,
        "ch",
        ("after", "a"),
    )
    failed = BranchRecord(1, "", "b", "failed", END, (), error=error_of("b"), trace="00-t-s-01")
    nested = BranchRecord(0, "a[0]", "c", "pending", "d", (), None)
    branches = {"a[0]": paused, "b[1]": failed, "a[0]/c[0]": nested}
    first = checkpoint(
        1,
        None,
        status="suspended",
        suspension=SuspensionRecord("a", None, "before", trace="00-t-s-01"),
        branches=branches,
        origin=OriginRecord("fork", thread_id="src", checkpoint_id="cp1"),
    )
    await store.save(first)
    rekeyed = {**branches, "a[0]": paused.rekeyed("s2")}
    del rekeyed["b[1]"]
    second = checkpoint(
        2,
        first.checkpoint_id,
        branches=rekeyed,
        changes={} if store.saves_changes else None,
        changed_branches=("a[0]", "b[1]"),
        origin=OriginRecord("update", as_node=END),
    )
    await store.save(second)
    loaded = [cp async for cp in store.history("t")]
    assert [(second.branches, second.origin), (first.branches, first.origin)] == [
        (cp.branches, cp.origin) for cp in loaded
    ]
    assert first.suspension == loaded[1].suspension


def error_of(node: str) -> dict[str, str]:
    return {"node": node, "exc_type": "ValueError", "message": "bad"}


async def test_save_with_stale_parent_conflicts_and_overwrites_nothing(
    store: CheckpointStore,
) -> None:
    """A save whose parent is not the latest raises CheckpointConflict and keeps the winner."""
    first = checkpoint(1, None)
    await store.save(first)
    winner = checkpoint(2, first.checkpoint_id, state=Counter(n=20))
    await store.save(winner)
    loser = checkpoint(2, first.checkpoint_id, state=Counter(n=99))
    with pytest.raises(CheckpointConflict, match="nothing was overwritten") as info:
        await store.save(loser)
    assert ("t", first.checkpoint_id) == (info.value.thread_id, info.value.parent_id)
    latest = await store.load_latest("t")
    assert latest is not None
    assert (winner.checkpoint_id, Counter(n=20)) == (latest.checkpoint_id, state_of(latest))


async def test_save_naming_a_parent_that_is_not_latest_conflicts(store: CheckpointStore) -> None:
    """The expected-parent check holds even when the new checkpoint's slot is still free."""
    first = checkpoint(1, None)
    await store.save(first)
    second = checkpoint(2, first.checkpoint_id)
    await store.save(second)
    for wrong in (
        checkpoint(3, "not-a-checkpoint"),
        checkpoint(3, first.checkpoint_id),
        checkpoint(7, None),
    ):
        with pytest.raises(CheckpointConflict):
            await store.save(wrong)
    latest = await store.load_latest("t")
    assert latest is not None
    assert second.checkpoint_id == latest.checkpoint_id
    await store.save(checkpoint(3, second.checkpoint_id))


async def test_second_first_checkpoint_conflicts(store: CheckpointStore) -> None:
    """Two writers both creating a thread (parent None, seq 1): the second gets CheckpointConflict."""
    await store.save(checkpoint(1, None))
    with pytest.raises(CheckpointConflict):
        await store.save(checkpoint(1, None))


async def test_history_is_newest_first(store: CheckpointStore) -> None:
    """history() yields checkpoints newest first."""
    parent = None
    ids = []
    for seq in range(1, 5):
        cp = checkpoint(seq, parent)
        await store.save(cp)
        parent = cp.checkpoint_id
        ids.append(parent)
    assert ids[::-1] == [cp.checkpoint_id async for cp in store.history("t")]


async def test_lease_is_exclusive_and_released(store: CheckpointStore) -> None:
    """acquire() is exclusive per thread, never waits, and release() (twice) frees it."""
    lease = await store.acquire("t")
    assert isinstance(lease, Lease)
    with pytest.raises(ThreadBusy):
        await store.acquire("t")
    other = await store.acquire("u")
    await other.release()
    await lease.release()
    await lease.release()
    again = await store.acquire("t")
    await again.release()


async def test_delete_forgets_the_thread(store: CheckpointStore) -> None:
    """delete() removes every checkpoint of the thread and leaves others alone."""
    await store.save(checkpoint(1, None))
    await store.save(checkpoint(1, None, thread="other"))
    await store.delete("t")
    assert None is await store.load_latest("t")
    assert [] == [cp async for cp in store.history("t")]
    assert None is not await store.load_latest("other")
    await store.save(checkpoint(1, None))  # the thread can start over


async def test_delete_while_leased_is_busy(store: CheckpointStore) -> None:
    """delete() of a leased thread raises ThreadBusy."""
    await store.save(checkpoint(1, None))
    lease = await store.acquire("t")
    with pytest.raises(ThreadBusy):
        await store.delete("t")
    await lease.release()
    assert None is not await store.load_latest("t")


async def test_secret_is_stable_bytes(store: CheckpointStore) -> None:
    """secret() returns the same key of at least 16 bytes every time."""
    key = await store.secret()
    assert isinstance(key, bytes) and len(key) >= 16
    assert key == await store.secret()


async def test_keep_prunes_to_newest_n(make_store: Callable[..., CheckpointStore]) -> None:
    """keep=N keeps only the newest N checkpoints of each thread."""
    store = make_store(keep=2)
    compiled = chain("a", "b", "c", "d", store=store)
    result = await compiled.run({}, thread_id="t")
    history = [s async for s in compiled.history("t")]
    assert [result.checkpoint_id] == [history[0].checkpoint_id]
    assert [4, 3] == [s.state.n for s in history]
    assert "completed" == (await compiled.run({}, thread_id="t")).status


@pytest.mark.parametrize("keep", [0, -1, True, False, 2.0, "3"])
def test_keep_must_be_a_positive_int(make_store: Callable[..., CheckpointStore], keep: Any) -> None:
    """keep below 1, a bool (not taken as 1) or another type is refused, naming keep and what it may be."""
    with pytest.raises(ValueError) as caught:
        make_store(keep=keep)
    assert f"keep must be None (keep all) or an int >= 1, got {keep!r}" == str(caught.value)


async def test_checkpoint_ids_are_unique_and_unguessable(store: CheckpointStore) -> None:
    """Checkpoint ids are long random strings, never reused within or across threads."""
    compiled = chain("a", "b", store=store)
    for thread in ("t1", "t2"):
        for _ in range(3):
            await compiled.run({}, thread_id=thread)
    ids = [s.checkpoint_id for t in ("t1", "t2") async for s in compiled.history(t)]
    assert 18 == len(ids) == len(set(ids))
    assert min(len(i) for i in ids) >= 16


class Profile(BaseModel):
    display_name: str = Field("", alias="displayName")


class Aliased(BaseModel):
    user_name: str = Field("", alias="userName")
    profile: Profile = Profile.model_validate({})


async def test_state_with_field_aliases_survives_a_round_trip(store: CheckpointStore) -> None:
    """Values of aliased fields (also nested) are kept by save and load, not reset to defaults."""

    async def rename(state: Aliased) -> dict[str, object]:
        return {"user_name": "Ada", "profile": Profile(displayName="Countess")}

    graph = StateGraph(Aliased)
    graph.add_node("rename", rename)
    graph.add_edge(START, "rename")
    graph.add_edge("rename", END)
    compiled = graph.compile(store=store)
    await compiled.run({"userName": "first"}, thread_id="t")
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("Ada", "Countess") == (snapshot.state.user_name, snapshot.state.profile.display_name)
    assert ["first", "Ada"] == [s.state.user_name async for s in compiled.history("t")][::-1]


async def test_save_leaves_the_checkpoint_as_given(store: CheckpointStore) -> None:
    """A store never modifies the checkpoint it saves: its changes stay the engine's."""
    first = checkpoint(1, None, changes=None)
    await store.save(first)
    second = checkpoint(2, first.checkpoint_id, changes={"n": None})
    await store.save(second)
    assert ({"n": None}, Counter(n=2)) == (second.changes, second.state)


def test_every_store_says_whether_it_saves_only_changes(store: CheckpointStore) -> None:
    """``saves_changes`` is part of the store protocol: a bool on every store."""
    assert bool is type(store.saves_changes)


def test_the_durable_stores_save_only_changes_and_the_memory_store_whole_states(
    tmp_path: Path,
) -> None:
    """The file and Postgres stores ask the engine for a step's changes; the memory
    store keeps whole states."""
    from research_fsm.stores import JsonFileCheckpointStore, PostgresCheckpointStore

    assert [False, True, True] == [
        MemoryCheckpointStore().saves_changes,
        JsonFileCheckpointStore(tmp_path).saves_changes,
        PostgresCheckpointStore.saves_changes,
    ]


# -- history pages and single checkpoints ---------------------------------------------


def looping(store: CheckpointStore, steps: int) -> Any:
    """One node that runs ``steps`` times: ``steps + 1`` checkpoints of engine ids."""
    graph = StateGraph(Counter)

    async def tick(state: Counter) -> dict[str, Any]:
        return {"n": state.n + 1, "log": [str(state.n + 1)]}

    graph.add_node("tick", tick).add_edge(START, "tick")
    graph.add_router("tick", lambda s: "tick" if s.n < steps else END, ["tick", END])
    return graph.compile(store=store, step_limit=steps + 5)


async def pages(store: CheckpointStore, thread: str, size: int) -> list[list[Checkpoint]]:
    """The thread's history read a page of ``size`` at a time."""
    found: list[list[Checkpoint]] = []
    before: str | None = None
    while True:
        page = [cp async for cp in store.history(thread, limit=size, before=before)]
        if not page:
            return found
        found.append(page)
        before = page[-1].checkpoint_id


async def test_history_pages_add_up_to_the_whole_history(store: CheckpointStore) -> None:
    """Pages (limit, before = the last of the previous page) across the stores' segments
    and full rows add up to history() exactly, each with its whole state."""
    await looping(store, 300).run({}, thread_id="t")
    whole = [cp async for cp in store.history("t")]
    assert 301 == len(whole)
    paged = await pages(store, "t", 7)
    assert [7] * 43 == [len(page) for page in paged]
    flat = [cp for page in paged for cp in page]
    assert [cp.checkpoint_id for cp in whole] == [cp.checkpoint_id for cp in flat]
    assert list(range(300, -1, -1)) == [state_of(cp).n for cp in flat]
    assert [str(i) for i in range(1, 151)] == state_of(flat[150]).log
    assert [cp.seq for cp in whole[:5]] == [cp.seq async for cp in store.history("t", limit=5)]
    middle = whole[100].checkpoint_id
    assert [cp.checkpoint_id for cp in whole[101:]] == [
        cp.checkpoint_id async for cp in store.history("t", before=middle)
    ]
    assert [] == [cp async for cp in store.history("t", before=whole[-1].checkpoint_id)]


async def test_history_pages_with_ids_of_any_kind(store: CheckpointStore) -> None:
    """Checkpoints whose ids are not the engine's (another writer's, an older version's)
    page and load too."""
    parent = None
    saved = []
    for seq in range(1, 8):
        cp = checkpoint(seq, parent)
        await store.save(cp)
        parent = cp.checkpoint_id
        saved.append(cp)
    paged = await pages(store, "t", 3)
    assert [[7, 6, 5], [4, 3, 2], [1]] == [[cp.seq for cp in page] for page in paged]
    third = await store.load("t", saved[2].checkpoint_id)
    assert third is not None
    assert (3, Counter(n=3)) == (third.seq, state_of(third))


async def test_history_before_an_unknown_checkpoint_is_refused(store: CheckpointStore) -> None:
    """``before`` naming no checkpoint of the thread (unknown, or another thread's)
    raises CheckpointNotFound naming both."""
    await looping(store, 3).run({}, thread_id="t")
    await looping(store, 3).run({}, thread_id="other")
    foreign = [cp.checkpoint_id async for cp in store.history("other")][1]
    for wrong in (foreign, "nope", "0" * 24):
        with pytest.raises(CheckpointNotFound) as caught:
            _ = [cp async for cp in store.history("t", limit=2, before=wrong)]
        assert ("t", wrong) == (caught.value.thread_id, caught.value.checkpoint_id)
        assert f"thread `t` has no checkpoint {wrong!r}" in str(caught.value)
    with pytest.raises(CheckpointNotFound):
        _ = [cp async for cp in store.history("nobody", before=foreign)]
    assert [] == [cp async for cp in store.history("nobody", limit=3)]


async def test_load_finds_one_checkpoint_with_its_whole_state(store: CheckpointStore) -> None:
    """load(thread, id) is that checkpoint as history() gives it; ``None`` for an id
    that is not the thread's."""
    await looping(store, 200).run({}, thread_id="t")
    whole = [cp async for cp in store.history("t")]
    for index in (0, 1, 72, 150, 200):
        wanted = whole[index]
        found = await store.load("t", wanted.checkpoint_id)
        assert found is not None
        assert (wanted.checkpoint_id, wanted.seq, wanted.status, wanted.next) == (
            found.checkpoint_id,
            found.seq,
            found.status,
            found.next,
        )
        assert state_of(wanted) == state_of(found)
    assert None is await store.load("t", "0" * 24)
    assert None is await store.load("u", whole[3].checkpoint_id)


async def test_pages_and_load_see_what_keep_keeps(
    make_store: Callable[..., CheckpointStore],
) -> None:
    """Under keep=N, pages and load show the newest N checkpoints, as history() does,
    even where the store still holds older ones on disk."""
    store = make_store(keep=3)
    compiled = looping(store, 9)
    await compiled.run({}, thread_id="t")
    kept = [cp async for cp in store.history("t")]
    assert [9, 8, 7] == [state_of(cp).n for cp in kept]
    assert [[9, 8], [7]] == [[state_of(cp).n for cp in page] for page in await pages(store, "t", 2)]
    old = kept[-1].checkpoint_id
    assert [] == [cp async for cp in store.history("t", before=old)]
    assert (await store.load("t", old)) is not None


async def test_a_checkpoint_keep_pruned_is_gone_for_pages_and_load(
    make_store: Callable[..., CheckpointStore],
) -> None:
    """Under keep=N an older checkpoint (on disk or not) is not found, like an unknown one."""
    store = make_store(keep=3)
    compiled = chain("a", store=store)
    first = await compiled.run({}, thread_id="t")
    for _ in range(4):
        await compiled.run({}, thread_id="t")
    assert None is await store.load("t", first.checkpoint_id)
    with pytest.raises(CheckpointNotFound):
        _ = [cp async for cp in store.history("t", limit=1, before=first.checkpoint_id)]


# -- the thread listing (ThreadListing) ----------------------------------------------


def at(minute: int) -> str:
    """A checkpoint time ``minute`` minutes into the day (listings order by it)."""
    return f"2024-01-01T{minute // 60:02d}:{minute % 60:02d}:00.000+00:00"


async def grow(
    store: CheckpointStore, thread: str, count: int, minute: int, **last: Any
) -> Checkpoint:
    """``count`` checkpoints on ``thread``, the last at ``minute`` with ``last``'s fields."""
    parent = None
    for seq in range(1, count + 1):
        over = last if seq == count else {}
        cp = checkpoint(seq, parent, thread=thread, created_at=at(minute), **over)
        await store.save(cp)
        parent = cp.checkpoint_id
    assert isinstance(cp, Checkpoint)
    return cp


def listing(store: CheckpointStore) -> ThreadListing:
    assert isinstance(store, ThreadListing)
    return store


async def every_page(store: CheckpointStore, **query: Any) -> list[ThreadPage]:
    """Every page of a listing, following the cursors."""
    pages_: list[ThreadPage] = []
    cursor = None
    while True:
        page = await listing(store).threads(cursor=cursor, **query)
        pages_.append(page)
        if page.next_cursor is None:
            return pages_
        cursor = page.next_cursor


async def test_threads_lists_newest_first_with_what_each_latest_checkpoint_says(
    store: CheckpointStore,
) -> None:
    """Each thread shows its latest status, node, time, checkpoint count and id, newest first."""
    done = await grow(store, "done", 3, 5, status="completed", next=None, last_node="c")
    asks = await grow(
        store, "asks", 1, 9, status="suspended", next=None, suspension={"node": "q", "payload": 1}
    )
    broke = await grow(
        store,
        "broke",
        2,
        7,
        status="failed",
        next=None,
        error={"node": "b", "exc_type": "KeyError", "message": "x"},
    )
    page = await listing(store).threads()
    assert page.next_cursor is None
    assert [(t.thread_id, t.status, t.node, t.checkpoints) for t in page.threads] == [
        ("asks", "suspended", "q", 1),
        ("broke", "failed", "b", 2),
        ("done", "completed", "c", 3),
    ]
    assert [t.checkpoint_id for t in page.threads] == [
        asks.checkpoint_id,
        broke.checkpoint_id,
        done.checkpoint_id,
    ]
    assert [t.updated_at for t in page.threads] == [at(9), at(7), at(5)]
    assert all(t.parent_thread_id is None for t in page.threads)


async def test_threads_pages_by_cursor_add_up_to_every_thread_once(store: CheckpointStore) -> None:
    """Pages of 3 through 8 threads (two saved in the same minute) give each thread once, in order."""
    for n in range(8):
        await grow(store, f"t{n}", 1 + n % 2, n if n != 7 else 6)
    pages_ = await every_page(store, limit=3)
    assert [len(p.threads) for p in pages_] == [3, 3, 2]
    ids = [t.thread_id for p in pages_ for t in p.threads]
    assert ids == ["t7", "t6", "t5", "t4", "t3", "t2", "t1", "t0"]


async def test_threads_filters_by_prefix_status_and_children(store: CheckpointStore) -> None:
    """prefix, status (one or several) and children=False each narrow the listing."""
    await grow(store, "app-1", 1, 1, status="completed", next=None)
    await grow(store, "app-2", 2, 2, status="running")
    await grow(store, "app-2.sub.0123456789abcdef", 1, 3, parent_thread_id="app-2")
    await grow(store, "other", 1, 4, status="suspended", suspension={"node": "a", "payload": 0})

    async def ids(**query: Any) -> list[str]:
        return [t.thread_id for p in await every_page(store, limit=2, **query) for t in p.threads]

    assert await ids(prefix="app-") == ["app-2.sub.0123456789abcdef", "app-2", "app-1"]
    assert await ids(status="running") == ["app-2.sub.0123456789abcdef", "app-2"]
    assert await ids(status=["completed", "suspended"]) == ["other", "app-1"]
    assert await ids(children=False) == ["other", "app-2", "app-1"]
    assert await ids(prefix="app-2.", status="running") == ["app-2.sub.0123456789abcdef"]
    child = (await listing(store).threads(prefix="app-2.")).threads[0]
    assert child.parent_thread_id == "app-2"


async def test_threads_follow_saves_and_deletes(store: CheckpointStore) -> None:
    """A thread saved again moves to the top with its new state; a deleted one leaves."""
    first = await grow(store, "a", 1, 1)
    await grow(store, "b", 1, 2)
    await grow(store, "c", 1, 3)
    moved = checkpoint(2, first.checkpoint_id, thread="a", created_at=at(4), status="completed")
    await store.save(moved)
    await store.delete("b")
    page = await listing(store).threads()
    assert [(t.thread_id, t.status, t.checkpoints) for t in page.threads] == [
        ("a", "completed", 2),
        ("c", "running", 1),
    ]


async def test_threads_count_what_keep_keeps(make_store: Callable[..., CheckpointStore]) -> None:
    """With keep=3, a thread of 7 checkpoints counts 3 (what history gives), one of 2 counts 2."""
    store = make_store(keep=3)
    await grow(store, "long", 7, 2)
    await grow(store, "short", 2, 1)
    page = await listing(store).threads()
    assert [(t.thread_id, t.checkpoints) for t in page.threads] == [("long", 3), ("short", 2)]
    assert len([cp async for cp in store.history("long")]) == 3


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"cursor": "page-2"}, "next_cursor"),
        ({"cursor": "tc1.bm90IGpzb24"}, "next_cursor"),
        ({"status": "paused"}, "'completed', 'suspended', 'failed', 'running'"),
        ({"status": ["completed", "done"]}, "'running'"),
        ({"limit": 0}, "from 1 to 1000"),
        ({"prefix": "a/b"}, "A-Z a-z 0-9"),
    ],
)
async def test_threads_refuses_a_bad_argument_naming_the_allowed_values(
    store: CheckpointStore, query: dict[str, Any], named: str
) -> None:
    """A cursor no listing gave, an unknown status, a bad limit or prefix: InvalidThreadQuery."""
    with pytest.raises(InvalidThreadQuery, match=re.escape(named)):
        await listing(store).threads(**query)


async def test_a_subgraph_child_thread_names_its_parent(store: CheckpointStore) -> None:
    """A graph's child thread lists with its parent's thread id; children=False hides it."""
    inner = chain("x")
    outer = StateGraph(Counter).add_node("sub", inner).add_edge(START, "sub").add_edge("sub", END)
    app = outer.compile(store=store)
    await app.run({"n": 1}, thread_id="top")
    every = (await app.threads()).threads
    child = [t for t in every if t.thread_id != "top"]
    assert [t.parent_thread_id for t in child] == ["top"]
    assert child[0].status == "completed"
    snapshot = await app.get_state("top")
    assert snapshot is not None
    top = [t.thread_id for t in (await app.threads(children=False)).threads]
    assert top == ["top"]


async def test_threads_is_the_first_call_of_a_fresh_store(store: CheckpointStore) -> None:
    """A store opened on existing threads lists them before any other call."""
    await grow(store, "first", 1, 1)
    again = reopen(store)
    try:
        assert [t.thread_id for t in (await listing(again).threads()).threads] == ["first"]
    finally:
        if again is not store:
            await close_store(again)
