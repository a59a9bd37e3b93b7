"""Node errors: retries, retry_on, timeouts, on_error routing, NodeFailed and step limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    CompiledGraph,
    ErrorInfo,
    NodeContext,
    NodeFailed,
    NodeTimeout,
    RetryPolicy,
    StateGraph,
    StepLimitExceeded,
    ThreadBusy,
    is_transient,
)

from .helpers import Counter, recorder


class Flaky:
    """An async callable node that raises ``exc`` for its first ``failures`` calls."""

    def __init__(self, failures: int, exc: BaseException | None = None) -> None:
        self.failures = failures
        self.exc = exc or ConnectionError("flaky")
        self.attempts = 0

    async def __call__(self, state: Counter) -> dict[str, Any]:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.exc
        return {"log": ["flaky ok"]}


def flaky_graph(
    node: Any,
    store: CheckpointStore,
    *,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    on_error: str | None = None,
) -> CompiledGraph[Counter]:
    """START -> a -> flaky -> END, with an optional ``handler`` node as on_error target."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_node("flaky", node, retry=retry, timeout=timeout, on_error=on_error)
    graph.add_edge(START, "a")
    graph.add_edge("a", "flaky")
    graph.add_edge("flaky", END)
    if on_error:
        errors: list[ErrorInfo | None] = []

        async def handler(state: Counter, ctx: NodeContext) -> dict[str, Any]:
            errors.append(ctx.error)
            return {"log": ["handled"]}

        graph.add_node(on_error, handler)
        graph.add_edge(on_error, END)
        compiled = graph.compile(store=store)
        compiled.errors = errors  # type: ignore[attr-defined]
        return compiled
    return graph.compile(store=store)


FAST = RetryPolicy(max_attempts=3, backoff=0)


async def test_retry_policy_retries_until_success(store: CheckpointStore) -> None:
    """A node failing twice under max_attempts=3 succeeds on the third attempt."""
    node = Flaky(failures=2)
    result = await flaky_graph(node, store, retry=FAST).run({}, thread_id="t")
    assert ("completed", 3, ["a", "flaky ok"]) == (result.status, node.attempts, result.state.log)


async def test_no_policy_means_no_retry(store: CheckpointStore) -> None:
    """Without a RetryPolicy a failing node is attempted exactly once."""
    node = Flaky(failures=1)
    with pytest.raises(NodeFailed):
        await flaky_graph(node, store).run({}, thread_id="t")
    assert 1 == node.attempts


async def test_retry_on_filters_exception_types(store: CheckpointStore) -> None:
    """An exception outside ``retry_on`` is not retried."""
    node = Flaky(failures=1, exc=ValueError("bad input"))
    policy = RetryPolicy(max_attempts=5, backoff=0, retry_on=(ConnectionError,))
    with pytest.raises(NodeFailed) as info:
        await flaky_graph(node, store, retry=policy).run({}, thread_id="t")
    assert (1, ValueError) == (node.attempts, type(info.value.cause))


async def test_engine_control_errors_are_never_retried(store: CheckpointStore) -> None:
    """An EngineError raised inside a node (e.g. ThreadBusy) is not retried even under retry_on=Exception."""
    node = Flaky(failures=5, exc=ThreadBusy("other"))
    with pytest.raises(NodeFailed):
        await flaky_graph(node, store, retry=FAST).run({}, thread_id="t")
    assert 1 == node.attempts


async def test_exhausted_retries_raise_node_failed_and_checkpoint_failure(
    store: CheckpointStore,
) -> None:
    """After the last attempt NodeFailed carries node, step and cause, and a 'failed' checkpoint is saved."""
    node = Flaky(failures=10, exc=ConnectionError("still down"))
    compiled = flaky_graph(node, store, retry=FAST)
    with pytest.raises(NodeFailed) as info:
        await compiled.run({}, thread_id="t")
    error = info.value
    assert ("flaky", 1, 3) == (error.node, error.step, node.attempts)
    assert isinstance(error.cause, ConnectionError)
    assert "node `flaky` failed at step 1: ConnectionError: still down" == str(error)
    assert error.__cause__ is error.cause
    snapshot = await compiled.get_state("t")
    assert snapshot is not None
    assert ("failed", "flaky", Counter(n=1, log=["a"])) == (
        snapshot.status,
        snapshot.next,
        snapshot.state,
    )
    assert ErrorInfo("flaky", "ConnectionError", "still down") == snapshot.error


