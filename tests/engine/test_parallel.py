"""Parallel branches: fan-out, join, ``Send`` maps, per-branch checkpoints, failure and
suspension inside branches, on every store."""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    Emitted,
    GraphValidationError,
    InvalidUpdate,
    MemoryCheckpointStore,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    Replace,
    RetryPolicy,
    RoutingError,
    Send,
    StaleResumeToken,
    StateGraph,
    StepLimitExceeded,
    Suspend,
    ThreadSuspended,
    add,
    append,
)


class Work(BaseModel):
    """State of the parallel tests: an append log, a counter, and a plain field."""

    log: Annotated[list[str], append] = []
    count: Annotated[int, add] = 0
    summary: str = ""
    items: list[str] = []


def logger(name: str, calls: list[str] | None = None, delay: float = 0.0) -> Any:
    """A node that logs ``name`` (with its Send item, if any) and counts one."""

    async def node(state: Work, ctx: Any) -> dict[str, Any]:
        if calls is not None:
            calls.append(name if ctx.item is None else f"{name}:{ctx.item}")
        if delay:
            await asyncio.sleep(delay)
        text = name if ctx.item is None else f"{name}:{ctx.item}"
        return {"log": [text], "count": 1}

    return node


async def summarise(state: Work) -> dict[str, Any]:
    """The join: writes the log it sees."""
    return {"summary": ",".join(state.log)}


def specialists(
    store: CheckpointStore, calls: list[str] | None = None, **nodes: Any
) -> StateGraph[Work]:
    """researcher -> [financial -> financial_review, market, product] -> synthesizer."""
    graph = StateGraph(Work)
    for name in ("researcher", "financial", "financial_review", "market", "product"):
        graph.add_node(name, nodes.get(name) or logger(name, calls))
    graph.add_node("synthesizer", nodes.get("synthesizer") or summarise)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", ["financial", "market", "product"])
    graph.add_edge("financial", "financial_review")
    graph.add_edge(["financial_review", "market", "product"], "synthesizer")
    graph.add_edge("synthesizer", END)
    return graph


def mapper(items: list[Any], node: Any = None, **compile_args: Any) -> StateGraph[Work]:
    """plan -> Send("analyse", item) per item -> synth."""
    graph = StateGraph(Work)
    graph.add_node("plan", logger("plan"))
    graph.add_node("analyse", node or logger("analyse"))
    graph.add_node("synth", summarise)
    graph.add_edge(START, "plan")
    graph.add_router(
        "plan", lambda s: [Send("analyse", i) for i in items], ["analyse"], join="synth"
    )
    graph.add_edge("analyse", "synth")
    graph.add_edge("synth", END)
    return graph


# -- running -----------------------------------------------------------------------


async def test_branches_run_concurrently(store: CheckpointStore) -> None:
    """Three branches are in flight at once: each waits until all three have started."""
    started: set[str] = set()
    everyone = asyncio.Event()

    def meeting(name: str) -> Any:
        async def node(state: Work) -> dict[str, Any]:
            started.add(name)
            if len(started) == 3:
                everyone.set()
            await asyncio.wait_for(everyone.wait(), 2)
            return {"log": [name]}

        return node

    graph = specialists(
        store, financial=meeting("financial"), market=meeting("market"), product=meeting("product")
    )
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert "completed" == result.status
    assert {"financial", "market", "product"} == started


async def test_join_merges_in_declared_order_whatever_the_timing(store: CheckpointStore) -> None:
    """Under random branch delays the merged log is always in declared order."""
    for seed in range(12):
        rng = random.Random(seed)
        nodes = {n: logger(n, delay=rng.random() / 200) for n in ("financial", "market", "product")}
        nodes["financial_review"] = logger("financial_review", delay=rng.random() / 200)
        app = specialists(store, **nodes).compile(store=store)
        result = await app.run({}, thread_id=f"t{seed}")
        expected = ["researcher", "financial", "financial_review", "market", "product"]
        assert expected == result.state.log
        assert ",".join(expected) == result.state.summary
        assert 5 == result.state.count


