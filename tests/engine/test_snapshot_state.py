"""A history() snapshot's state: validated when first read, the same as get_state's."""

from __future__ import annotations

import copy
import dataclasses
import pickle

from research_fsm.engine import CheckpointStore

from .helpers import Counter, chain


async def test_history_snapshots_equal_get_state_of_each_checkpoint(store: CheckpointStore) -> None:
    """Each history() snapshot equals get_state(checkpoint_id=...) of it, state included."""
    app = chain("a", "b", store=store)
    await app.run({"n": 1}, thread_id="t")
    await app.update_state("t", {"n": 7})
    page = [s async for s in app.history("t")]
    assert len(page) == 4
    for snap in page:
        assert snap == await app.get_state("t", checkpoint_id=snap.checkpoint_id)
    assert [7, 3, 2, 1] == [s.state.n for s in page]
    assert isinstance(page[0].state, Counter)


async def test_history_state_is_one_instance_and_survives_copy_and_pickle(
    store: CheckpointStore,
) -> None:
    """Reading a snapshot's state twice gives one instance; copies and pickles carry the state."""
    app = chain("a", store=store)
    await app.run({"n": 4}, thread_id="t")
    (snap,) = [s async for s in app.history("t", limit=1)]
    assert snap.state is snap.state
    for made in (
        copy.copy(snap),
        copy.deepcopy(snap),
        pickle.loads(pickle.dumps(snap)),
        dataclasses.replace(snap, status="failed"),
    ):
        assert 5 == made.state.n
        assert snap.checkpoint_id == made.checkpoint_id
    assert snap == pickle.loads(pickle.dumps(snap))