async def test_on_error_routes_with_error_info(store: CheckpointStore) -> None:
    """With on_error, a failed node routes there and ``ctx.error`` says what failed."""
    node = Flaky(failures=10, exc=KeyError("missing"))
    every = RetryPolicy(max_attempts=3, backoff=0, retry_on=(Exception,))
    compiled = flaky_graph(node, store, retry=every, on_error="handler")
    result = await compiled.run({}, thread_id="t")
    assert ("completed", ["a", "flaky", "handler"]) == (result.status, result.path)
    assert ["a", "handled"] == result.state.log
    assert [ErrorInfo("flaky", "KeyError", "'missing'")] == compiled.errors  # type: ignore[attr-defined]
    assert 3 == node.attempts


async def test_on_error_handler_gets_no_error_when_called_normally(store: CheckpointStore) -> None:
    """``ctx.error`` is None for nodes not entered through on_error."""
    seen: list[ErrorInfo | None] = []

    async def node(state: Counter, ctx: NodeContext) -> None:
        seen.append(ctx.error)

    graph = StateGraph(Counter)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    await graph.compile(store=store).run({}, thread_id="t")
    assert [None] == seen


class Hang:
    """A node that hangs on its first ``hangs`` calls (until cancelled), then returns."""

    def __init__(self, hangs: int = 1_000) -> None:
        self.hangs = hangs
        self.calls = 0
        self.cancelled = 0

    async def __call__(self, state: Counter) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.hangs:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return {"log": ["fast"]}


async def test_timeout_cancels_the_node_with_node_timeout(store: CheckpointStore) -> None:
    """A node exceeding ``timeout`` is cancelled and fails with NodeTimeout as the cause."""
    node = Hang()
    compiled = flaky_graph(node, store, timeout=0.02)
    with pytest.raises(NodeFailed) as info:
        await compiled.run({}, thread_id="t")
    cause = info.value.cause
    assert isinstance(cause, NodeTimeout)
    assert ("flaky", 0.02, 1) == (cause.node, cause.timeout, node.cancelled)
    assert "node `flaky` did not finish within 0.02 s" == str(cause)
    assert isinstance(cause, TimeoutError)


async def test_timeout_can_route_to_on_error(store: CheckpointStore) -> None:
    """A timed-out node with on_error routes there with exc_type 'NodeTimeout'."""
    compiled = flaky_graph(Hang(), store, timeout=0.02, on_error="handler")
    result = await compiled.run({}, thread_id="t")
    assert ["a", "handled"] == result.state.log
    errors = compiled.errors  # type: ignore[attr-defined]
    assert 1 == len(errors)
    assert ("flaky", "NodeTimeout") == (errors[0].node, errors[0].exc_type)


async def test_timed_out_attempt_is_retried(store: CheckpointStore) -> None:
    """A timeout is a node failure like any other: a RetryPolicy retries it."""
    node = Hang(hangs=1)
    result = await flaky_graph(node, store, timeout=0.02, retry=FAST).run({}, thread_id="t")
    assert ("completed", 2, 1) == (result.status, node.calls, node.cancelled)


async def test_step_limit_raises_with_path(store: CheckpointStore) -> None:
    """A run executing more than ``step_limit`` nodes raises StepLimitExceeded with the path taken."""
    graph = StateGraph(Counter)
    graph.add_node("spin", recorder("spin"))
    graph.add_edge(START, "spin")
    graph.add_router("spin", lambda s: "again", {"again": "spin"})
    with pytest.raises(StepLimitExceeded) as info:
        await graph.compile(store=store, step_limit=4).run({}, thread_id="t")
    assert (4, ["spin"] * 4) == (info.value.limit, info.value.path)
    assert "step limit of 4 exceeded; path taken: spin -> spin -> spin -> spin" == str(info.value)


async def test_step_limit_is_per_call(store: CheckpointStore) -> None:
    """A run of exactly ``step_limit`` nodes completes; the limit resets on the next call."""
    graph = StateGraph(Counter)
    graph.add_node("a", recorder("a"))
    graph.add_node("b", recorder("b"))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", END)
    compiled = graph.compile(store=store, step_limit=2)
    assert ["a", "b"] == (await compiled.run({}, thread_id="t")).path
    assert ["a", "b"] == (await compiled.run({}, thread_id="t")).path