async def test_send_map_runs_node_once_per_item_with_ctx_item(store: CheckpointStore) -> None:
    """Each Send runs its node once with the item as ctx.item; merge follows send order."""
    calls: list[str] = []
    items = ["a", "b", "c", "d"]
    app = mapper(items, logger("analyse", calls, delay=0.001)).compile(store=store)
    result = await app.run({}, thread_id="t")
    assert ["plan"] + [f"analyse:{i}" for i in items] == result.state.log
    assert sorted(f"analyse:{i}" for i in items) == sorted(calls)


async def test_router_returning_keys_fans_out(store: CheckpointStore) -> None:
    """A router returning a list of keys starts those targets together, joined at its join."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c"):
        graph.add_node(name, logger(name))
    graph.add_node("j", summarise)
    graph.add_edge(START, "a")
    graph.add_router("a", lambda s: ["second", "first"], {"first": "b", "second": "c"}, join="j")
    graph.add_edge("b", "j")
    graph.add_edge("c", "j")
    graph.add_edge("j", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert ["a", "c", "b"] == result.state.log


async def test_empty_router_list_goes_to_join(store: CheckpointStore) -> None:
    """An empty list from a router starts no branch; its join runs next."""
    result = await mapper([]).compile(store=store).run({}, thread_id="t")
    assert ["plan"] == result.state.log
    assert "plan" == result.state.summary
    assert ["plan", "synth"] == result.path


async def test_undeclared_send_node_and_key_raise_routing_error(store: CheckpointStore) -> None:
    """A Send to an undeclared node, or an undeclared key in a list, names the culprit."""
    graph = StateGraph(Work)
    graph.add_node("plan", logger("plan"))
    graph.add_node("analyse", logger("analyse"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: [Send("nowhere", 1)], ["analyse"], join="analyse")
    graph.add_edge("analyse", END)
    with pytest.raises(RoutingError) as info:
        await graph.compile(store=store).run({}, thread_id="t")
    assert "sent a branch to node 'nowhere'" in str(info.value)
    assert "declared nodes: 'analyse'" in str(info.value)

    graph = StateGraph(Work)
    graph.add_node("plan", logger("plan"))
    graph.add_node("analyse", logger("analyse"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: ["analyse", "oops"], ["analyse"])
    graph.add_edge("analyse", END)
    with pytest.raises(RoutingError) as info:
        await graph.compile(store=store).run({}, thread_id="t2")
    assert "returned 'oops', which is not one of its declared keys: 'analyse'" in str(info.value)


async def test_branches_read_the_fan_out_state_plus_their_own(store: CheckpointStore) -> None:
    """A branch does not see a sibling's updates; it sees its own earlier node's."""
    seen: dict[str, list[str]] = {}

    def looker(name: str) -> Any:
        async def node(state: Work) -> dict[str, Any]:
            seen[name] = list(state.log)
            await asyncio.sleep(0.001 if name == "financial_review" else 0.005)
            return {"log": [name]}

        return node

    nodes = {n: looker(n) for n in ("financial", "financial_review", "market", "product")}
    await specialists(store, **nodes).compile(store=store).run({}, thread_id="t")
    assert ["researcher"] == seen["market"]
    assert ["researcher"] == seen["product"]
    assert ["researcher", "financial"] == seen["financial_review"]


async def test_two_branches_replacing_one_field_is_an_error(store: CheckpointStore) -> None:
    """Two branches writing a `replace` field raise InvalidUpdate naming it and both nodes."""

    def setter(value: str) -> Any:
        async def node(state: Work) -> dict[str, Any]:
            return {"summary": value}

        return node

    graph = specialists(store, market=setter("m"), product=setter("p"))
    app = graph.compile(store=store)
    with pytest.raises(InvalidUpdate) as info:
        await app.run({}, thread_id="t")
    message = str(info.value)
    assert "field `summary`" in message
    assert "`market[1]` (node `market`)" in message
    assert "`product[2]` (node `product`)" in message
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert ["done", "done", "done"] == [b.status for b in snapshot.branches]


@pytest.mark.parametrize("field", ["log", "count"])
async def test_two_branches_replacing_a_reducer_field_is_an_error(
    store: CheckpointStore, field: str
) -> None:
    """Two branches overwriting one field with ``Replace`` (any reducer) raise InvalidUpdate naming both."""

    def overwrite(value: Any) -> Any:
        async def node(state: Work) -> dict[str, Any]:
            return {field: Replace(value)}

        return node

    values = {"log": (["a"], ["b"]), "count": (1, 2)}[field]
    graph = StateGraph(Work)
    graph.add_node("a", overwrite(values[0]))
    graph.add_node("b", overwrite(values[1]))
    graph.add_edge(START, ["a", "b"])
    graph.add_edge(["a", "b"], END)
    with pytest.raises(InvalidUpdate) as info:
        await graph.compile(store=store).run({}, thread_id="t")
    expected = (
        f"branches `a[0]` (node `a`) and `b[1]` (node `b`) both set field `{field}`, and `a[0]` "
        "replaces it (`Replace(...)`, or an in-place change that is not an append): the other "
        "branch's write would be lost; let one branch write it"
    )
    assert expected == str(info.value)


async def test_one_branch_replacing_a_field_another_appends_to_is_an_error(
    store: CheckpointStore,
) -> None:
    """A ``Replace`` in one branch and an append in another is an InvalidUpdate: the append would be lost."""

    async def trim(state: Work) -> dict[str, Any]:
        return {"log": Replace(["trimmed"])}

    with pytest.raises(InvalidUpdate) as info:
        await specialists(store, market=trim).compile(store=store).run({}, thread_id="t")
    message = str(info.value)
    assert (
        "branches `financial[0]` (node `financial`) and `market[1]` (node `market`) both set "
        "field `log`, and `market[1]` replaces it"
    ) in message


async def test_a_branch_may_replace_a_field_no_other_branch_writes(
    store: CheckpointStore,
) -> None:
    """A ``Replace`` of a field only its own branch writes merges like any update."""

    async def trim(state: Work) -> dict[str, Any]:
        return {"items": Replace(["only-market"])}

    result = await specialists(store, market=trim).compile(store=store).run({}, thread_id="t")
    assert ["only-market"] == result.state.items


async def test_each_branch_node_is_checkpointed(store: CheckpointStore) -> None:
    """History shows the fan-out start, each branch node finishing (one branch's change
    per checkpoint, in whatever order the branches finish), and the merge at the join."""
    nodes = {
        "financial": logger("financial", delay=0.0),
        # 100 ms apart: on a loaded machine two branches finishing in one tick would share
        # the merge's save, and the count below assumes they finish one at a time
        "financial_review": logger("financial_review", delay=0.3),
        "market": logger("market", delay=0.1),
        "product": logger("product", delay=0.2),
    }
    app = specialists(store, **nodes).compile(store=store)
    await app.run({}, thread_id="t")
    seen = [s async for s in app.history("t")][::-1]  # oldest first
    fanout = [{b.id: (b.status, b.node) for b in s.branches} for s in seen if s.branches]
    assert {
        "financial[0]": ("pending", "financial"),
        "market[1]": ("pending", "market"),
        "product[2]": ("pending", "product"),
    } == fanout[0]
    for before, after in itertools.pairwise(fanout):
        changed = [b for b in after if after[b] != before.get(b)]
        assert 1 == len(changed), (before, after)
    steps = {
        "financial[0]": [("pending", "financial"), ("pending", "financial_review"), ("done", None)],
        "market[1]": [("pending", "market"), ("done", None)],
        "product[2]": [("pending", "product"), ("done", None)],
    }
    for branch, expected in steps.items():
        observed = [s[branch] for s in fanout if branch in s]
        assert expected[: len(set(observed))] == list(dict.fromkeys(observed))
    # Every branch node's finish is saved, but the last (its update goes to the merge).
    assert 1 + 4 - 1 == len(fanout)
    merged = next(s for s in seen if s.next == "synthesizer" and not s.branches)
    # Merged in the order the branches are declared, whatever order they finished in.
    assert ["researcher", "financial", "financial_review", "market", "product"] == merged.state.log
    assert all(s.next == "synthesizer" for s in seen if s.branches)


async def test_a_multi_node_branch_and_a_nested_fan_out(store: CheckpointStore) -> None:
    """A branch may fan out again; the inner join runs inside it, the outer join once."""
    graph = StateGraph(Work)
    for name in ("root", "left", "inner_a", "inner_b", "inner_join", "right"):
        graph.add_node(name, logger(name))
    graph.add_node("join", summarise)
    graph.add_edge(START, "root")
    graph.add_edge("root", ["left", "right"])
    graph.add_edge("left", ["inner_a", "inner_b"])
    graph.add_edge(["inner_a", "inner_b"], "inner_join")
    graph.add_edge(["inner_join", "right"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=store)
    result = await app.run({}, thread_id="t")
    expected = ["root", "left", "inner_a", "inner_b", "inner_join", "right"]
    assert expected == result.state.log
    assert 1 == result.path.count("join")


async def test_branch_nodes_retry(store: CheckpointStore) -> None:
    """A branch node's RetryPolicy applies inside the branch."""
    attempts: list[int] = []

    async def flaky(state: Work) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")
        return {"log": ["market"]}

    graph = specialists(store)
    graph.nodes.pop("market")
    graph.add_node("market", flaky, retry=RetryPolicy(max_attempts=3, backoff=0))
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert 3 == len(attempts)
    assert "market" in result.state.log


