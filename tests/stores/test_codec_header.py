"""The codec's header of a run's step, written out directly (``_step_header``): the
same text as the encoder's (``_header_json``) for every value a step's checkpoint holds,
and left to the encoder for any other checkpoint."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from research_fsm.engine import Checkpoint
from research_fsm.engine.store import SuspensionRecord
from research_fsm.stores._codec.logformat import _header_json, _step_header


class S(BaseModel):
    n: int = 0


def _step(**changes: object) -> Checkpoint:
    cp = Checkpoint(
        thread_id="alice-1.x",
        checkpoint_id="0000000a" + "f" * 16,
        parent_id="00000009" + "e" * 16,
        seq=10,
        run_id="r" * 32,
        step=4,
        status="running",
        next="node two",
        state=S(),
        created_at="2026-12-08T02:40:00.123+00:00",
        last_node='quote " back \\ slash é 日本 \ud800 \n tab\t',
    )
    return dataclasses.replace(cp, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"parent_id": None, "seq": 1, "step": 0, "last_node": None},
        {"next": None, "status": "completed"},
        {"parent_thread_id": "parent"},
        {"seq": 2**40, "next": "\x00\x1f\u2028"},
    ],
    ids=["step", "first", "completed", "child-thread", "odd-values"],
)
def test_step_header_is_the_encoders_text(changes: dict[str, object]) -> None:
    """A step's header written out directly is, character for character, the encoder's."""
    cp = _step(**changes)
    fast = _step_header(cp)
    assert fast is not None
    assert fast == _header_json(cp)


@pytest.mark.parametrize(
    "changes",
    [
        {"suspension": SuspensionRecord("ask", {"q": 1})},
        {"error": {"node": "a", "exc_type": "E", "message": "m"}},
        {"seq": True},
        {"next": 5},
    ],
    ids=["suspension", "error", "bool-seq", "int-next"],
)
def test_other_checkpoints_are_left_to_the_encoder(changes: dict[str, object]) -> None:
    """A checkpoint with a suspension, an error or values of other types gets no direct header."""
    assert _step_header(_step(**changes)) is None
