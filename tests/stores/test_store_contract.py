"""The CheckpointStore contract, checked on every store implementation."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest
from engine.helpers import Counter, chain
from pydantic import BaseModel, Field

from research_fsm.engine import (
    END,
    START,
    Checkpoint,
    CheckpointConflict,
    CheckpointStore,
    Lease,
    MemoryCheckpointStore,
    StateGraph,
    ThreadBusy,
)


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
        suspension={"node": "a", "payload": {"q": [1, "x"]}},
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
    expected = not isinstance(store, MemoryCheckpointStore)
    assert expected is store.saves_changes