# -- failure -----------------------------------------------------------------------


async def test_failed_branch_cancels_siblings_and_recovery_reruns_only_it(
    store: CheckpointStore,
) -> None:
    """A failing branch cancels running siblings (finally runs), keeps finished ones,
    raises NodeFailed; run(None) re-runs only the branches that had not finished."""
    calls: list[str] = []
    cleaned: list[str] = []
    broken = True
    product_started = asyncio.Event()

    async def slow_market(state: Work) -> dict[str, Any]:
        calls.append("market")
        try:
            await asyncio.sleep(0 if not broken else 5)
        finally:
            cleaned.append("market")
        return {"log": ["market"]}

    async def product(state: Work) -> dict[str, Any]:
        calls.append("product")
        product_started.set()
        return {"log": ["product"]}

    async def review(state: Work) -> dict[str, Any]:
        calls.append("financial_review")
        await product_started.wait()
        await asyncio.sleep(0.01)
        if broken:
            raise ValueError("no figures")
        return {"log": ["financial_review"]}

    graph = specialists(store, calls, market=slow_market, product=product, financial_review=review)
    app = graph.compile(store=store)
    with pytest.raises(NodeFailed) as info:
        await app.run({}, thread_id="t")
    assert "financial_review" == info.value.node
    assert ["market"] == cleaned
    snapshot = await app.get_state("t")
    assert snapshot is not None and snapshot.error is not None
    assert "failed" == snapshot.status
    assert "financial[0]" == snapshot.error.branch
    statuses = {b.id: (b.status, b.node) for b in snapshot.branches}
    assert {
        "financial[0]": ("failed", "financial_review"),
        "market[1]": ("pending", "market"),
        "product[2]": ("done", None),
    } == statuses

    broken = False
    calls.clear()
    result = await app.run(None, thread_id="t")
    assert ["financial_review", "market"] == sorted(calls)
    assert ["researcher", "financial", "financial_review", "market", "product"] == result.state.log


