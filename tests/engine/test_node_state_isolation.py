"""A node's state is its own: changes it makes in place reach nothing else, on every store.

The caller's result, ``get_state()`` in this process and a fresh store object
reading the same thread must agree, for top-level and nested changes, in single
and parallel branches.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel
from stores.helpers import close_store, reopen

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    NodeContext,
    RetryPolicy,
    StateGraph,
    Suspend,
    append,
)


class Inner(BaseModel):
    """A nested model a node may change in place."""

    a: int = 0
    tags: list[str] = []


class Doc(BaseModel):
    """State with an append list, a plain list, a dict and a nested model."""

    items: Annotated[list[str], append] = []
    notes: list[str] = []
    meta: dict[str, Any] = {}
    inner: Inner = Inner()


def build(nodes: dict[str, Any], store: CheckpointStore, *, parallel: bool = False) -> Any:
    """START -> each node in order -> END (or all of them as one fan-out)."""
    graph = StateGraph(Doc)
    for name, node in nodes.items():
        graph.add_node(name, node)
    if parallel:
        graph.add_edge(START, list(nodes))
        graph.add_edge(list(nodes), END)
    else:
        previous = START
        for name in nodes:
            graph.add_edge(previous, name)
            previous = name
        graph.add_edge(previous, END)
    return graph.compile(store=store)


async def views(
    nodes: dict[str, Any], store: CheckpointStore, input: dict[str, Any], parallel: bool = False
) -> list[Doc]:
    """Run the graph once and return the three views of the final state."""
    result = await build(nodes, store, parallel=parallel).run(input, thread_id="t")
    snapshot = await build(nodes, store, parallel=parallel).get_state("t")
    other = reopen(store)
    try:
        fresh = await build(nodes, other, parallel=parallel).get_state("t")
    finally:
        if other is not store:
            await close_store(other)
    assert snapshot is not None and fresh is not None
    return [result.state, snapshot.state, fresh.state]


async def test_append_in_place_and_returned_is_added_once(store: CheckpointStore) -> None:
    """A node that appends in place and also returns the item adds it once, everywhere."""

    async def add(state: Doc) -> dict[str, Any]:
        state.items.append("x")
        return {"items": ["x"]}

    expected = ["a", "x"]
    assert [expected] * 3 == [v.items for v in await views({"add": add}, store, {"items": ["a"]})]


async def test_in_place_changes_without_returning_them_change_nothing(
    store: CheckpointStore,
) -> None:
    """Changes a node makes in place and does not return are its own: lists, dicts, nested."""

    async def scribble(state: Doc) -> dict[str, Any]:
        state.notes.append("lost")
        state.meta["k"] = "lost"
        state.inner.a = 99
        state.inner.tags.append("lost")
        return {"items": ["kept"]}

    async def read(state: Doc) -> dict[str, Any]:
        return {"notes": [*state.notes, f"inner.a={state.inner.a}"]}

    got = await views({"scribble": scribble, "read": read}, store, {"notes": ["n"]})
    expected = Doc(items=["kept"], notes=["n", "inner.a=0"])
    assert [expected.model_dump()] * 3 == [v.model_dump() for v in got]


async def test_returning_the_changed_state_object_saves_nested_changes(
    store: CheckpointStore,
) -> None:
    """A node that changes its state in place and returns it: every view has the changes."""

    async def edit(state: Doc) -> Doc:
        state.inner.a = 5
        state.inner.tags.append("t")
        state.items.append("y")
        state.meta["k"] = 1
        return state

    got = await views({"edit": edit}, store, {"items": ["a"]})
    expected = Doc(items=["a", "y"], meta={"k": 1}, inner=Inner(a=5, tags=["t"]))
    assert [expected.model_dump()] * 3 == [v.model_dump() for v in got]


async def test_parallel_branches_each_get_their_own_state(store: CheckpointStore) -> None:
    """Branches changing the shared start state in place do not see or leak each other's changes."""
    seen: dict[str, list[str]] = {}

    def branch(name: str) -> Any:
        async def node(state: Doc) -> dict[str, Any]:
            seen[name] = list(state.items)
            state.items.append(f"in-place-{name}")
            state.inner.tags.append(name)
            return {"items": [name]}

        return node

    got = await views(
        {"b1": branch("b1"), "b2": branch("b2"), "b3": branch("b3")},
        store,
        {"items": ["a"]},
        parallel=True,
    )
    assert {"b1": ["a"], "b2": ["a"], "b3": ["a"]} == seen
    expected = Doc(items=["a", "b1", "b2", "b3"])
    assert [expected.model_dump()] * 3 == [v.model_dump() for v in got]


