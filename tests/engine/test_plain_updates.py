"""Updates of plain fields (``str``, ``int``, ``float``, ``bool``, ``None`` and their
unions) whose values already have the field's exact type are taken as given; any
other value is validated as before."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from research_fsm.engine import InvalidUpdate
from research_fsm.engine._state import StateSchema, _exact_types


class Plain(BaseModel):
    name: str = ""
    note: str | None = None
    count: int = 0
    ratio: float = 0.0
    flag: bool = False
    short: Annotated[str, Field(max_length=3)] = ""
    kind: Literal["a", "b"] = "a"


@pytest.mark.parametrize(
    "annotation, exact",
    [
        (str, {str}),
        (str | None, {str, type(None)}),
        (int | float, {int, float}),
        (bool, {bool}),
        (Annotated[str, Field(max_length=3)], set()),
        (Literal["a"], set()),
        (list[str], set()),
        (str | list[str], set()),
        (Any, set()),
    ],
)
def test_exact_types_are_those_validation_gives_back(annotation: Any, exact: set[type]) -> None:
    """Only plain types (and unions of them) take values as given; constraints, literals and containers never."""
    assert _exact_types(annotation) == exact


def test_plain_values_are_taken_and_others_still_validated() -> None:
    """Exact-type values land as given and are tracked; a value of another type is converted or refused as before."""
    schema = StateSchema(Plain)
    track: dict[str, int | None] = {}
    state = schema.apply(Plain(), {"name": "x", "note": None, "count": 2, "flag": True}, "n", track)
    assert (state.name, state.note, state.count, state.flag) == ("x", None, 2, True)
    assert track == {"name": None, "note": None, "count": None, "flag": None}
    assert schema.apply(Plain(), {"ratio": 2}, "n").ratio == 2.0  # an int becomes a float
    assert type(schema.apply(Plain(), {"ratio": 2}, "n").ratio) is float
    for bad in ({"count": "many"}, {"note": 5}, {"short": "toolong"}, {"kind": "c"}):
        with pytest.raises(InvalidUpdate, match="does not fit"):
            schema.apply(Plain(), bad, "node `n`")