async def test_failed_branch_goes_to_on_error_with_branch_named(store: CheckpointStore) -> None:
    """With on_error the run leaves the fan-out for the handler; ctx.error names the branch."""
    seen: list[Any] = []
    apps: list[Any] = []

    async def boom(state: Work, ctx: Any) -> dict[str, Any]:
        # Fail once the other branches are saved as done (not after a fixed time: on a
        # loaded machine their saves may take longer than any sleep).
        async with asyncio.timeout(30):
            while True:
                snapshot = await apps[0].get_state(ctx.thread_id)
                done = {b.id for b in snapshot.branches if b.status == "done"}
                if {"financial[0]", "product[2]"} <= done:
                    break
                await asyncio.sleep(0.005)
        raise RuntimeError("market data down")

    async def handler(state: Work, ctx: Any) -> dict[str, Any]:
        seen.append((ctx.error, list(state.log)))
        return {"summary": "recovered"}

    graph = specialists(store)
    graph.nodes.pop("market")
    graph.add_node("market", boom, on_error="handler")
    graph.add_node("handler", handler)
    graph.add_edge("handler", END)
    apps.append(graph.compile(store=store))
    result = await apps[0].run({}, thread_id="t")
    assert "recovered" == result.state.summary
    error, log = seen[0]
    assert ("market", "RuntimeError", "market data down", "market[1]") == (
        error.node,
        error.exc_type,
        error.message,
        error.branch,
    )
    assert ["researcher", "financial", "financial_review", "product"] == log


