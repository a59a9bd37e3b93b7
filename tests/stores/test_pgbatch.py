"""The Postgres store's shared round trips (``postgres.batch.Batcher``), without a server."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("psycopg")  # importing the postgres store package imports its driver

from research_fsm.stores.postgres.batch import Batcher, complete


class Trips:
    """A round trip that records its batches and, while ``hold`` is clear, waits for it."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.running = 0
        self.most_running = 0
        self.hold = asyncio.Event()
        self.hold.set()

    async def __call__(self, requests: list[str]) -> list[str | BaseException]:
        self.batches.append(list(requests))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await self.hold.wait()
        finally:
            self.running -= 1
        return [ValueError(r) if r.startswith("bad") else r.upper() for r in requests]


async def test_a_request_queued_as_a_round_trip_ends_is_still_sent() -> None:
    """A request submitted right after the previous trip's outcome arrives gets its own trip."""
    trips = Trips()
    batcher: Batcher[str, str] = Batcher(trips, width=1, most=8)
    assert ("A", False) == await asyncio.wait_for(complete(batcher.submit("a", "a")), 2)
    follow = batcher.submit("b", "b")  # the first trip's task has not been cleaned up yet
    assert "B" == await asyncio.wait_for(follow, 2)


async def test_requests_waiting_for_a_round_trip_share_the_next_one() -> None:
    """While one trip is in flight, the requests that arrive go together in the next."""
    trips = Trips()
    trips.hold.clear()
    batcher: Batcher[str, str] = Batcher(trips, width=1, most=8)
    first = batcher.submit("a", "a")
    await asyncio.sleep(0.01)
    rest = [batcher.submit(r, r) for r in ("b", "c", "d")]
    trips.hold.set()
    assert ["A", "B", "C", "D"] == list(await asyncio.gather(first, *rest))
    assert [["a"], ["b", "c", "d"]] == trips.batches


async def test_requests_with_the_same_key_never_share_a_round_trip() -> None:
    """A second request for a key waits for the next trip, after the first one's."""
    trips = Trips()
    trips.hold.clear()
    batcher: Batcher[str, str] = Batcher(trips, width=1, most=8)
    first = batcher.submit("k0", "a")
    await asyncio.sleep(0.01)
    rest = [batcher.submit("k1", "b"), batcher.submit("k1", "c"), batcher.submit("k2", "d")]
    trips.hold.set()
    await asyncio.gather(first, *rest)
    assert [["a"], ["b", "d"], ["c"]] == trips.batches


async def test_at_most_width_trips_run_at_once_and_most_requests_per_trip() -> None:
    """With width 2 and most 3, ten waiting requests go in trips of at most 3, two at a time."""
    trips = Trips()
    trips.hold.clear()
    batcher: Batcher[str, str] = Batcher(trips, width=2, most=3)
    futures = [batcher.submit(f"k{i}", f"r{i}") for i in range(10)]
    await asyncio.sleep(0.01)
    trips.hold.set()
    assert [f"R{i}" for i in range(10)] == list(await asyncio.gather(*futures))
    assert (2, 3) == (trips.most_running, max(len(b) for b in trips.batches))
    assert [f"r{i}" for i in range(10)] == sorted(r for b in trips.batches for r in b)


async def test_an_exception_outcome_fails_only_its_request() -> None:
    """A trip's outcome that is an exception is raised by that request alone."""
    batcher: Batcher[str, str] = Batcher(Trips(), width=1, most=8)
    good, bad = batcher.submit("a", "a"), batcher.submit("b", "bad")
    assert "A" == await asyncio.wait_for(good, 2)
    with pytest.raises(ValueError, match="bad"):
        await bad


async def test_a_failed_trip_fails_its_requests_and_the_next_trip_goes_on() -> None:
    """A trip that raises fails every request in it; later requests get trips of their own."""
    calls: list[list[str]] = []

    async def flaky(requests: list[str]) -> list[str | BaseException]:
        calls.append(requests)
        if len(calls) == 1:
            raise OSError("connection lost")
        return [r.upper() for r in requests]

    batcher: Batcher[str, str] = Batcher(flaky, width=1, most=8)
    with pytest.raises(OSError, match="connection lost"):
        await batcher.submit("a", "a")
    assert "B" == await asyncio.wait_for(batcher.submit("b", "b"), 2)


async def test_a_cancelled_caller_waits_for_its_trip_and_the_trip_finishes() -> None:
    """Cancelling a caller in ``complete`` does not cut its trip: the outcome still arrives."""
    trips = Trips()
    trips.hold.clear()
    batcher: Batcher[str, str] = Batcher(trips, width=1, most=8)
    future = batcher.submit("a", "a")
    caller = asyncio.ensure_future(complete(future))
    await asyncio.sleep(0.01)
    caller.cancel()
    await asyncio.sleep(0.01)
    trips.hold.set()
    assert ("A", True) == await caller