async def test_on_error_cycle_hits_the_step_limit(store: CheckpointStore) -> None:
    """A node that fails and is its own on_error target stops at step_limit instead of spinning forever."""
    node = Flaky(failures=1_000)
    graph = StateGraph(Counter)
    graph.add_node("retry_forever", node, on_error="retry_forever")
    graph.add_edge(START, "retry_forever")
    graph.add_edge("retry_forever", END)
    async with asyncio.timeout(10):
        with pytest.raises(StepLimitExceeded) as info:
            await graph.compile(store=store, step_limit=5).run({}, thread_id="t")
    assert (["retry_forever"] * 5, 5) == (info.value.path, node.attempts)


def test_retry_policy_backoff_doubles_and_is_capped() -> None:
    """``delay`` doubles per attempt from ``backoff`` and never exceeds ``max_backoff``."""
    policy = RetryPolicy(max_attempts=10, backoff=0.5, max_backoff=3)
    assert [0.5, 1.0, 2.0, 3.0, 3.0] == [policy.delay(a) for a in range(1, 6)]


@pytest.mark.parametrize("kwargs", [{"max_attempts": 0}, {"backoff": -1}, {"max_backoff": -1}])
def test_retry_policy_rejects_bad_values(kwargs: dict[str, Any]) -> None:
    """RetryPolicy refuses max_attempts < 1 and negative backoffs."""
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize(
    "exc", [ValueError("bad"), TypeError("bad"), KeyError("k"), AttributeError("a"), RuntimeError()]
)
async def test_default_policy_does_not_retry_programming_errors(
    store: CheckpointStore, exc: BaseException
) -> None:
    """``RetryPolicy()`` fails a node at once on a bug (ValueError, TypeError, KeyError...)."""
    node = Flaky(failures=5, exc=exc)
    with pytest.raises(NodeFailed) as info:
        await flaky_graph(node, store, retry=RetryPolicy(backoff=0)).run({}, thread_id="t")
    assert (1, type(exc)) == (node.attempts, type(info.value.cause))


class _StatusError(Exception):
    """An HTTP client's error carrying the response status, as SDKs raise them."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class APIConnectionError(Exception):
    """Named as an SDK's connection error that does not subclass ``ConnectionError``."""


class _Marked(Exception):
    """An application error marked retryable."""

    retryable = True


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (ConnectionError("reset"), True),
        (TimeoutError(), True),
        (APIConnectionError("down"), True),
        (_StatusError(429), True),
        (_StatusError(503), True),
        (_StatusError(400), False),
        (_StatusError(404), False),
        (_Marked(), True),
        (ValueError("bad"), False),
        (OSError("disk"), False),
    ],
)
def test_is_transient_picks_transient_failures(exc: BaseException, retried: bool) -> None:
    """The default ``retry_on`` retries connection, timeout, 408/425/429/5xx and marked errors."""
    assert retried == is_transient(exc)


def test_a_marked_false_error_is_not_retried_even_if_it_is_a_connection_error() -> None:
    """``retryable = False`` on an exception opts it out of the default retries."""
    exc = ConnectionError("refused for good")
    exc.retryable = False  # type: ignore[attr-defined]
    assert False is is_transient(exc)


async def test_default_policy_retries_a_connection_error(store: CheckpointStore) -> None:
    """``RetryPolicy()`` retries a ConnectionError until the node succeeds."""
    node = Flaky(failures=2, exc=ConnectionError("blip"))
    result = await flaky_graph(node, store, retry=RetryPolicy(backoff=0)).run({}, thread_id="t")
    assert ("completed", 3) == (result.status, node.attempts)


async def test_retry_on_takes_a_predicate(store: CheckpointStore) -> None:
    """``retry_on`` may be a callable deciding per exception."""
    node = Flaky(failures=2, exc=ValueError("retry me"))
    policy = RetryPolicy(backoff=0, retry_on=lambda exc: "retry me" in str(exc))
    result = await flaky_graph(node, store, retry=policy).run({}, thread_id="t")
    assert ("completed", 3) == (result.status, node.attempts)


@pytest.mark.parametrize("retry_on", [42, "ConnectionError", (ValueError, 3), int])
def test_retry_policy_rejects_a_bad_retry_on(retry_on: Any) -> None:
    """``retry_on`` that is neither exception types nor a callable is refused, naming the value."""
    with pytest.raises(ValueError, match="retry_on must be an exception type") as info:
        RetryPolicy(retry_on=retry_on)
    assert repr(retry_on) in str(info.value)