async def test_step_limit_counts_branch_nodes(store: CheckpointStore) -> None:
    """step_limit counts every node execution in every branch."""
    app = mapper(["a", "b", "c", "d"]).compile(store=store, step_limit=4)
    with pytest.raises(StepLimitExceeded):
        await app.run({}, thread_id="t")
    app = mapper(["a", "b", "c", "d"]).compile(store=store, step_limit=6)
    assert "completed" == (await app.run({}, thread_id="t2")).status


# -- suspension --------------------------------------------------------------------


class Asker:
    """A branch node that asks a question once and records each resume."""

    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self.calls = name, calls

    async def run(self, state: Work, ctx: Any) -> Any:
        self.calls.append(f"ask {self.name}")
        return Suspend({"question": f"{self.name}?"})

    async def resume(self, state: Work, value: Any, ctx: Any) -> dict[str, Any]:
        self.calls.append(f"resume {self.name}")
        return {"log": [f"{self.name}={value}"]}


async def test_two_suspended_branches_resume_in_any_order(store: CheckpointStore) -> None:
    """Each suspended branch has its own token; the join runs once, after the last;
    a used token is stale."""
    calls: list[str] = []
    graph = specialists(
        store, calls, market=Asker("market", calls), product=Asker("product", calls)
    )
    app = graph.compile(store=store)
    first = await app.run({}, thread_id="t")
    assert "suspended" == first.status
    assert ["market[1]", "product[2]"] == [s.branch for s in first.suspensions]
    assert first.suspension == first.suspensions[0]
    assert {"question": "product?"} == first.suspensions[1].payload
    market_token, product_token = (str(s.token) for s in first.suspensions)

    with pytest.raises(ThreadSuspended):
        await app.run({"summary": "new"}, thread_id="t")

    second = await app.resume(product_token, "P")
    assert "suspended" == second.status
    assert ["market[1]"] == [s.branch for s in second.suspensions]
    assert str(second.suspensions[0].token) == market_token
    assert "synthesizer" not in second.path

    with pytest.raises(StaleResumeToken):
        await app.resume(product_token, "again")

    third = await app.resume(market_token, "M")
    assert "completed" == third.status
    assert ["synthesizer"] == [n for n in third.path if n == "synthesizer"]
    expected = ["researcher", "financial", "financial_review", "market=M", "product=P"]
    assert expected == third.state.log
    assert 1 == calls.count("resume product") == calls.count("resume market")
    assert 1 == calls.count("ask product") == calls.count("ask market")
    with pytest.raises(StaleResumeToken):
        await app.resume(market_token, "again")


async def test_get_state_shows_suspended_branches(store: CheckpointStore) -> None:
    """get_state lists the fan-out's branches and each branch's suspension with a token."""
    calls: list[str] = []
    app = specialists(store, calls, market=Asker("market", calls)).compile(store=store)
    result = await app.run({}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert "suspended" == snapshot.status
    assert [("financial[0]", "done"), ("market[1]", "suspended"), ("product[2]", "done")] == [
        (b.id, b.status) for b in snapshot.branches
    ]
    assert [str(s.token) for s in result.suspensions] == [
        str(s.token) for s in snapshot.suspensions
    ]


# -- limits, streaming, cancellation -----------------------------------------------


async def test_max_concurrency_is_never_exceeded_and_keeps_order(store: CheckpointStore) -> None:
    """At most max_concurrency branch nodes run at once; waiting ones start in order."""
    running = 0
    peak = 0
    order: list[int] = []

    async def node(state: Work, ctx: Any) -> dict[str, Any]:
        nonlocal running, peak
        order.append(ctx.item)
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.002)
        running -= 1
        return {"log": [str(ctx.item)]}

    app = mapper(list(range(9)), node).compile(store=store, max_concurrency=2)
    result = await app.run({}, thread_id="t")
    assert 2 == peak
    assert list(range(9)) == order
    assert ["plan"] + [str(i) for i in range(9)] == result.state.log


