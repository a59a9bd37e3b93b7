"""Nested models in state load back equal from every store, or are refused at save.

Each case runs a graph whose input and one node's update hold the value, then
reads the thread back from where the store keeps it (a new file store over the
same folder; the same Postgres schema): a whole-state line or row and a
changes line or row both load back equal. Values JSON cannot bring back (a
union whose members it does not tell apart, a model in an untyped field) are
refused at save with `StateSerializationError` naming the path of the value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from engine.helpers import Counter, one_node
from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from research_fsm.engine import (
    CheckpointStore,
    StateSerializationError,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore
from research_fsm.stores._codec.jsonplan import JsonPlan, json_plan
from stores.helpers import in_process


class Renamed(BaseModel):
    """A field written under a serialization alias of its own."""

    total: int = Field(0, serialization_alias="Total")


class Camel(BaseModel):
    """An alias generator for serialisation only."""

    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel))
    item_count: int = 0


class Choices(BaseModel):
    """Read under either of two keys, written under a third."""

    code: str = Field("", validation_alias=AliasChoices("code", "c"), serialization_alias="CODE")


class Populated(BaseModel):
    """Populated by name, with an alias and a different serialization alias."""

    model_config = ConfigDict(populate_by_name=True)
    label: str = Field("", alias="lbl", serialization_alias="Label")


class NotByName(BaseModel):
    """An alias and a different serialization alias, not populated by name."""

    label: str = Field("", alias="lbl", serialization_alias="Label")


class ReadAlias(BaseModel):
    """A validation alias only (written under the field's name)."""

    value: int = Field(0, validation_alias="v")


class BothWays(BaseModel):
    """An alias generator for both directions (read back before this fix too)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    first_name: str = ""


class Outer(BaseModel):
    """Renamed models two levels down."""

    inner: Renamed = Renamed()
    camels: list[Camel] = []


class Nested(BaseModel):
    """A state holding every nested shape."""

    one: Renamed = Renamed()
    camel: Camel = Camel()
    many: list[Choices] = []
    by_key: dict[str, Populated] = {}
    maybe: Populated | None = None
    strict: NotByName = NotByName()
    either: Renamed | int = 0
    read: ReadAlias = ReadAlias()
    both: BothWays = BothWays()
    deep: Outer = Outer()
    in_dict: dict[str, list[Outer]] = {}
    log: Annotated[list[Renamed], append] = []
    top: int = Field(0, serialization_alias="Top")


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "serialization-alias": ({"one": Renamed(total=1)}, {"one": Renamed(total=2)}),
    "alias-generator": ({"camel": Camel(item_count=1)}, {"camel": Camel(item_count=2)}),
    "list-alias-choices": ({"many": [Choices(c="a")]}, {"many": [Choices(code="b")]}),
    "dict-populate-by-name": (
        {"by_key": {"k": Populated(lbl="a")}},
        {"by_key": {"k": Populated(label="b")}},
    ),
    "alias-not-by-name": ({"strict": NotByName(lbl="a")}, {"strict": NotByName(lbl="b")}),
    "optional": ({"maybe": Populated(lbl="a")}, {"maybe": None}),
    "optional-set": ({"maybe": None}, {"maybe": Populated(lbl="b")}),
    "union-with-int": ({"either": Renamed(total=1)}, {"either": 5}),
    "union-model-set": ({"either": 5}, {"either": Renamed(total=2)}),
    "validation-alias": ({"read": ReadAlias(v=1)}, {"read": ReadAlias(v=2)}),
    "alias-both-ways": ({"both": BothWays(firstName="a")}, {"both": BothWays(first_name="b")}),
    "two-levels": (
        {"deep": Outer(inner=Renamed(total=1), camels=[Camel(item_count=1)])},
        {"deep": Outer(inner=Renamed(total=2), camels=[Camel(item_count=2)] * 2)},
    ),
    "model-in-dict-value": (
        {"in_dict": {"a": [Outer(inner=Renamed(total=1))]}},
        {"in_dict": {"a": [], "b": [Outer(inner=Renamed(total=2))]}},
    ),
    "appended": ({"log": [Renamed(total=1)]}, {"log": [Renamed(total=2), Renamed(total=3)]}),
    "with-top-level-alias": ({"top": 1, "one": Renamed(total=1)}, {"top": 2}),
}


def reread(store: CheckpointStore) -> CheckpointStore:
    """A store reading the same checkpoints back from where they are kept (a file
    store remembers the newest it wrote; Postgres and memory read their own)."""
    if isinstance(store, JsonFileCheckpointStore):
        return JsonFileCheckpointStore(store.directory, durability=store.durability, fs=store.fs)
    return store


async def states_read_back(model: type[BaseModel], store: CheckpointStore) -> list[Any]:
    """Every checkpoint's state of thread `t` as a new reader loads it, newest first."""
    reader = one_node(model, {}, reread(store))
    return [snapshot.state async for snapshot in reader.history("t")]


@pytest.mark.parametrize(("first", "then"), list(CASES.values()), ids=list(CASES))
async def test_nested_models_load_back_equal(
    store: CheckpointStore, first: dict[str, Any], then: dict[str, Any]
) -> None:
    """A nested model (aliases of every kind, in lists, dicts, unions) loads back equal, whole and as changes."""
    app = one_node(Nested, then, store)
    result = await app.run(first, thread_id="t")
    assert "completed" == result.status
    expected = [result.state, Nested.model_validate({**Nested().model_dump(), **first})]
    assert expected == await states_read_back(Nested, store)


class Cat(BaseModel):
    """A member of a union JSON cannot tell apart from ``Dog``."""

    name: str = ""


class Dog(BaseModel):
    """Same fields as ``Cat``."""

    name: str = ""


class Tagged(BaseModel):
    """Union members told apart by a tag."""

    kind: Literal["tagged"] = "tagged"
    name: str = ""


class Other(BaseModel):
    """The other tagged member."""

    kind: Literal["other"] = "other"
    name: str = ""


class Zoo(BaseModel):
    """Fields a value of which JSON would bring back changed."""

    pet: Cat | Dog | None = None
    pets: dict[str, Cat | Dog] = {}
    visits: Annotated[list[Cat | Dog], append] = []
    tagged: Annotated[Tagged | Other, Field(discriminator="kind")] = Tagged()
    extra: dict[str, Any] = {}
    inner: Outer = Outer()


REFUSED: dict[str, tuple[dict[str, Any], str, str]] = {
    "union-member": ({"pet": Dog(name="rex")}, "pet", "Dog would load back as Cat"),
    "union-in-dict": ({"pets": {"rex": Dog(name="rex")}}, "pets.rex", "Dog would load back as Cat"),
    "union-appended": ({"visits": [Dog()]}, "visits[0]", "Dog would load back as Cat"),
    "model-in-any": (
        {"extra": {"k": [Renamed(total=1)]}},
        "extra.k[0]",
        "Renamed in an untyped field would load back as a dict: give the field the model's type",
    ),
}


@pytest.mark.parametrize(("update", "path", "reason"), list(REFUSED.values()), ids=list(REFUSED))
async def test_value_that_would_load_back_changed_is_refused_naming_its_path(
    store: CheckpointStore, update: dict[str, Any], path: str, reason: str
) -> None:
    """A union value JSON would load back as another member, or a model in Any, is refused at save naming its path (kept as is in memory)."""
    app = one_node(Zoo, update, store)
    if in_process(store):  # keeps the instances: nothing to refuse
        result = await app.run({}, thread_id="t")
        assert [result.state, Zoo()] == await states_read_back(Zoo, store)
        return
    with pytest.raises(StateSerializationError) as caught:
        await app.run({}, thread_id="t")
    message = f"cannot serialise state value at `{path}` produced by node `node`: {reason}"
    assert (path, message) == (caught.value.path, str(caught.value))
    assert [Zoo()] == await states_read_back(Zoo, store)  # the thread is still whole


async def test_members_told_apart_load_back_equal(store: CheckpointStore) -> None:
    """A union whose members a tag or the JSON itself tells apart loads back as saved."""
    update = {"pet": Cat(name="tom"), "tagged": Other(name="o"), "visits": [Cat(name="c")]}
    app = one_node(Zoo, update, store)
    result = await app.run({"tagged": Tagged(name="t")}, thread_id="t")
    assert [result.state, Zoo(tagged=Tagged(name="t"))] == await states_read_back(Zoo, store)


def test_plain_state_models_are_written_in_one_call() -> None:
    """A state without nested renames or ambiguous types needs no work per save beyond one dump."""
    assert JsonPlan(False, {}, ()) == json_plan(Counter)
    assert (True, {"top": "Top"}) == (json_plan(Nested).by_name, json_plan(Nested).keys)
    assert ["either"] == [checked.name for checked in json_plan(Nested).checked]
    assert ["pet", "pets", "visits"] == [checked.name for checked in json_plan(Zoo).checked]