async def test_a_retried_attempt_starts_from_an_unchanged_state(store: CheckpointStore) -> None:
    """Each attempt of a retried node gets a fresh copy: a failed attempt's changes are gone."""
    attempts: list[list[str]] = []

    async def flaky(state: Doc) -> dict[str, Any]:
        attempts.append(list(state.notes))
        state.notes.append("half-done")
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return {"items": ["done"]}

    graph = StateGraph(Doc)
    graph.add_node("flaky", flaky, retry=RetryPolicy(max_attempts=3, backoff=0))
    graph.add_edge(START, "flaky")
    graph.add_edge("flaky", END)
    result = await graph.compile(store=store).run({"notes": ["n"]}, thread_id="t")
    assert [["n"], ["n"], ["n"]] == attempts
    assert (["n"], ["done"]) == (result.state.notes, result.state.items)


async def test_a_suspended_node_and_its_resume_get_copies(store: CheckpointStore) -> None:
    """In-place changes before a suspension and in ``resume`` stay the node's own."""

    class Ask:
        async def run(self, state: Doc, ctx: NodeContext) -> Suspend:
            state.items.append("before")
            return Suspend({"q": "?"})

        async def resume(self, state: Doc, value: Any, ctx: NodeContext) -> dict[str, Any]:
            state.notes.append("in-place")
            return {"items": [value]}

    graph = StateGraph(Doc)
    graph.add_node("ask", Ask())
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    app = graph.compile(store=store)
    suspended = await app.run({"items": ["a"]}, thread_id="t")
    assert ["a"] == suspended.state.items
    done = await app.resume(suspended.suspension.token, "answer")
    assert (["a", "answer"], []) == (done.state.items, done.state.notes)


async def test_the_callers_input_object_stays_the_callers(store: CheckpointStore) -> None:
    """Changing the model passed as input after the run changes no saved state."""
    given = Doc(items=["a"])
    app = build({"noop": _noop}, store)
    await app.run(given, thread_id="t")
    given.items.append("later")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    assert ["a"] == snapshot.state.items


async def _noop(state: Doc) -> None:
    return None


class Tree(BaseModel):
    """A recursive model."""

    label: str = ""
    children: list[Tree] = []


class Frozen(BaseModel, frozen=True):
    """A frozen model of immutable values: shared, not copied."""

    name: str = "f"


class Wide(BaseModel):
    """Fields of many kinds, typed and untyped."""

    tree: Tree = Tree()
    pairs: tuple[list[int], ...] = ()
    frozen: Frozen = Frozen()
    tags: set[str] = set()
    loose: Any = None
    table: dict[str, list[int]] = {}


def test_a_copy_shares_nothing_mutable_and_everything_immutable() -> None:
    """``fresh`` gives new lists, dicts, sets and models at every depth; immutable values are shared."""
    from research_fsm.engine._state import StateSchema

    state = Wide(
        tree=Tree(label="root", children=[Tree(label="leaf")]),
        pairs=([1], [2]),
        tags={"a"},
        loose={"models": [Tree(label="x")], "n": [1, [2]]},
        table={"k": [1]},
    )
    copy = StateSchema(Wide).fresh(state)
    copy.tree.children[0].children.append(Tree(label="new"))
    copy.pairs[0].append(9)
    copy.tags.add("b")
    copy.loose["models"][0].label = "changed"
    copy.loose["n"][1].append(3)
    copy.table["k"].append(2)
    assert state == Wide(
        tree=Tree(label="root", children=[Tree(label="leaf")]),
        pairs=([1], [2]),
        tags={"a"},
        loose={"models": [Tree(label="x")], "n": [1, [2]]},
        table={"k": [1]},
    )
    assert (copy.frozen is state.frozen, copy.tree.label is state.tree.label) == (True, True)


async def test_suspending_with_the_changed_state_object_saves_its_changes(
    store: CheckpointStore,
) -> None:
    """``Suspend(payload, update=state)`` after changing the state in place applies those changes once."""

    class Ask:
        async def run(self, state: Doc, ctx: NodeContext) -> Suspend:
            state.items.append("asked")
            state.inner.a = 7
            return Suspend({"q": "?"}, update=state)

        async def resume(self, state: Doc, value: Any, ctx: NodeContext) -> None:
            return None

    graph = StateGraph(Doc)
    graph.add_node("ask", Ask())
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    app = graph.compile(store=store)
    suspended = await app.run({"items": ["a"]}, thread_id="t")
    snapshot = await app.get_state("t")
    assert snapshot is not None
    expected = (["a", "asked"], 7)
    assert [expected, expected] == [(s.items, s.inner.a) for s in (suspended.state, snapshot.state)]