def test_max_concurrency_must_be_positive() -> None:
    """max_concurrency below 1 is refused with the value named."""
    with pytest.raises(
        GraphValidationError, match="max_concurrency must be None or an int >= 1, got 0"
    ):
        mapper(["a"]).compile(max_concurrency=0)


async def test_stream_events_carry_branch_ids_and_interleave(store: CheckpointStore) -> None:
    """Branch events carry their branch id and interleave live."""

    async def emitting(state: Work, ctx: Any) -> dict[str, Any]:
        ctx.emit("progress", ctx.item)
        await asyncio.sleep(0.005)
        return {"log": [str(ctx.item)]}

    app = mapper([1, 2, 3], emitting).compile(store=store)
    events = []
    async with app.stream({}, thread_id="t") as stream:
        async for event in stream:
            events.append(event)
    kinds = [
        (type(e).__name__, e.branch)
        for e in events
        if isinstance(e, NodeStarted | NodeFinished | Emitted) and e.branch
    ]
    ids = ["analyse[0]", "analyse[1]", "analyse[2]"]
    assert ids == [branch for kind, branch in kinds if kind == "NodeStarted"]
    assert ids == sorted(branch for kind, branch in kinds if kind == "Emitted")
    first_finish = next(i for i, k in enumerate(kinds) if k[0] == "NodeFinished")
    assert 3 == sum(1 for k in kinds[:first_finish] if k[0] == "NodeStarted")
    assert [1, 2, 3] == sorted(e.data for e in events if isinstance(e, Emitted))


