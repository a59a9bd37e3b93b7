"""The typed checkpoint records: what the engine builds from a branch is what the
records' own constructors build, and the stores' codec writes them under the short
keys every version wrote (and reads them back, refusing JSON that is no record)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from research_fsm.engine import Replace
from research_fsm.engine._branches import Branch, entry, record
from research_fsm.engine.store import (
    NO_ITEM,
    BranchRecord,
    OriginRecord,
    SuspensionRecord,
    UpdateEntry,
)
from research_fsm.stores._codec.records import (
    Damaged,
    branch_json,
    branch_of,
    origin_json,
    origin_of,
    suspension_json,
    suspension_of,
)


class Empty(BaseModel):
    pass


def _branch(**over: object) -> Branch:
    fields: dict[str, object] = {
        "id": "a[1]",
        "parent": "",
        "index": 1,
        "node": "a",
        "join": "j",
        "state": Empty(),
        "item": {"x": 1},
        "key": "k1",
        "at": "s1",
        "payload": "why?",
        "child": "c1",
        "breakpoint": ("before", "a"),
        "error": {"node": "a", "exc_type": "E", "message": "m"},
    }
    fields.update(over)
    return Branch(**fields)  # type: ignore[arg-type]


def test_record_of_a_suspended_branch_is_its_constructors() -> None:
    """A suspended branch's record equals ``BranchRecord(...)`` by field name: what it
    was asked, no error."""
    branch = _branch(status="suspended", updates=[entry("a", {"n": 1})])
    assert record(branch) == BranchRecord(
        position=1,
        owner="",
        node="a",
        status="suspended",
        join="j",
        updates=(UpdateEntry("a", {"n": 1}),),
        item={"x": 1},
        key="k1",
        at="s1",
        payload="why?",
        child="c1",
        breakpoint=("before", "a"),
    )
    assert type(record(branch)) is BranchRecord


def test_record_of_a_failed_branch_keeps_its_error_only() -> None:
    """A branch not suspended keeps its error and nothing it was asked once."""
    saved = record(_branch(status="failed", item=NO_ITEM, key=None))
    assert (saved.error, saved.at, saved.payload, saved.child, saved.breakpoint) == (
        {"node": "a", "exc_type": "E", "message": "m"},
        None,
        None,
        None,
        None,
    )
    assert saved.item is NO_ITEM


def test_entry_unwraps_replace_and_copies_the_update() -> None:
    """An update entry names the fields set with ``Replace`` and holds their values; it
    holds a copy, so the node's dict changed later changes no record."""
    update: dict[str, object] = {"n": 1}
    plain = entry("a", update)
    update["n"] = 2
    assert (UpdateEntry("a", {"n": 1}), UpdateEntry) == (plain, type(plain))
    assert UpdateEntry("a", {"n": 3, "m": 4}, ("n",)) == entry("a", {"n": Replace(3), "m": 4})


def test_the_codec_writes_the_short_keys_and_reads_them_back() -> None:
    """Each record's JSON has the keys 0.1.0 wrote, and reads back equal."""
    branch = record(_branch(status="suspended", updates=[entry("a", {"n": Replace(1)})]))
    assert {
        "i": 1,
        "p": "",
        "node": "a",
        "status": "suspended",
        "join": "j",
        "updates": [{"n": "a", "u": {"n": 1}, "r": ["n"]}],
        "item": {"x": 1},
        "k": "k1",
        "at": "s1",
        "payload": "why?",
        "child": "c1",
        "breakpoint": ["before", "a"],
    } == branch_json(branch)
    assert branch == branch_of(branch_json(branch))
    suspension = SuspensionRecord("b", [1], child="c", trace="00-x-y-01")
    assert {"node": "b", "payload": [1], "child": "c", "trace": "00-x-y-01"} == suspension_json(
        suspension
    )
    assert suspension == suspension_of(suspension_json(suspension))
    origin = OriginRecord("fork", thread_id="t", checkpoint_id="c")
    assert {"by": "fork", "thread_id": "t", "checkpoint_id": "c"} == origin_json(origin)
    assert origin == origin_of(origin_json(origin))


def test_the_answers_to_interrupt_are_kept_while_suspended_and_read_back() -> None:
    """A node's earlier interrupt() answers: a suspended branch's record and a
    suspension write them as a list under "answers" and read them back; a branch no
    longer suspended keeps none, and records without answers write no key."""
    branch = record(_branch(status="suspended", answers=("forty", {"n": -3})))
    assert branch.answers == ("forty", {"n": -3})
    assert branch_json(branch)["answers"] == ["forty", {"n": -3}]
    assert branch == branch_of(branch_json(branch))
    assert record(_branch(status="done", answers=("x",))).answers == ()
    assert "answers" not in branch_json(record(_branch(status="suspended")))
    suspension = SuspensionRecord("b", "again?", answers=(1, [2]))
    assert suspension_json(suspension)["answers"] == [1, [2]]
    assert suspension == suspension_of(suspension_json(suspension))
    assert "answers" not in suspension_json(SuspensionRecord("b", "q?"))


@pytest.mark.parametrize(
    "bad",
    [
        {"i": "0", "p": "", "node": None, "status": "done", "join": "j", "updates": []},
        {
            "i": 0,
            "p": "",
            "node": "a",
            "status": "suspended",
            "join": "j",
            "updates": [],
            "answers": "forty",
        },
        {"i": 0, "p": "", "node": None, "status": "gone", "join": "j", "updates": []},
        {"i": 0, "p": "", "node": None, "status": "done", "join": "j", "updates": [{"u": {}}]},
        {"i": 0, "p": "", "node": 3, "status": "done", "join": "j", "updates": []},
        {
            "i": 0,
            "p": "",
            "node": "a",
            "status": "suspended",
            "join": "j",
            "updates": [],
            "breakpoint": ["inside", "a"],
        },
        {"i": 0, "p": "", "node": "a", "status": "pending", "join": "j", "updates": [], "k": 7},
        ["i", 0],
    ],
)
def test_the_codec_refuses_json_that_is_no_branch_record(bad: object) -> None:
    """A branch record with a field missing or of the wrong kind is damage."""
    with pytest.raises(Damaged):
        branch_of(bad)


@pytest.mark.parametrize(
    ("read", "bad"),
    [
        (suspension_of, {"payload": 1}),
        (suspension_of, {"node": "a", "breakpoint": ["before"]}),
        (suspension_of, {"node": "a", "answers": {"0": "forty"}}),
        (origin_of, {"by": "magic"}),
        (origin_of, {"by": "update", "as_node": 3}),
    ],
)
def test_the_codec_refuses_a_bad_suspension_or_origin(read: object, bad: object) -> None:
    """A suspension without a node or with an unknown breakpoint, or an origin of an
    unknown kind, is damage."""
    with pytest.raises(Damaged):
        read(bad)  # type: ignore[operator]