async def test_cancelling_the_run_cancels_branches_and_frees_the_thread(
    store: CheckpointStore,
) -> None:
    """Cancelling a run mid fan-out runs the branches' finally blocks and frees the thread."""
    cleaned: list[int] = []
    both = asyncio.Event()
    started: list[int] = []

    async def hang(state: Work, ctx: Any) -> dict[str, Any]:
        started.append(ctx.item)
        if len(started) == 2:
            both.set()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append(ctx.item)
        return {}

    app = mapper([1, 2], hang).compile(store=store)
    task = asyncio.ensure_future(app.run({}, thread_id="t"))
    await asyncio.wait_for(both.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [1, 2] == sorted(cleaned)
    app2 = mapper([1, 2]).compile(store=store)
    result = await asyncio.wait_for(app2.run(None, thread_id="t"), 2)
    assert ["plan", "analyse:1", "analyse:2"] == result.state.log


# -- building ----------------------------------------------------------------------


def _problems(graph: StateGraph[Work]) -> list[str]:
    with pytest.raises(GraphValidationError) as info:
        graph.compile()
    return info.value.problems


def test_list_edge_to_unknown_node_is_named() -> None:
    """A fan-out naming an unknown node is a compile error naming it."""
    graph = StateGraph(Work)
    graph.add_node("a", logger("a"))
    graph.add_node("b", logger("b"))
    graph.add_edge(START, "a")
    graph.add_edge("a", ["b", "ghost"])
    graph.add_edge("b", END)
    assert "edge from `a` to unknown node `ghost`" in _problems(graph)


def test_join_listing_a_node_no_fan_out_starts() -> None:
    """A join listing a node that no fan-out reaches is reported."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c", "j"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge(["c"], "j")
    graph.add_edge("j", END)
    expected = "join `j` lists `c`, which no fan-out can start (no list edge or router leads to it)"
    assert [expected] == _problems(graph)


def test_branch_that_never_reaches_its_join() -> None:
    """A branch that can only go to END while its siblings meet at a join is reported."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c", "j"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a")
    graph.add_edge("a", ["b", "c"])
    graph.add_edge(["b"], "j")
    graph.add_edge("c", END)
    graph.add_edge("j", END)
    assert ["branch `c` of the fan-out from `a` can never reach its join `j`"] == _problems(graph)


def test_router_join_must_be_a_node() -> None:
    """A router whose join= is not a declared node is reported."""
    graph = StateGraph(Work)
    graph.add_node("plan", logger("plan"))
    graph.add_node("analyse", logger("analyse"))
    graph.add_edge(START, "plan")
    graph.add_router("plan", lambda s: [], ["analyse"], join="nowhere")
    graph.add_edge("analyse", END)
    assert "router of `plan` has join=`nowhere`, which is not a declared node" in _problems(graph)


def test_list_to_list_edge_and_duplicate_branch() -> None:
    """A list-to-list edge and a fan-out naming one node twice are reported."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a")
    graph.add_edge("a", ["b", "b"])
    graph.add_edge(["b"], ["c"])
    graph.add_edge("c", END)
    problems = _problems(graph)
    assert "fan-out from `a` lists `b` twice" in problems
    assert any(p.startswith("edge from a list to a list") for p in problems)


def test_mermaid_shows_fan_outs_and_joins() -> None:
    """to_mermaid draws fan-out and join arrows."""
    text = specialists(MemoryCheckpointStore()).compile().to_mermaid()
    assert 'researcher ==>|"parallel"| market' in text
    assert 'product ==>|"join"| synthesizer' in text
    assert "financial --> financial_review" in text
    send_text = mapper(["x"]).compile().to_mermaid()
    assert 'plan -.->|"join"| synth' in send_text


async def test_file_store_reads_branch_records_back_in_a_fresh_store(tmp_path: Any) -> None:
    """A new store over the same folder rebuilds the fan-out from its log lines:
    history, suspensions and resumes work as before the restart."""
    from research_fsm.stores import JsonFileCheckpointStore

    calls: list[str] = []
    first_store = JsonFileCheckpointStore(tmp_path / "s")
    app = specialists(
        first_store, calls, market=Asker("market", calls), product=Asker("product", calls)
    ).compile(store=first_store)
    result = await app.run({}, thread_id="t")
    before = [(s.status, s.branches, s.next) async for s in app.history("t")]

    second_store = JsonFileCheckpointStore(tmp_path / "s")
    app2 = specialists(
        second_store, calls, market=Asker("market", calls), product=Asker("product", calls)
    ).compile(store=second_store)
    assert before == [(s.status, s.branches, s.next) async for s in app2.history("t")]
    snapshot = await app2.get_state("t")
    assert snapshot is not None
    assert [str(s.token) for s in result.suspensions] == [
        str(s.token) for s in snapshot.suspensions
    ]
    await app2.resume(result.suspensions[1].token, "P")
    third = JsonFileCheckpointStore(tmp_path / "s")
    app3 = specialists(
        third, calls, market=Asker("market", calls), product=Asker("product", calls)
    ).compile(store=third)
    done = await app3.resume(str(result.suspensions[0].token), "M")
    assert [
        "researcher",
        "financial",
        "financial_review",
        "market=M",
        "product=P",
    ] == done.state.log
    assert () == (await app3.get_state("t")).branches  # type: ignore[union-attr]


async def test_suspension_inside_a_nested_fan_out(store: CheckpointStore) -> None:
    """A branch of a branch suspends; snapshots list owners before their branches; its
    token resumes it and both joins run once."""
    calls: list[str] = []
    graph = StateGraph(Work)
    for name in ("root", "left", "inner_b", "inner_join", "right"):
        graph.add_node(name, logger(name, calls))
    graph.add_node("inner_a", Asker("inner_a", calls))
    graph.add_node("join", summarise)
    graph.add_edge(START, "root")
    graph.add_edge("root", ["left", "right"])
    graph.add_edge("left", ["inner_a", "inner_b"])
    graph.add_edge(["inner_a", "inner_b"], "inner_join")
    graph.add_edge(["inner_join", "right"], "join")
    graph.add_edge("join", END)
    app = graph.compile(store=store)
    first = await app.run({}, thread_id="t")
    assert ["left[0]/inner_a[0]"] == [s.branch for s in first.suspensions]
    snapshot = await app.get_state("t")
    assert snapshot is not None
    expected = [
        ("left[0]", "forked"),
        ("left[0]/inner_a[0]", "suspended"),
        ("left[0]/inner_b[1]", "done"),
        ("right[1]", "done"),
    ]
    assert expected == [(b.id, b.status) for b in snapshot.branches]
    done = await app.resume(first.suspension.token, "yes")  # type: ignore[union-attr]
    assert ["root", "left", "inner_a=yes", "inner_b", "inner_join", "right"] == done.state.log
    assert ["inner_join", "join"] == [n for n in done.path if "join" in n]
    assert 1 == calls.count("inner_join")


async def test_a_loop_runs_the_fan_out_again(store: CheckpointStore) -> None:
    """A quality loop back to the fan-out's source runs the branches afresh each round."""
    graph = StateGraph(Work)
    for name in ("research", "fin", "mkt"):
        graph.add_node(name, logger(name))
    graph.add_node("synth", summarise)
    graph.add_edge(START, "research")
    graph.add_edge("research", ["fin", "mkt"])
    graph.add_edge(["fin", "mkt"], "synth")
    graph.add_router(
        "synth", lambda s: "again" if s.count < 6 else "done", {"again": "research", "done": END}
    )
    app = graph.compile(store=store)
    result = await app.run({}, thread_id="t")
    assert ["research", "fin", "mkt"] * 2 == result.state.log
    assert () == (await app.get_state("t")).branches  # type: ignore[union-attr]


async def test_router_list_meets_at_the_list_edge_join_without_join_argument(
    store: CheckpointStore,
) -> None:
    """A router without join= whose targets meet at a list edge uses that join."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c"):
        graph.add_node(name, logger(name))
    graph.add_node("j", summarise)
    graph.add_edge(START, "a")
    graph.add_router("a", lambda s: ["b", "c"], ["b", "c"])
    graph.add_edge(["b", "c"], "j")
    graph.add_edge("j", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert "a,b,c" == result.state.summary
    assert 1 == result.path.count("j")


async def test_a_branch_that_reaches_end_is_finished(store: CheckpointStore) -> None:
    """A branch routed to END is done; its updates still join the others'."""
    graph = StateGraph(Work)
    for name in ("a", "b", "c"):
        graph.add_node(name, logger(name))
    graph.add_node("j", summarise)
    graph.add_edge(START, "a")
    graph.add_edge("a", ["b", "c"])
    graph.add_router("b", lambda s: "stop", {"stop": END, "on": "j"})
    graph.add_edge(["c"], "j")
    graph.add_edge("j", END)
    result = await graph.compile(store=store).run({}, thread_id="t")
    assert "a,b,c" == result.state.summary


async def test_fan_out_from_start(store: CheckpointStore) -> None:
    """START may fan out; the first checkpoint already lists the branches."""
    graph = StateGraph(Work)
    for name in ("b", "c"):
        graph.add_node(name, logger(name))
    graph.add_node("j", summarise)
    graph.add_edge(START, ["b", "c"])
    graph.add_edge(["b", "c"], "j")
    graph.add_edge("j", END)
    app = graph.compile(store=store)
    result = await app.run({"log": ["in"]}, thread_id="t")
    assert "in,b,c" == result.state.summary
    oldest = [s async for s in app.history("t")][-1]
    assert ["b[0]", "c[1]"] == [b.id for b in oldest.branches]


async def test_a_sealed_branch_record_missing_its_keys_is_corrupt_not_a_raw_error(
    tmp_path: Any,
) -> None:
    """A branch record without the keys the engine reads (checksum recomputed, as an
    editor would) is a CorruptCheckpoint, not a KeyError on resume."""
    import hashlib
    import json

    from research_fsm.engine import CorruptCheckpoint
    from research_fsm.stores import JsonFileCheckpointStore

    calls: list[str] = []
    store = JsonFileCheckpointStore(tmp_path / "s")
    app = specialists(store, calls, market=Asker("market", calls)).compile(store=store)
    await app.run({}, thread_id="t")
    segment = next((tmp_path / "s").glob("t=*.jsonl"))
    lines = segment.read_bytes().rstrip(b"\0").splitlines(keepends=True)
    data = json.loads(lines[-1][: lines[-1].rindex(b"\t")])
    key = "bset" if "bset" in data else "branches"
    data[key] = {bid: {k: v for k, v in r.items() if k != "p"} for bid, r in data[key].items()}
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    sealed = body + b"\t" + hashlib.sha256(body).hexdigest()[:32].encode() + b"\n"
    segment.write_bytes(b"".join([*lines[:-1], sealed]))
    fresh = JsonFileCheckpointStore(tmp_path / "s")
    again = specialists(fresh, calls, market=Asker("market", calls)).compile(store=fresh)
    with pytest.raises(CorruptCheckpoint):
        await again.get_state("t")
